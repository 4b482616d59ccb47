#!/usr/bin/env node
// Interop flow producer: adds a parent/children tree with stock BullMQ's
// FlowProducer and reports the parent's terminal outcome, so a Rust test can
// prove Airlock handles BullMQ flows (waiting-children, dependencies,
// children's values) the way Node BullMQ lays them out.
//
//   node flow-producer.js --redis redis://127.0.0.1:PORT --prefix bull \
//     --flow '{"name":"batch","queueName":"payments","data":{},"children":[...]}' \
//     [--timeout-ms 60000]
//
// stdout, JSON lines only:
//   {"parent":{"id":"..","queueName":".."},"children":[{"id":"..","queueName":".."}, ...]}
//   {"jobId":"..","event":"completed","returnvalue":...}   (or "failed" + "failedReason")
// A child that has children of its own carries them in its own "children".
// Diagnostics go to stderr. Exit 0 once the parent finished, 2 on timeout,
// 1 on any other error.
'use strict';

const { parseArgs, parseMaybeJson, closeAll, run } = require('./cli');
const { FlowProducer, QueueEvents } = require('bullmq');

// JobNode tree -> {id, queueName, children?} summary for the first line.
function describe(node) {
  const out = { id: node.job.id, queueName: node.job.queueName };
  if (node.children && node.children.length > 0) out.children = node.children.map(describe);
  return out;
}

// Close every connection, but never let a stuck close keep the process alive.
async function main() {
  const args = parseArgs(process.argv.slice(2), ['redis', 'flow']);
  const prefix = args.prefix || 'bull';
  const timeoutMs = Number(args['timeout-ms'] || 60000);
  const flow = JSON.parse(args.flow);
  if (!flow || !flow.name || !flow.queueName) throw new Error('--flow needs at least name and queueName');

  const connection = { url: args.redis };
  // Every job of the tree is stored under the same prefix; FlowProducer
  // takes it per job (opts.prefix) or, as here, for the whole producer.
  const flowProducer = new FlowProducer({ connection, prefix });
  // The parent's queue is known before adding, so QueueEvents listens first.
  const queueEvents = new QueueEvents(flow.queueName, { connection, prefix });
  flowProducer.on('error', (err) => console.error('flow-producer error:', err.message));
  queueEvents.on('error', (err) => console.error('queue-events error:', err.message));

  let parentId = null;
  let outcome = null; // buffered if the event beats FlowProducer.add's reply
  let finished = false;
  let resolveDone;
  const done = new Promise((resolve) => (resolveDone = resolve));
  const finish = (code) => {
    if (finished) return;
    finished = true;
    resolveDone(code);
  };
  const report = (line) => {
    if (finished) return;
    process.stdout.write(JSON.stringify(line) + '\n');
    finish(0);
  };

  // With a custom parent jobId an outcome could in principle arrive before we
  // know the id; remember outcomes by id and match once the id is known.
  const seen = new Map();
  const onOutcome = (line) => {
    seen.set(line.jobId, line);
    if (parentId !== null && line.jobId === parentId) report(line);
  };
  queueEvents.on('completed', ({ jobId, returnvalue }) =>
    onOutcome({ jobId, event: 'completed', returnvalue: parseMaybeJson(returnvalue) }),
  );
  queueEvents.on('failed', ({ jobId, failedReason }) => onOutcome({ jobId, event: 'failed', failedReason }));

  const timer = setTimeout(() => {
    console.error(`timeout after ${timeoutMs} ms waiting for parent ${parentId === null ? '(not added yet: is Redis reachable?)' : parentId}`);
    finish(2);
  }, timeoutMs);

  const work = (async () => {
    await queueEvents.waitUntilReady();
    const tree = await flowProducer.add(flow);
    parentId = tree.job.id;
    const summary = describe(tree);
    process.stdout.write(JSON.stringify({ parent: { id: summary.id, queueName: summary.queueName }, children: summary.children || [] }) + '\n');
    if (seen.has(parentId)) {
      report(seen.get(parentId));
      return;
    }
    // Like producer.js: waitUntilFinished checks the stored state once it is
    // listening, covering an outcome that landed before the first XREAD.
    tree.job.waitUntilFinished(queueEvents).then(
      (returnvalue) => report({ jobId: parentId, event: 'completed', returnvalue: parseMaybeJson(returnvalue) }),
      (err) => report({ jobId: parentId, event: 'failed', failedReason: err.message }),
    );
  })();

  try {
    return await Promise.race([done, work.then(() => done)]);
  } finally {
    clearTimeout(timer);
    await closeAll([flowProducer, queueEvents]);
  }
}

run(main);

#!/usr/bin/env node
// Interop producer: adds jobs with stock Node BullMQ and reports each job's
// terminal outcome, so a Rust test can prove that Airlock (the worker side)
// speaks the same protocol as BullMQ's own clients.
//
//   node producer.js --redis redis://127.0.0.1:PORT --prefix bull --queue payments \
//     --jobs '[{"name":"payment","data":{...},"jobId":"p1"}]' \
//     [--timeout-ms 60000] [--attempts 5] [--backoff-ms 2000]
//
// stdout carries only JSON lines, one per job, in the order outcomes arrive:
//   {"jobId":"p1","name":"payment","event":"completed","returnvalue":{...}}
//   {"jobId":"p2","name":"payment","event":"failed","failedReason":"..."}
// Diagnostics go to stderr. Exit 0 when every job reached an outcome, 2 on
// timeout (pending ids on stderr), 1 on any other error.
'use strict';

const { parseArgs, parseMaybeJson, closeAll, run } = require('./cli');
const { Queue, QueueEvents } = require('bullmq');

async function main() {
  const args = parseArgs(process.argv.slice(2), ['redis', 'queue', 'jobs']);
  const prefix = args.prefix || 'bull';
  const timeoutMs = Number(args['timeout-ms'] || 60000);
  const attempts = Number(args.attempts || 5);
  const backoffMs = Number(args['backoff-ms'] || 2000);
  const jobs = JSON.parse(args.jobs);
  if (!Array.isArray(jobs)) throw new Error('--jobs must be a JSON array');

  // bullmq 6 accepts `url` in the connection options and builds its own
  // ioredis client per class. QueueEvents forces maxRetriesPerRequest: null
  // itself (it blocks on XREAD); the Queue keeps ioredis' default so a
  // dead Redis makes `add` fail instead of hanging.
  const connection = { url: args.redis };
  const queueEvents = new QueueEvents(args.queue, { connection, prefix });
  const queue = new Queue(args.queue, { connection, prefix });
  queueEvents.on('error', (err) => console.error('queue-events error:', err.message));
  queue.on('error', (err) => console.error('queue error:', err.message));

  let timer;
  const pending = new Map(); // jobId -> name, for jobs without an outcome yet
  const printed = new Set();

  const report = (line) => {
    if (finished || printed.has(line.jobId)) return; // events and waitUntilFinished may both report
    printed.add(line.jobId);
    pending.delete(line.jobId);
    process.stdout.write(JSON.stringify(line) + '\n');
    if (pending.size === 0 && allAdded) finish(0);
  };

  let allAdded = false;
  let finished = false;
  let resolveDone;
  const done = new Promise((resolve) => (resolveDone = resolve));
  function finish(code) {
    if (finished) return;
    finished = true;
    resolveDone(code);
  }

  // Listen before adding anything, so no outcome can be missed.
  queueEvents.on('completed', ({ jobId, returnvalue }) => {
    if (pending.has(jobId)) {
      report({ jobId, name: pending.get(jobId), event: 'completed', returnvalue: parseMaybeJson(returnvalue) });
    }
  });
  queueEvents.on('failed', ({ jobId, failedReason }) => {
    if (pending.has(jobId)) {
      report({ jobId, name: pending.get(jobId), event: 'failed', failedReason });
    }
  });

  // Everything that talks to Redis runs in `work`; the timeout resolves
  // `done` on its own, so a Redis that never answers still ends the script.
  timer = setTimeout(() => {
    const stage = allAdded ? '' : ' (not every job was added yet: is Redis reachable?)';
    console.error(`timeout after ${timeoutMs} ms${stage}; pending job ids: ${JSON.stringify([...pending.keys()])}`);
    finish(2);
  }, timeoutMs);

  const work = (async () => {
    await queueEvents.waitUntilReady();

    const added = [];
    for (const spec of jobs) {
      const opts = { attempts, backoff: { type: 'exponential', delay: backoffMs } };
      if (spec.jobId !== undefined) opts.jobId = String(spec.jobId);
      const job = await queue.add(spec.name, spec.data === undefined ? {} : spec.data, opts);
      pending.set(job.id, spec.name);
      added.push(job);
      console.error(`added ${spec.name} as job ${job.id}`);
    }
    allAdded = true;
    if (pending.size === 0) finish(0);

    // waitUntilFinished also checks the job's state once it is listening, which
    // covers an outcome that landed before QueueEvents' first XREAD. It rejects
    // with the failed reason (or when the queue closes, hence the guard).
    for (const job of added) {
      job.waitUntilFinished(queueEvents).then(
        (returnvalue) => report({ jobId: job.id, name: job.name, event: 'completed', returnvalue: parseMaybeJson(returnvalue) }),
        (err) => {
          if (!finished && pending.has(job.id)) {
            report({ jobId: job.id, name: job.name, event: 'failed', failedReason: err.message });
          }
        },
      );
    }
  })();

  try {
    return await Promise.race([done, work.then(() => done)]);
  } finally {
    clearTimeout(timer);
    await closeAll([queue, queueEvents]);
  }
}

run(main);

#!/usr/bin/env node
// Interop listener: reads a queue's events with stock Node BullMQ's
// `QueueEvents` from the start of its stream, so a Rust test can prove that
// jobs Airlock added (a handler's children, say) are ordinary BullMQ jobs
// to Node's listeners.
//
//   node listener.js --redis redis://127.0.0.1:PORT --prefix bull --queue kids \
//     --count 2 [--timeout-ms 30000]
//
// stdout carries only JSON lines, one per `completed` or `failed` event, in
// stream order, until `--count` of them were read:
//   {"jobId":"c-…","event":"completed","returnvalue":{...}}
//   {"jobId":"c-…","event":"failed","failedReason":"..."}
// Exit 0 after `--count` events, 2 on timeout, 1 on any other error.
'use strict';

const { parseArgs, parseMaybeJson, closeAll, run } = require('./cli');
const { QueueEvents } = require('bullmq');

async function main() {
  const args = parseArgs(process.argv.slice(2), ['redis', 'queue', 'count']);
  const prefix = args.prefix || 'bull';
  const timeoutMs = Number(args['timeout-ms'] || 30000);
  const count = Number(args.count);
  const connection = { url: args.redis };
  // `lastEventId: '0-0'`: every event the stream still holds, not only
  // those after the listener started.
  const queueEvents = new QueueEvents(args.queue, { connection, prefix, lastEventId: '0-0' });
  queueEvents.on('error', (err) => console.error('queue-events error:', err.message));

  let seen = 0;
  let resolveDone;
  const done = new Promise((resolve) => (resolveDone = resolve));
  const report = (line) => {
    if (seen >= count) return;
    seen += 1;
    process.stdout.write(JSON.stringify(line) + '\n');
    if (seen === count) resolveDone(0);
  };
  queueEvents.on('completed', ({ jobId, returnvalue }) =>
    report({ jobId, event: 'completed', returnvalue: parseMaybeJson(returnvalue) }),
  );
  queueEvents.on('failed', ({ jobId, failedReason }) => report({ jobId, event: 'failed', failedReason }));
  const timer = setTimeout(() => {
    console.error(`timeout after ${timeoutMs} ms with ${seen} of ${count} events`);
    resolveDone(2);
  }, timeoutMs);
  try {
    return await done;
  } finally {
    clearTimeout(timer);
    await closeAll([queueEvents]);
  }
}

run(main);

#!/usr/bin/env node
// Bulk pre-enqueue for benchmarks: fills a queue with N identical jobs using
// stock BullMQ, so Airlock and the Node peer (bench-worker.js) drain the very
// same job layout.
//
//   node enqueue.js --redis redis://127.0.0.1:PORT --prefix bull --queue Q --count N \
//     [--name noop] [--data '{}']
//
// stdout: one JSON line {"enqueued":N,"seconds":<float>}. Diagnostics go to
// stderr; exit 1 on error.
'use strict';

const { parseArgs, run } = require('./cli');
const { Queue } = require('bullmq');

// addBulk pipelines one Lua call per job; chunks keep each pipeline (and
// the client's memory for it) bounded.
const CHUNK = 1000;

async function main() {
  const args = parseArgs(process.argv.slice(2), ['redis', 'queue', 'count']);
  const count = Number(args.count);
  if (!Number.isInteger(count) || count < 0) throw new Error('--count must be a non-negative integer');
  const name = args.name || 'noop';
  const data = JSON.parse(args.data || '{}');

  const queue = new Queue(args.queue, { connection: { url: args.redis }, prefix: args.prefix || 'bull' });
  queue.on('error', (err) => console.error('queue error:', err.message));
  try {
    await queue.waitUntilReady();
    // Time only the adds, not the connection set-up.
    const start = process.hrtime.bigint();
    for (let done = 0; done < count; done += CHUNK) {
      const size = Math.min(CHUNK, count - done);
      await queue.addBulk(Array.from({ length: size }, () => ({ name, data })));
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    process.stdout.write(JSON.stringify({ enqueued: count, seconds }) + '\n');
  } finally {
    await queue.close();
  }
}

run(main);

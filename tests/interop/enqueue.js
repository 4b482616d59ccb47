#!/usr/bin/env node
// Bulk pre-enqueue for benchmarks: fills a queue with N identical jobs using
// stock BullMQ, so Airlock and the Node peer (bench-worker.js) drain the very
// same job layout.
//
//   node enqueue.js --redis redis://127.0.0.1:PORT --prefix bull --queue Q --count N \
//     [--name noop] [--data '{}'] [--vary customerId:1000]
//
// `--vary FIELD:K` sets `data[FIELD]` to `k0` … `k{K-1}`, job by job in turn
// (K keys, interleaved).
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
  let vary = null;
  if (args.vary) {
    const [field, keys] = args.vary.split(':');
    if (!field || !Number.isInteger(Number(keys)) || Number(keys) < 1) {
      throw new Error('--vary must be FIELD:K with K a positive integer');
    }
    vary = { field, keys: Number(keys) };
  }
  const dataOf = (i) => (vary ? { ...data, [vary.field]: `k${i % vary.keys}` } : data);

  const queue = new Queue(args.queue, { connection: { url: args.redis }, prefix: args.prefix || 'bull' });
  queue.on('error', (err) => console.error('queue error:', err.message));
  try {
    await queue.waitUntilReady();
    // Time only the adds, not the connection set-up.
    const start = process.hrtime.bigint();
    for (let done = 0; done < count; done += CHUNK) {
      const size = Math.min(CHUNK, count - done);
      await queue.addBulk(Array.from({ length: size }, (_, j) => ({ name, data: dataOf(done + j) })));
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    process.stdout.write(JSON.stringify({ enqueued: count, seconds }) + '\n');
  } finally {
    await queue.close();
  }
}

run(main);

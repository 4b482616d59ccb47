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

const { Queue } = require('bullmq');

// addBulk pipelines one Lua call per job; chunks keep each pipeline (and
// the client's memory for it) bounded.
const CHUNK = 1000;

// Minimal `--key value` parser: keeps the script free of extra dependencies.
function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i];
    if (!key.startsWith('--') || i + 1 >= argv.length) {
      throw new Error(`bad argument near ${JSON.stringify(key)}`);
    }
    args[key.slice(2)] = argv[i + 1];
  }
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  for (const required of ['redis', 'queue', 'count']) {
    if (!args[required]) throw new Error(`--${required} is required`);
  }
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

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err && err.stack ? err.stack : String(err));
    process.exit(1);
  },
);

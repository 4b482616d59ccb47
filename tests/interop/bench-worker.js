#!/usr/bin/env node
// Benchmark peer: a plain Node BullMQ worker whose processor does nothing,
// so its throughput is BullMQ's own protocol overhead. Airlock's benchmark
// drains the same pre-enqueued queue (see enqueue.js) and compares.
//
//   node bench-worker.js --redis redis://127.0.0.1:PORT --prefix bull --queue Q \
//     --count N --concurrency C [--timeout-ms 600000]
//
// stdout: one JSON line {"completed":N,"seconds":<float>,"jobsPerSecond":<float>},
// timed from the first job going active to the N-th completion. Diagnostics
// go to stderr; exit 2 on timeout, 1 on error.
'use strict';

const { Worker } = require('bullmq');

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
  if (!Number.isInteger(count) || count < 1) throw new Error('--count must be a positive integer');
  const concurrency = Number(args.concurrency || 1);
  const timeoutMs = Number(args['timeout-ms'] || 600000);

  let firstActive = null;
  let completed = 0;
  let resolveDone;
  const done = new Promise((resolve) => (resolveDone = resolve));

  const worker = new Worker(args.queue, async () => null, {
    // Workers block on BZPOPMIN; bullmq forces maxRetriesPerRequest: null on
    // them anyway, stating it keeps the stderr warning away.
    connection: { url: args.redis, maxRetriesPerRequest: null },
    prefix: args.prefix || 'bull',
    concurrency,
  });
  worker.on('error', (err) => console.error('worker error:', err.message));
  worker.on('failed', (job, err) => console.error(`job ${job && job.id} failed: ${err.message}`));
  worker.on('active', () => {
    if (firstActive === null) firstActive = process.hrtime.bigint();
  });
  worker.on('completed', () => {
    completed += 1;
    if (completed === count) resolveDone(process.hrtime.bigint());
  });

  const timer = setTimeout(() => {
    console.error(`timeout after ${timeoutMs} ms: ${completed}/${count} jobs completed`);
    resolveDone(null);
  }, timeoutMs);

  try {
    const end = await done;
    if (end === null) return 2;
    const seconds = Number(end - firstActive) / 1e9;
    process.stdout.write(JSON.stringify({ completed, seconds, jobsPerSecond: completed / seconds }) + '\n');
    return 0;
  } finally {
    clearTimeout(timer);
    // close() waits for in-flight jobs; with a no-op processor that is instant.
    await worker.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err && err.stack ? err.stack : String(err));
    process.exit(1);
  },
);

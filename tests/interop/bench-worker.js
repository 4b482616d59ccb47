#!/usr/bin/env node
// Benchmark peer: a plain Node BullMQ worker whose processor does nothing,
// so its throughput is BullMQ's own protocol overhead — or, with
// `--processor payment`, the users' payment processor
// (payment-processor.js), or with `--processor fetch` one HTTP GET of the
// job's `data.url` (what the http-probe guest does in the I/O benchmark), or
// with `--processor sandboxed-payment` the payment processor as a BullMQ
// sandboxed processor (sandboxed-payment.js, child processes). Airlock's benchmark drains the same pre-enqueued
// queue (see enqueue.js) and compares.
//
//   node bench-worker.js --redis redis://127.0.0.1:PORT --prefix bull --queue Q \
//     --count N --concurrency C [--processor noop|payment|fetch|sandboxed-payment] [--timeout-ms 600000]
//
// stdout: one JSON line {"completed":N,"seconds":<float>,"jobsPerSecond":<float>},
// timed from the first job going active to the N-th completion. Diagnostics
// go to stderr; exit 2 on timeout, 1 on error.
'use strict';

const { parseArgs, run } = require('./cli');
const { Worker } = require('bullmq');
const { processPayment } = require('./payment-processor');

async function fetchOnce(job) {
  const response = await fetch(job.data.url);
  return { status: response.status, body: await response.text() };
}

const PROCESSORS = {
  noop: async () => null,
  payment: processPayment,
  fetch: fetchOnce,
  // BullMQ's sandboxed processor: the payment processor in child processes.
  'sandboxed-payment': require('path').join(__dirname, 'sandboxed-payment.js'),
};

async function main() {
  const args = parseArgs(process.argv.slice(2), ['redis', 'queue', 'count']);
  const count = Number(args.count);
  if (!Number.isInteger(count) || count < 1) throw new Error('--count must be a positive integer');
  const concurrency = Number(args.concurrency || 1);
  const timeoutMs = Number(args['timeout-ms'] || 600000);
  const processor = PROCESSORS[args.processor || 'noop'];
  if (!processor) throw new Error(`--processor must be one of ${Object.keys(PROCESSORS).join(', ')}`);

  let firstActive = null;
  let completed = 0;
  let resolveDone;
  const done = new Promise((resolve) => (resolveDone = resolve));

  const worker = new Worker(args.queue, processor, {
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

run(main);

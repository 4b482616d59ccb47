// The payment webhook processor as our users run it on a plain Node BullMQ
// worker: the benchmark peer of Airlock's `payment-webhook` guest
// (jobs/payment-webhook), doing the same work through BullMQ's own job
// API — three progress reports, two log lines, a result.
'use strict';

const { UnrecoverableError } = require('bullmq');

async function processPayment(job) {
  const { transactionId, amount, currency } = job.data;
  await job.updateProgress(10);
  if (!(amount > 0) || !Number.isFinite(amount)) {
    throw new UnrecoverableError('Invalid transaction amount');
  }
  await job.log(`[info] processing transaction ${transactionId} for ${amount} ${currency || 'USD'}`);
  await job.updateProgress(50);
  const ledgerRecordId = `led_${transactionId}`;
  await job.log(`[info] recorded ledger entry ${ledgerRecordId}`);
  await job.updateProgress(100);
  return { processed: true, ledgerRecordId };
}

module.exports = { processPayment };

// The payment webhook's ledger writes, batched (TypeScript port of
// jobs/bulk-insert): a queue bound with `batch` hands this handler up to
// `batch.size` payment events at once, and it records them all in one
// request to the ledger. Built with `--batch` (see ../airlock-build.json).
//
// Input (each job): `{ "transactionId": "tx_1", "amount": 42.5, "currency": "EUR" }`.
// Output (each job): `{ "processed": true, "ledgerRecordId": "led_tx_1", "batchSize": 50 }`.
//
// - Data that does not decode fails that job alone, fatally (`invalid job
//   data ...`, by the SDK); so does a non-positive amount (`Invalid
//   transaction amount`); the others are recorded.
// - With `LEDGER_URL` in the binding's config, the valid entries are
//   POSTed to `{LEDGER_URL}/v1/ledger/bulk` in one request (each kept once
//   by its transaction id, so a retried batch records nothing twice); a
//   failed request fails every job of the batch with its error (a 5xx,
//   408, 429 or a transport failure retries them all). Without it, entry
//   ids are derived locally and no request is made.
// - Progress and log lines are the batch's: every job shows them.
import { FatalError, RetryableError, batchHandler, ensureOk, invalidData, readJson, type BatchJob, type Context } from '@airlock/sdk';

interface PaymentEvent {
  transactionId: string;
  amount: number;
  currency?: string;
}

interface Recorded {
  processed: boolean;
  ledgerRecordId: string;
  batchSize: number;
}

function decode(data: unknown): PaymentEvent {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw invalidData('expected an object');
  const { transactionId, amount, currency } = data as Record<string, unknown>;
  if (transactionId === undefined) throw invalidData('missing field `transactionId`');
  if (typeof transactionId !== 'string') throw invalidData('expected a string', 'transactionId');
  if (amount === undefined) throw invalidData('missing field `amount`');
  if (typeof amount !== 'number') throw invalidData('expected a number', 'amount');
  if (currency !== undefined && currency !== null && typeof currency !== 'string') {
    throw invalidData('expected a string', 'currency');
  }
  return { transactionId, amount, currency: currency ?? undefined };
}

const isValid = (event: PaymentEvent) => event.amount > 0 && Number.isFinite(event.amount);

export default batchHandler<PaymentEvent, Recorded>(
  async (jobs: BatchJob<PaymentEvent>[], ctx: Context) => {
    const size = jobs.length;
    const valid = jobs.map((j) => j.data).filter(isValid);
    ctx.log.info(`recording ${valid.length} of ${size} payments`);
    const ledger = ctx.config.get('LEDGER_URL');
    // A failed request throws: every job of the batch fails with its error.
    const ids =
      ledger !== undefined && valid.length > 0
        ? await recordAll(ctx, ledger, valid)
        : valid.map((e) => `led_${e.transactionId}`);
    ctx.progress(100);
    let next = 0;
    return jobs.map((j) => {
      if (!isValid(j.data)) return new FatalError('Invalid transaction amount');
      return { processed: true, ledgerRecordId: ids[next++], batchSize: size };
    });
  },
  { decode },
);

/** POSTs every entry in one request; the ledger's ids, in order. */
async function recordAll(ctx: Context, ledger: string, events: PaymentEvent[]): Promise<string[]> {
  const response = await ctx.fetch(`${ledger.replace(/\/+$/, '')}/v1/ledger/bulk`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      entries: events.map((e) => ({ transactionId: e.transactionId, amount: e.amount, currency: e.currency ?? null })),
    }),
  });
  const reply = await readJson<{ ids?: unknown }>(await ensureOk(response));
  if (!Array.isArray(reply.ids) || !reply.ids.every((id) => typeof id === 'string')) {
    throw new FatalError('response body: `ids` must be an array of strings');
  }
  if (reply.ids.length !== events.length) {
    throw new RetryableError(`the ledger answered ${reply.ids.length} ids for ${events.length} entries`);
  }
  return reply.ids as string[];
}

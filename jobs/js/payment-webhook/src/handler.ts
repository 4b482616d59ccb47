// The payment webhook processor from our users' BullMQ worker, as an
// Airlock handler (TypeScript port of jobs/payment-webhook).
//
// Input: `{ "transactionId": "tx_1", "amount": 42.5, "currency": "EUR" }`.
// Output: `{ "processed": true, "ledgerRecordId": "led_tx_1" }`.
//
// A non-positive amount fails with `Invalid transaction amount`. The
// original worker threw a plain `Error` and so retried it five times;
// retrying can never make a bad amount valid, so here it is *fatal*: the job
// fails at once (BullMQ `UnrecoverableError` semantics).
//
// Recording: when the queue binding's config sets `LEDGER_URL`, the entry
// is POSTed to `{LEDGER_URL}/v1/ledger` (with the transaction id as its
// `Idempotency-Key`, so a retry records it once) and the ledger's id is
// returned; without it the entry id is derived locally (and no request is
// made, so the QuickJS build, which has no fetch, works too).
import { FatalError, ensureOk, handler, invalidData, readJson, type Context } from '@airlock/sdk';

interface PaymentEvent {
  transactionId: string;
  amount: number;
  currency?: string;
}

interface LedgerReceipt {
  processed: boolean;
  ledgerRecordId: string;
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

export default handler<PaymentEvent, LedgerReceipt>(
  async (event, ctx) => {
    ctx.progress(10);
    if (event.amount <= 0 || !Number.isFinite(event.amount)) {
      throw new FatalError('Invalid transaction amount');
    }
    ctx.log.info(`processing transaction ${event.transactionId} for ${event.amount} ${event.currency ?? 'USD'}`);
    ctx.progress(50);
    const ledger = ctx.config.get('LEDGER_URL');
    const ledgerRecordId = ledger !== undefined ? await record(ctx, ledger, event) : `led_${event.transactionId}`;
    ctx.log.info(`recorded ledger entry ${ledgerRecordId}`);
    ctx.progress(100);
    return { processed: true, ledgerRecordId };
  },
  { decode },
);

/** POSTs the ledger entry; the ledger's id for it. */
async function record(ctx: Context, ledger: string, event: PaymentEvent): Promise<string> {
  const response = await ctx.fetch(`${ledger.replace(/\/+$/, '')}/v1/ledger`, {
    method: 'POST',
    headers: { 'idempotency-key': event.transactionId, 'content-type': 'application/json' },
    body: JSON.stringify({
      transactionId: event.transactionId,
      amount: event.amount,
      currency: event.currency ?? 'USD',
    }),
  });
  const recorded = await readJson<{ id?: unknown }>(await ensureOk(response));
  if (typeof recorded.id !== 'string') throw new FatalError('response body: missing field `id`');
  return recorded.id;
}

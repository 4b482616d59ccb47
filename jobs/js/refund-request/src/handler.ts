// A refund request from our users' Trigger.dev and Inngest functions, as a
// durable Airlock handler with both kinds of wait (TypeScript port of
// jobs/refund-request):
//
// 1. `open-refund` records the request;
// 2. a manager approves it: the step `ask-approval` POSTs
//    `{refundId, orderId, amount, token}` to `{APPROVAL_URL}/v1/approvals`
//    (`APPROVAL_URL` from the queue binding's config; the approval service
//    mails the manager a link), and the handler waits for `POST
//    /v1/tokens/{token}/complete` with `{"approved": bool, "by": name}` —
//    3 days at most (`approvalTimeoutMs` overrides it). No decision in time:
//    `expired`; a refusal: `rejected`. The token is a credential (whoever
//    holds it decides), so it goes only to the approval service: never into
//    the progress, a log, a step's result or the output, which every reader
//    of the job sees. The progress says only `{"stage": "awaiting-approval"}`.
//    Without `APPROVAL_URL` the job fails at once (fatal), naming the key;
// 3. `issue-refund` issues it once, a recorded step replayed, not run again (the KV counter
//    `refunds:<refundId>` counts the issues, so tests can prove it);
// 4. the payment provider's `refund.settled` event with this `refundId` (at
//    `$.refundId` of its data) settles it — 7 days at most
//    (`settleTimeoutMs`); none in time: `unsettled`.
//
// Input: `{ "refundId": "r1", "orderId": "o1", "amount": 25.0 }`, plus
// `pauseBeforeSettleMs`: busy time between issuing and waiting, which lets
// tests send the event while the job still runs. Spinning on the clock in
// JavaScript burns fuel much faster than the Rust original's spin loop (the
// default budget of 2e9 lasts about 0.6 s of it on StarlingMonkey): give a
// queue that uses the pause a bigger `limits.fuel`.
//
// One difference from the Rust original it cannot avoid: a token completed
// with the JSON `null` reads as no decision (`expired`), where the Rust
// handler fails fatally (`null` is no `Decision`).
import { FatalError, ensureOk, handler, invalidData, type Context } from '@airlock/sdk';

const APPROVAL_TIMEOUT = '3d';
const SETTLE_TIMEOUT = '7d';

interface Refund {
  refundId: string;
  orderId: string;
  amount: number;
  approvalTimeoutMs?: number;
  settleTimeoutMs?: number;
  pauseBeforeSettleMs?: number;
}

/** What the manager posts to the approval token. */
interface Decision {
  approved: boolean;
  by?: string;
}

interface Outcome {
  status: 'expired' | 'rejected' | 'settled' | 'unsettled';
  refundId: string;
  approvedBy?: string;
  refundRef?: string;
  /** The id of the settlement event. */
  settlement?: string;
}

function optionalMs(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw invalidData('expected a non-negative integer', field);
  }
  return value;
}

function requiredString(v: Record<string, unknown>, field: string): string {
  if (v[field] === undefined) throw invalidData(`missing field \`${field}\``);
  if (typeof v[field] !== 'string') throw invalidData('expected a string', field);
  return v[field];
}

function decode(data: unknown): Refund {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw invalidData('expected an object');
  const v = data as Record<string, unknown>;
  const refundId = requiredString(v, 'refundId');
  const orderId = requiredString(v, 'orderId');
  if (v.amount === undefined) throw invalidData('missing field `amount`');
  if (typeof v.amount !== 'number') throw invalidData('expected a number', 'amount');
  return {
    refundId,
    orderId,
    amount: v.amount,
    approvalTimeoutMs: optionalMs(v.approvalTimeoutMs, 'approvalTimeoutMs'),
    settleTimeoutMs: optionalMs(v.settleTimeoutMs, 'settleTimeoutMs'),
    pauseBeforeSettleMs: optionalMs(v.pauseBeforeSettleMs, 'pauseBeforeSettleMs'),
  };
}

/** The approval token's body as a {@link Decision}, or a fatal error like the Rust SDK's. */
function decision(body: unknown): Decision {
  const misfit = (why: string) => new FatalError(`the result of wait \`approval\` does not fit its type: ${why}`);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw misfit('expected an object');
  const v = body as Record<string, unknown>;
  if (v.approved === undefined) throw misfit('missing field `approved`');
  if (typeof v.approved !== 'boolean') throw misfit('expected a boolean at `approved`');
  if (v.by !== undefined && v.by !== null && typeof v.by !== 'string') throw misfit('expected a string at `by`');
  return { approved: v.approved, by: (v.by as string | null | undefined) ?? undefined };
}

/** A KV counter's value (0 when absent or not a number). */
function counterValue(text: string | undefined): number {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : 0;
}

/**
 * Hands the approval token to the approval service (and no one else); the
 * step's result is `true`, never the token. A host that dies between the POST
 * and recording the step sends it again on the retry: the same token (a wait
 * token is the same on every run), which the service can dedupe.
 */
async function askApproval(ctx: Context, approvals: string, refund: Refund, token: string): Promise<boolean> {
  await ensureOk(
    await ctx.fetch(`${approvals.replace(/\/+$/, '')}/v1/approvals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refundId: refund.refundId, orderId: refund.orderId, amount: refund.amount, token }),
    }),
  );
  return true;
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export default handler<Refund, Outcome>(
  async (refund, ctx) => {
    if (refund.amount <= 0) throw new FatalError('refund amount must be positive');

    const approvals = ctx.config.get('APPROVAL_URL');
    if (approvals === undefined) {
      throw new FatalError("the queue binding's config has no `APPROVAL_URL` (where to ask for the approval)");
    }

    await ctx.step.run('open-refund', () => {
      ctx.log.info(`refund ${refund.refundId} of ${refund.amount} for order ${refund.orderId} opened`);
      return true;
    });

    const token = await ctx.step.waitToken('approval');
    await ctx.step.run('ask-approval', () => askApproval(ctx, approvals, refund, token));
    ctx.progress({ stage: 'awaiting-approval' });
    const body = await ctx.step.waitForToken('approval', { timeout: refund.approvalTimeoutMs ?? APPROVAL_TIMEOUT });
    if (body === null) return { status: 'expired', refundId: refund.refundId };
    const { approved, by } = decision(body);
    if (!approved) return { status: 'rejected', refundId: refund.refundId, approvedBy: by };

    const refundRef = await ctx.step.run('issue-refund', () => {
      const counter = `refunds:${refund.refundId}`;
      const issued = counterValue(ctx.kv.get(counter));
      ctx.kv.set(counter, String(issued + 1));
      return `rf_${refund.refundId}`;
    });
    ctx.progress({ stage: 'awaiting-settlement' });
    if (refund.pauseBeforeSettleMs !== undefined) {
      const until = now() + refund.pauseBeforeSettleMs;
      while (now() < until) {
        // busy: a window for tests to send the event before the wait
      }
    }

    const settled = await ctx.step.waitForEvent('settlement', 'refund.settled', {
      match: { path: '$.refundId', value: refund.refundId },
      timeout: refund.settleTimeoutMs ?? SETTLE_TIMEOUT,
    });
    return {
      status: settled ? 'settled' : 'unsettled',
      refundId: refund.refundId,
      approvedBy: by,
      refundRef,
      settlement: settled?.id,
    };
  },
  { decode },
);

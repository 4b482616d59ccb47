// The order workflow from our users' Inngest functions, as a durable
// Airlock handler (TypeScript port of jobs/order-workflow):
//
// 1. `verify-fraud-risk` scores the order; a risky order goes through
//    `flag-order-for-review` and the workflow stops there;
// 2. `charge-payment` charges the customer once, however often the job
//    is retried, resumed or recovered after a crash: a recorded step is
//    replayed, not run again (only a crash between the charge and its
//    record would charge twice);
// 3. a durable sleep of 24 hours (`reviewDelayMs` overrides it) parks the
//    job without holding a worker;
// 4. `send-customer-review-request` asks for a review.
//
// Input: `{ "orderId": "o1", "amount": 99.5, "customerEmail": "c@example.com" }`.
//
// Every charge also bumps the KV counter `charges:<orderId>`, so tests can
// prove from outside that the charge really ran once.
import { FatalError, handler, invalidData } from '@airlock/sdk';

const REVIEW_DELAY = '24h';
const RISKY_AMOUNT = 5_000;

interface Order {
  orderId: string;
  amount: number;
  customerEmail?: string;
  reviewDelayMs?: number;
  /** Busy time between charging and sleeping: lets tests kill the host between two steps. */
  pauseAfterChargeMs?: number;
}

interface RiskAssessment {
  score: number;
  flagged: boolean;
}

interface Charge {
  chargeId: string;
  amount: number;
}

interface Outcome {
  status: 'completed' | 'flagged_for_review';
  orderId: string;
  chargeId?: string;
  reviewRequested: boolean;
}

function optionalMs(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw invalidData('expected a non-negative integer', field);
  }
  return value;
}

function decode(data: unknown): Order {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw invalidData('expected an object');
  const v = data as Record<string, unknown>;
  if (v.orderId === undefined) throw invalidData('missing field `orderId`');
  if (typeof v.orderId !== 'string') throw invalidData('expected a string', 'orderId');
  if (v.amount === undefined) throw invalidData('missing field `amount`');
  if (typeof v.amount !== 'number') throw invalidData('expected a number', 'amount');
  if (v.customerEmail !== undefined && v.customerEmail !== null && typeof v.customerEmail !== 'string') {
    throw invalidData('expected a string', 'customerEmail');
  }
  return {
    orderId: v.orderId,
    amount: v.amount,
    customerEmail: (v.customerEmail as string | null | undefined) ?? undefined,
    reviewDelayMs: optionalMs(v.reviewDelayMs, 'reviewDelayMs'),
    pauseAfterChargeMs: optionalMs(v.pauseAfterChargeMs, 'pauseAfterChargeMs'),
  };
}

/** A KV counter's value (0 when absent or not a number). */
function counterValue(text: string | undefined): number {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : 0;
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export default handler<Order, Outcome>(
  async (order, ctx) => {
    if (order.amount <= 0) throw new FatalError('order amount must be positive');

    const risk = await ctx.step.run('verify-fraud-risk', (): RiskAssessment => {
      const score = Math.trunc(Math.min((order.amount / RISKY_AMOUNT) * 100, 100));
      ctx.log.info(`order ${order.orderId} risk score ${score}`);
      return { score, flagged: order.amount >= RISKY_AMOUNT };
    });

    if (risk.flagged) {
      await ctx.step.run('flag-order-for-review', () => {
        ctx.log.warn(`order ${order.orderId} flagged for manual review`);
        return true;
      });
      return { status: 'flagged_for_review', orderId: order.orderId, reviewRequested: false };
    }

    const charge = await ctx.step.run('charge-payment', (): Charge => {
      ctx.log.info(`charging order ${order.orderId} for ${order.amount}`);
      const counter = `charges:${order.orderId}`;
      const charges = counterValue(ctx.kv.get(counter));
      ctx.kv.set(counter, String(charges + 1));
      return { chargeId: `ch_${order.orderId}`, amount: order.amount };
    });
    ctx.progress(50);
    if (order.pauseAfterChargeMs !== undefined) {
      const until = now() + order.pauseAfterChargeMs;
      while (now() < until) {
        // busy: a window for tests to kill the host between two steps
      }
    }

    await ctx.step.sleep('wait-before-review', order.reviewDelayMs ?? REVIEW_DELAY);

    await ctx.step.run('send-customer-review-request', () => {
      const to = order.customerEmail ?? 'customer';
      ctx.log.info(`review request for order ${order.orderId} sent to ${to}`);
      return true;
    });
    ctx.progress(100);

    return { status: 'completed', orderId: order.orderId, chargeId: charge.chargeId, reviewRequested: true };
  },
  { decode },
);

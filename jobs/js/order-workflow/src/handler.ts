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
// 4. `send-customer-review-request` asks for a review;
// 5. with `notifyEvent`, the event of that name (`{orderId, chargeId}`) is
//    sent once (`notify`), and the output names its id (`notified`).
//
// With `chargeQueue`, step 2 is the payment handler's: the charge is
// invoked as a job named `charge` on that queue (`{orderId, amount}`), the
// order parked until it ended; a charge that failed for good fails the
// order (fatally, with the charge's reason). The same component is that
// payment handler: a job named `charge` runs `charge-payment` alone and
// returns the charge. (The binding of the orders' queue lists the charges'
// queue and the event in its `starts`.)
//
// Input: `{ "orderId": "o1", "amount": 99.5, "customerEmail": "c@example.com",
// "chargeQueue"?: "charges", "notifyEvent"?: "order.reviewed" }`.
//
// Every charge also bumps the KV counter `charges:<orderId>`, so tests can
// prove from outside that the charge really ran once.
import { FatalError, InvokeError, handler, invalidData, type Context } from '@airlock/sdk';

const REVIEW_DELAY = '24h';
const RISKY_AMOUNT = 5_000;

interface Order {
  orderId: string;
  amount: number;
  customerEmail?: string;
  reviewDelayMs?: number;
  /** Busy time between charging and sleeping: lets tests kill the host between two steps. */
  pauseAfterChargeMs?: number;
  /** The queue of the payment handler that charges the order; absent: the charge is a step of this job. */
  chargeQueue?: string;
  /** The event sent once the review was requested. */
  notifyEvent?: string;
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
  /** The id of the `notifyEvent` event sent. */
  notified?: string;
}

function optionalMs(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw invalidData('expected a non-negative integer', field);
  }
  return value;
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidData('expected a string', field);
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
    chargeQueue: optionalString(v.chargeQueue, 'chargeQueue'),
    notifyEvent: optionalString(v.notifyEvent, 'notifyEvent'),
  };
}

/** A KV counter's value (0 when absent or not a number). */
function counterValue(text: string | undefined): number {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : 0;
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** `charge-payment`: charges the order once (bumping `charges:<orderId>`). */
function chargePayment(ctx: Context, order: Order): Promise<Charge> {
  return ctx.step.run('charge-payment', (): Charge => {
    ctx.log.info(`charging order ${order.orderId} for ${order.amount}`);
    const counter = `charges:${order.orderId}`;
    const charges = counterValue(ctx.kv.get(counter));
    ctx.kv.set(counter, String(charges + 1));
    return { chargeId: `ch_${order.orderId}`, amount: order.amount };
  });
}

/** The charge of an order: the payment handler's on `chargeQueue`, else a step of this job. */
async function charge(ctx: Context, order: Order): Promise<Charge> {
  if (order.chargeQueue === undefined) return chargePayment(ctx, order);
  try {
    return await ctx.invoke<Charge>('charge-payment', {
      queue: order.chargeQueue,
      name: 'charge',
      data: { orderId: order.orderId, amount: order.amount },
    });
  } catch (e) {
    if (e instanceof InvokeError) throw new FatalError(`the charge failed: ${e.message}`, { cause: e });
    throw e;
  }
}

async function orderWorkflow(ctx: Context, order: Order): Promise<Outcome> {
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

  const { chargeId } = await charge(ctx, order);
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

  const outcome: Outcome = { status: 'completed', orderId: order.orderId, chargeId, reviewRequested: true };
  if (order.notifyEvent !== undefined) {
    outcome.notified = await ctx.sendEvent('notify', order.notifyEvent, { orderId: order.orderId, chargeId });
  }
  return outcome;
}

/** A job named `charge` is the payment handler's; any other is an order. */
export default handler<Order, Outcome | Charge>(
  async (order, ctx) => (ctx.job.name === 'charge' ? chargePayment(ctx, order) : orderWorkflow(ctx, order)),
  { decode },
);

// {{name}}: an Airlock job handler.
//
// Input:  { "orderId": "o1", "amount": 42.5, "email": "c@example.com" }
// Output: { "orderId": "o1", "receipt": "rcpt_o1", "emailed": true }
import { FatalError, handler, invalidData } from '@airlock/sdk';

interface Order {
  orderId: string;
  amount: number;
  email?: string;
}

interface Result {
  orderId: string;
  receipt: string;
  emailed: boolean;
}

export default handler<Order, Result>(
  async (order, ctx) => {
    if (order.amount <= 0) throw new FatalError('amount must be positive'); // never retried
    ctx.log.info(`order ${order.orderId} (attempt ${ctx.job.attempt} of ${ctx.job.maxAttempts})`);

    // A durable step's result is recorded: a retry or a resumption gets it instead of running it again.
    const receipt = await ctx.step.run('issue-receipt', () => `rcpt_${order.orderId}`);
    ctx.progress(50);

    // Idempotency: the first writer of a key wins, so a duplicate job mails nobody twice.
    const emailed = order.email !== undefined && ctx.kv.setIfAbsent(`mailed:${order.orderId}`, receipt, { ttl: '7d' });
    if (emailed) ctx.log.info(`mailing receipt ${receipt} to ${order.email}`);

    ctx.progress(100);
    return { orderId: order.orderId, receipt, emailed };
  },
  {
    // Checks the job data; whatever this throws fails the job as fatal invalid input.
    decode: (data) => {
      const d = data as Partial<Order> | null;
      if (typeof d?.orderId !== 'string') throw invalidData('expected a string', 'orderId');
      if (typeof d.amount !== 'number') throw invalidData('expected a number', 'amount');
      return { orderId: d.orderId, amount: d.amount, email: typeof d.email === 'string' ? d.email : undefined };
    },
  },
);

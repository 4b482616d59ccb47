// Test guest: writes to the job's log every way a TypeScript handler can —
// `console.log` / `console.error` (routed to the log with their level) and
// `ctx.log` — and returns how many lines it wrote.
import { handler } from '@airlock/sdk';

export default handler<{ order?: string }, { lines: number }>((input, ctx) => {
  console.log('console.log says', input.order ?? 'hello');
  console.error('console.error says', { code: 7 });
  ctx.log.warn('ctx.log.warn says');
  return { lines: 3 };
});

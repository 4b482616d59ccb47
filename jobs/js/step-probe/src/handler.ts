// Test guest for durable steps (TypeScript port of jobs/step-probe): proves
// a step that failed is retried without re-running the steps before it,
// and that repeated step ids get one record per occurrence.
//
// Step `first` bumps the KV counter `first:<job id>`; step `flaky` fails on
// attempt 1; three `repeat` steps run in a loop. The output reports how
// often `first` really ran.
import { RetryableError, handler } from '@airlock/sdk';

interface Report {
  firstRuns: number;
  repeats: number[];
  attempt: number;
}

const counterValue = (text: string | undefined) => (text !== undefined && /^\d+$/.test(text) ? Number(text) : 0);

export default handler<unknown, Report>(async (_input, ctx) => {
  const counter = `first:${ctx.job.id}`;
  await ctx.step.run('first', () => {
    const runs = counterValue(ctx.kv.get(counter));
    ctx.kv.set(counter, String(runs + 1));
    return true;
  });
  await ctx.step.run('flaky', () => {
    if (ctx.job.attempt === 1) throw new RetryableError('step `flaky` fails on the first attempt');
    return true;
  });
  const repeats: number[] = [];
  for (let i = 0; i < 3; i++) {
    repeats.push(await ctx.step.run('repeat', () => i));
  }
  const firstRuns = counterValue(ctx.kv.get(counter));
  return { firstRuns, repeats, attempt: ctx.job.attempt };
});

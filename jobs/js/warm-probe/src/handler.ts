// Test probe for warm instances (the TypeScript twin of jobs/warm-probe and
// jobs/python/warm-probe): it keeps, in a module-level list, every job this
// instance ran (id and `tag`) and reports what it kept before the current
// job. On a fresh instance per job it always sees nothing; on a warm
// instance it sees the earlier jobs of that instance.
//
// Data: {"tag": string, "mode"?: "grow" | "retry" | "keep-ctx"}; the result
// is {"seen": [{"id", "tag"}, ...], "count": <jobs this instance ran before>}.
// - grow: also keeps 1 MiB more in a global every job, so an instance that
//   keeps running jobs reaches its memory cap;
// - retry: records the job, then fails it as retryable;
// - keep-ctx: keeps this job's ctx in a global.
// In every job, a ctx an earlier job kept is tried (`ctx.log.info`), and
// `staleCtx` says what happened: "threw: <message>" (what the SDK does) or
// "worked".
import { RetryableError, handler, invalidData, type Context } from '@airlock/sdk';

interface Input {
  tag: string;
  mode?: string;
}

interface Seen {
  id: string;
  tag: string;
}

interface Output {
  seen: Seen[];
  count: number;
  staleCtx?: string;
}

const seen: Seen[] = [];
const hoard: Uint8Array[] = [];
let keptCtx: Context | undefined;

function decode(data: unknown): Input {
  const input = (data ?? {}) as Partial<Input>;
  if (typeof input.tag !== 'string') throw invalidData('missing field `tag` (a string)');
  return { tag: input.tag, mode: typeof input.mode === 'string' ? input.mode : undefined };
}

export default handler<Input, Output>((input, ctx) => {
  const output: Output = { seen: [...seen], count: seen.length };
  if (keptCtx !== undefined) {
    try {
      keptCtx.log.info('stale');
      output.staleCtx = 'worked';
    } catch (e) {
      output.staleCtx = `threw: ${e instanceof Error ? e.message : String(e)}`;
    }
  }
  seen.push({ id: ctx.job.id, tag: input.tag });
  switch (input.mode) {
    case 'grow':
      hoard.push(new Uint8Array(1 << 20).fill(7));
      break;
    case 'retry':
      throw new RetryableError('warm-probe: asked to fail');
    case 'keep-ctx':
      keptCtx = ctx;
      break;
  }
  return output;
}, { decode });

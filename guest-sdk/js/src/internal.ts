// Used by the entry module `airlock-build` generates; not part of the API.

import { isBatchHandler, type BatchHandler } from './batch';
import { handler, isHandler, type Handler } from './handler';
import type { RawJob } from './raw';

/**
 * The `run` export for a handler module: its default export made by
 * `handler(...)`, or the `run` of one made by `batchHandler(...)` (a batch
 * of one), or a plain default-exported function (wrapped in `handler`), or
 * else a named `run` taking the raw WIT job (used as is).
 */
export function toRun(mod: Record<string, unknown>): Handler | ((job: RawJob) => unknown) {
  const main = mod.default;
  if (isHandler(main)) return main;
  if (isBatchHandler(main)) return main.run;
  if (typeof main === 'function') return handler(main as Parameters<typeof handler>[0]);
  if (typeof mod.run === 'function') return mod.run as (job: RawJob) => unknown;
  throw new Error(
    'airlock: the handler module must `export default handler(async (data, ctx) => ...)` (from "@airlock/sdk")',
  );
}

/**
 * The `runBatch` export (`airlock-build --batch`) for a handler module:
 * its default export must be made by `batchHandler(...)`.
 */
export function toRunBatch(mod: Record<string, unknown>): BatchHandler['runBatch'] {
  const main = mod.default;
  if (isBatchHandler(main)) return main.runBatch;
  const what = isHandler(main)
    ? 'is made by `handler(...)`, which runs one job'
    : main === undefined
      ? 'is missing'
      : `is a ${typeof main}`;
  throw new Error(
    `airlock: a --batch build needs the handler module to \`export default batchHandler(async (jobs, ctx) => ...)\` (from "@airlock/sdk"); its default export ${what}`,
  );
}

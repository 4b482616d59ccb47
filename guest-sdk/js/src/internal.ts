// Used by the entry module `airlock-build` generates; not part of the API.

import { handler, isHandler, type Handler } from './handler';
import type { RawJob } from './raw';

/**
 * The `run` export for a handler module: its default export made by
 * `handler(...)`, or a plain default-exported function (wrapped in
 * `handler`), or else a named `run` taking the raw WIT job (used as is).
 */
export function toRun(mod: Record<string, unknown>): Handler | ((job: RawJob) => unknown) {
  const main = mod.default;
  if (isHandler(main)) return main;
  if (typeof main === 'function') return handler(main as Parameters<typeof handler>[0]);
  if (typeof mod.run === 'function') return mod.run as (job: RawJob) => unknown;
  throw new Error(
    'airlock: the handler module must `export default handler(async (data, ctx) => ...)` (from "@airlock/sdk")',
  );
}

// Batch handlers: one call with many jobs (a queue bound with `batch`),
// one outcome per job. The glue between the `batch-handler` world's
// exports (`run-batch`, and `run` for one job) and a typed batch function,
// with the semantics of the Rust SDK's `batch_handler!`.

import { FatalError, messageOf, toJobError, type JobErrorVariant } from './errors';
import { decodeInput, encodeOutput, openContext, rethrowJobError, runCall, type Call, type HandlerOptions } from './handler';
import type { Context } from './context';
import { createHost, ENGINE, jobInfo, type Host, type JobInfo } from './host';
import { rawImports, type RawJob } from './raw';

/** One job of a batch: who it is, and its decoded data. */
export interface BatchJob<I> {
  /** The job (id, queue, name, attempt, ...). */
  readonly job: JobInfo;
  /** Its data, parsed (and decoded by `options.decode`). */
  readonly data: I;
}

/**
 * A batch function: the batch's jobs in, one outcome per job out, in the
 * same order — the job's result (JSON-encodable), or an `Error` that fails
 * that job.
 */
export type BatchHandlerFn<I, O> = (
  jobs: BatchJob<I>[],
  ctx: Context,
) => Array<O | Error> | Promise<Array<O | Error>>;

/** One element of `run-batch`'s `list<result<string, job-error>>`, as both engines' bindings take it. */
export type BatchOutcome = { tag: 'ok'; val: string } | { tag: 'err'; val: JobErrorVariant };

const BATCH_HANDLER = Symbol.for('airlock.batch-handler');

/** The component's exports, as {@link batchHandler} makes them. */
export interface BatchHandler {
  /** The `run` export: one job, run as a batch of one; its result, or throws its job-error variant. */
  readonly run: (job: RawJob) => string | Promise<string>;
  /** The `run-batch` export: one outcome per job, in order. */
  readonly runBatch: (jobs: RawJob[]) => BatchOutcome[] | Promise<BatchOutcome[]>;
  readonly [BATCH_HANDLER]: true;
}

/** Whether `value` was made by {@link batchHandler}. */
export function isBatchHandler(value: unknown): value is BatchHandler {
  return value !== null && typeof value === 'object' && (value as Partial<BatchHandler>)[BATCH_HANDLER] === true;
}

/**
 * Makes `fn` the batch handler of a component built with `airlock-build
 * --batch` (world `batch-handler`, what a queue bound with `batch` needs):
 * `export default batchHandler<Row, Saved>(async (jobs, ctx) => ...)`.
 *
 * - Each job's data is parsed as JSON and passed to `options.decode` on its
 *   own; a job whose data does not decode fails alone, as *fatal*
 *   (`invalid job data: ...`), and `fn` gets the others, in order (`fn` is
 *   not called when none is left).
 * - `fn` returns one item per job it got, in order: an `Error` fails that
 *   job (a {@link FatalError} at once, any other error is retried per the
 *   job's `attempts`, as {@link toJobError} maps it; a `RetryAfterError` is
 *   such a retry too: no delay is asked for); anything else is that job's
 *   result, encoded as JSON (`undefined` as `null`; unencodable: fatal for
 *   that job).
 * - An array of another length fails every job of the batch as *fatal*
 *   (`the batch handler returned N outcomes for M jobs`), and so does
 *   anything that is not an array.
 * - What `fn` throws (or its promise rejects with) fails every job of the
 *   batch with that error, its kind as {@link toJobError} maps it.
 *
 * `ctx` is the batch's: `ctx.job` is the batch's first job; progress and
 * log lines go to every job of the batch; KV, configuration, secrets and
 * `fetch` work as in a single run. Steps, sleeps, waits, children,
 * `enqueue`, `invoke`, `sendEvent`, `retryAfter` and `rateLimit` belong to
 * one job: the host refuses them in a batch and the whole batch fails as
 * *fatal*, naming the call.
 *
 * The component's `run` export (one job: a queue bound without `batch`)
 * calls `fn` with a batch of one and returns or throws that job's outcome,
 * so the same module also serves such a queue (built with or without
 * `--batch`).
 */
export function batchHandler<I = unknown, O = unknown>(
  fn: BatchHandlerFn<I, O>,
  options: HandlerOptions<I> = {},
): BatchHandler {
  if (typeof fn !== 'function') throw new TypeError('batchHandler(fn): fn must be a function (jobs, ctx) => outcomes');
  return makeBatchHandler(fn as BatchHandlerFn<unknown, unknown>, options as HandlerOptions<unknown>, () =>
    createHost(rawImports, ENGINE),
  );
}

/**
 * `batchHandler` over any host (tests inject a fake one): `host()` is
 * called once per call of `run` or `runBatch`. Each call starts and ends
 * like a call of `handler`'s `run` (see `makeRun`): one {@link Context}
 * for the batch, ended when the call returns.
 */
export function makeBatchHandler(
  fn: BatchHandlerFn<unknown, unknown>,
  options: HandlerOptions<unknown>,
  host: () => Host,
): BatchHandler {
  const runBatch = (jobs: RawJob[]): BatchOutcome[] | Promise<BatchOutcome[]> =>
    runCall(
      host(),
      (call) => executeBatch(fn, options, jobs, call),
      // `executeBatch` does not reject: settling failed because the batch
      // is still waiting once the QuickJS queue is empty.
      (thrown) => everyJob(jobs.length, toJobError(new FatalError(messageOf(thrown)))),
    );
  const run = (job: RawJob): string | Promise<string> =>
    runCall(
      host(),
      async (call) => {
        const [outcome] = await executeBatch(fn, options, [job], call);
        if (outcome.tag === 'ok') return outcome.val;
        throw outcome.val;
      },
      rethrowJobError,
    );
  return Object.freeze({ run, runBatch, [BATCH_HANDLER]: true as const });
}

/** `error` for each of `count` jobs. */
function everyJob(count: number, error: JobErrorVariant): BatchOutcome[] {
  return Array.from({ length: count }, () => ({ tag: 'err', val: { ...error } }));
}

/** A job's outcome from what the batch function returned for it. */
function outcomeOf(item: unknown): BatchOutcome {
  if (item instanceof Error) return { tag: 'err', val: toJobError(item) };
  try {
    return { tag: 'ok', val: encodeOutput(item) };
  } catch (e) {
    return { tag: 'err', val: toJobError(e) };
  }
}

/** Why `answered` (not one outcome per job of `count`) fails every job of the batch. */
function wrongCount(answered: unknown, count: number): string {
  if (Array.isArray(answered)) return `the batch handler returned ${answered.length} outcomes for ${count} jobs`;
  const what = answered === null ? 'null' : typeof answered;
  return `the batch handler returned ${what}, not an array of ${count} outcomes`;
}

async function executeBatch(
  fn: BatchHandlerFn<unknown, unknown>,
  options: HandlerOptions<unknown>,
  jobs: RawJob[],
  call: Call,
): Promise<BatchOutcome[]> {
  if (jobs.length === 0) return [];
  try {
    const ctx = openContext(call, jobInfo(jobs[0]));
    const outcomes: (BatchOutcome | undefined)[] = jobs.map(() => undefined);
    const batch: BatchJob<unknown>[] = [];
    const places: number[] = [];
    jobs.forEach((job, place) => {
      try {
        batch.push({ job: jobInfo(job), data: decodeInput(job.data, options.decode) });
        places.push(place);
      } catch (e) {
        outcomes[place] = { tag: 'err', val: toJobError(e) };
      }
    });
    if (batch.length > 0) {
      const answered: unknown = await fn(batch, ctx);
      if (!Array.isArray(answered) || answered.length !== batch.length) {
        return everyJob(jobs.length, { tag: 'fatal', val: wrongCount(answered, batch.length) });
      }
      places.forEach((place, i) => {
        outcomes[place] = outcomeOf(answered[i]);
      });
    }
    return outcomes as BatchOutcome[];
  } catch (e) {
    // `run-batch` returns a list and cannot throw: what `fn` threw fails
    // every job of the batch.
    return everyJob(jobs.length, toJobError(e));
  }
}

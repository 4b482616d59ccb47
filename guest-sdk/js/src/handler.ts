// The glue between the component's `run` export and a typed handler.

import { installConsole, releaseConsole } from './console';
import { Context, contextRefusals, endContext } from './context';
import { FatalError, messageOf, toJobError, type JobErrorVariant } from './errors';
import { installFetch, releaseFetch } from './fetch';
import { createHost, ENGINE, jobInfo, type Host } from './host';
import { rawImports, type RawJob } from './raw';
import { discardJobs, draining, settleNow } from './sync-promise';
import { clearTimers } from './timers';
import { RetryAfterError } from './work';

/** A handler function: typed job data in, JSON-encodable result out. */
export type HandlerFn<I, O> = (data: I, ctx: Context) => O | Promise<O>;

/** Options of {@link handler}. */
export interface HandlerOptions<I> {
  /**
   * Checks and converts the parsed job data (a zod schema's `parse`, say).
   * Whatever it throws fails the job as *fatal* invalid input
   * (`invalid job data: <message>`): a retry cannot fix the data.
   */
  decode?: (data: unknown) => I;
}

const HANDLER = Symbol.for('airlock.handler');

/** The component's `run` export, as {@link handler} makes it. */
export interface Handler {
  (job: RawJob): string | Promise<string>;
  readonly [HANDLER]: true;
}

/** Whether `value` was made by {@link handler}. */
export function isHandler(value: unknown): value is Handler {
  return typeof value === 'function' && (value as Partial<Handler>)[HANDLER] === true;
}

/**
 * Makes `fn` the job handler: `export default handler<Order, Receipt>(async (order, ctx) => ...)`.
 *
 * The job's data is parsed as JSON (not JSON: a fatal error) and handed to
 * `fn` with the {@link Context}; what `fn` returns is the job's result,
 * encoded as JSON (`undefined` as `null`; unencodable: fatal). A thrown
 * {@link FatalError} (an uncaught `InvokeError` is one) fails the job at
 * once; a thrown {@link RetryAfterError} ends the run to run again after
 * its delay, using up no attempt; any other error is retried per the job's
 * `attempts` (BullMQ semantics).
 */
export function handler<I = unknown, O = unknown>(fn: HandlerFn<I, O>, options: HandlerOptions<I> = {}): Handler {
  if (typeof fn !== 'function') throw new TypeError('handler(fn): fn must be a function (data, ctx) => result');
  return makeRun(fn as HandlerFn<unknown, unknown>, options as HandlerOptions<unknown>, () =>
    createHost(rawImports, ENGINE),
  );
}

/**
 * `handler` over any host (tests inject a fake one): `host()` is called
 * once per job.
 *
 * Each call of the returned `run` is one job, and starts clean even when
 * the host calls `run` again on the same instance (a warm instance): a new
 * {@link Context} (its own step, sleep and wait occurrence counts, and
 * no HTTP refusal of an earlier job counted as used), the console and the
 * global `fetch` pointed at this job's host, no timer of an earlier job
 * pending, and on QuickJS an empty promise-job queue. When the run
 * returns, the job's `ctx` is ended (a later call through it throws
 * without reaching the host), the console and the global `fetch` let go
 * of the job's host, the job's pending timers are cleared and, on
 * QuickJS, whatever the job left queued is dropped.
 */
export function makeRun(
  fn: HandlerFn<unknown, unknown>,
  options: HandlerOptions<unknown>,
  host: () => Host,
): Handler {
  const run = (job: RawJob): string | Promise<string> => {
    const r: JobRun = { host: host(), ctx: undefined };
    const result = execute(fn, options, job, r);
    if (r.host.engine !== 'quickjs') return result;
    // QuickJS exports `run` synchronously: settle everything now.
    try {
      return settleQuickJs(result);
    } finally {
      endJob(r); // also when the result never settled (execute's own `finally` did not run)
    }
  };
  Object.defineProperty(run, HANDLER, { value: true });
  return run as Handler;
}

function settleQuickJs(result: Promise<string>): string {
  try {
    return settleNow(result);
  } catch (e) {
    // `execute` only rejects with a job-error variant; anything else is
    // the drain failing to settle it.
    if (e !== null && typeof e === 'object' && 'tag' in e) throw e;
    throw toJobError(new FatalError(messageOf(e)));
  } finally {
    // The drain stops once the result has settled: what the job left
    // queued would otherwise run in the next job's drain on a reused
    // instance. (A run inside a drain — only tests do that — leaves the
    // outer drain's queue alone.)
    if (!draining()) discardJobs();
  }
}

/** Encodes the handler's result as the job's JSON return value. */
export function encodeOutput(value: unknown): string {
  if (value === undefined) return 'null';
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new FatalError(`handler output could not be encoded as JSON: ${messageOf(e)}`);
  }
  return text === undefined ? 'null' : text;
}

/** Parses the job data; not JSON, or refused by `decode`: fatal. */
export function decodeInput(data: string, decode?: (data: unknown) => unknown): unknown {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (e) {
    throw new FatalError(`invalid job data: ${messageOf(e)}`);
  }
  if (!decode) return value;
  try {
    return decode(value);
  } catch (e) {
    if (e instanceof FatalError) throw e;
    throw new FatalError(`invalid job data: ${messageOf(e)}`);
  }
}

/** One call of `run`: the job's host and, once made, its context. */
interface JobRun {
  readonly host: Host;
  ctx: Context | undefined;
}

/**
 * The job is over: what it left behind (a ctx kept in a global, a timer
 * or a promise still pending) must not act in a later job's name.
 */
function endJob(r: JobRun): void {
  if (r.ctx !== undefined) {
    endContext(r.ctx);
    releaseFetch(contextRefusals(r.ctx));
  }
  releaseConsole(r.host);
  clearTimers();
}

async function execute(
  fn: HandlerFn<unknown, unknown>,
  options: HandlerOptions<unknown>,
  job: RawJob,
  r: JobRun,
): Promise<string> {
  try {
    clearTimers(); // set after the last job ended (by its leftovers)
    installConsole(r.host);
    const data = decodeInput(job.data, options.decode);
    r.ctx = new Context(jobInfo(job), r.host);
    installFetch(contextRefusals(r.ctx), r.host.engine);
    return encodeOutput(await fn(data, r.ctx));
  } catch (e) {
    let thrown = e;
    if (e instanceof RetryAfterError) {
      // Inngest's RetryAfterError: end the run, to run again after its
      // delay, using up no attempt (the host's `retry-after` does not
      // return; were it to, the error fails the run as a retry).
      try {
        r.host.retryAfter(e.delayMs, e.message);
      } catch (x) {
        thrown = x;
      }
    }
    throw toJobError(thrown) satisfies JobErrorVariant;
  } finally {
    endJob(r);
  }
}

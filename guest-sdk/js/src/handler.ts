// The glue between the component's `run` export and a typed handler, and
// the lifetime of one export call that batch.ts shares (`runCall`).

import { installConsole, releaseConsole } from './console';
import { Context, contextRefusals, endContext } from './context';
import { FatalError, messageOf, toJobError, type JobErrorVariant } from './errors';
import { installFetch, releaseFetch } from './fetch';
import { createHost, ENGINE, jobInfo, type Host, type JobInfo } from './host';
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
  const run = (job: RawJob): string | Promise<string> =>
    runCall(host(), (call) => execute(fn, options, job, call), rethrowJobError);
  Object.defineProperty(run, HANDLER, { value: true });
  return run as Handler;
}

/** One call of an export (`run`, `run-batch`): its host and, once made, its context. */
export interface Call {
  readonly host: Host;
  ctx: Context | undefined;
}

/**
 * One call of an export over `host`: `work` does the call's work and the
 * call's lifetime is kept around it. Before `work`: the timers an earlier
 * call left pending are cleared and the console points at `host`. After
 * it (resolved or rejected): the call is ended (see {@link endCall}).
 *
 * On StarlingMonkey the call returns `work`'s promise (the engine runs
 * its event loop until it settles). QuickJS exports are synchronous: the
 * call drains the promise-job queue until the promise has settled and
 * returns its value; when settling throws (the promise rejected, or it
 * is still pending once the queue is empty: `NeverSettledError`), the
 * call returns or throws what `failed(thrown)` does. Either way it then
 * drops whatever the call left queued.
 */
export function runCall<T>(host: Host, work: (call: Call) => Promise<T>, failed: (thrown: unknown) => T): T | Promise<T> {
  const call: Call = { host, ctx: undefined };
  const result = (async () => {
    try {
      clearTimers(); // set after the last call ended (by its leftovers)
      installConsole(host);
      return await work(call);
    } finally {
      endCall(call);
    }
  })();
  if (host.engine !== 'quickjs') return result;
  try {
    return settleNow(result);
  } catch (e) {
    return failed(e);
  } finally {
    // The drain stops once the result has settled: what the call left
    // queued would otherwise run in the next call's drain on a reused
    // instance. (A run inside a drain — only tests do that — leaves the
    // outer drain's queue alone.)
    if (!draining()) discardJobs();
    endCall(call); // also when the result never settled (the `finally` above did not run)
  }
}

/**
 * `run`'s outcome when settling its promise threw on QuickJS: `execute`
 * only rejects with a job-error variant, thrown as is; anything else is
 * the drain failing to settle it, a fatal error.
 */
export function rethrowJobError(thrown: unknown): never {
  if (thrown !== null && typeof thrown === 'object' && 'tag' in thrown) throw thrown;
  throw toJobError(new FatalError(messageOf(thrown)));
}

/**
 * Makes the call's {@link Context} for `job` (the job a batch's context
 * speaks for: its first) and points the global `fetch` at it.
 */
export function openContext(call: Call, job: JobInfo): Context {
  call.ctx = new Context(job, call.host);
  installFetch(contextRefusals(call.ctx), call.host.engine);
  return call.ctx;
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

/**
 * The call is over: what it left behind (a ctx kept in a global, a timer
 * or a promise still pending) must not act in a later job's name. The
 * call's `ctx` is ended, the console and the global `fetch` let go of its
 * host, and its pending timers are cleared.
 */
function endCall(call: Call): void {
  if (call.ctx !== undefined) {
    endContext(call.ctx);
    releaseFetch(contextRefusals(call.ctx));
  }
  releaseConsole(call.host);
  clearTimers();
}

async function execute(
  fn: HandlerFn<unknown, unknown>,
  options: HandlerOptions<unknown>,
  job: RawJob,
  call: Call,
): Promise<string> {
  try {
    const data = decodeInput(job.data, options.decode);
    const ctx = openContext(call, jobInfo(job));
    return encodeOutput(await fn(data, ctx));
  } catch (e) {
    let thrown = e;
    if (e instanceof RetryAfterError) {
      // Inngest's RetryAfterError: end the run, to run again after its
      // delay, using up no attempt (the host's `retry-after` does not
      // return; were it to, the error fails the run as a retry).
      try {
        call.host.retryAfter(e.delayMs, e.message);
      } catch (x) {
        thrown = x;
      }
    }
    throw toJobError(thrown) satisfies JobErrorVariant;
  }
}

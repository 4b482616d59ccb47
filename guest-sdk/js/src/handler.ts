// The glue between the component's `run` export and a typed handler.

import { installConsole } from './console';
import { Context } from './context';
import { FatalError, messageOf, toJobError, type JobErrorVariant } from './errors';
import { createHost, ENGINE, jobInfo, type Host } from './host';
import { rawImports, type RawJob } from './raw';
import { settleNow } from './sync-promise';

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
 * {@link FatalError} fails the job at once; any other error is retried per
 * the job's `attempts` (BullMQ semantics).
 */
export function handler<I = unknown, O = unknown>(fn: HandlerFn<I, O>, options: HandlerOptions<I> = {}): Handler {
  if (typeof fn !== 'function') throw new TypeError('handler(fn): fn must be a function (data, ctx) => result');
  return makeRun(fn as HandlerFn<unknown, unknown>, options as HandlerOptions<unknown>, () =>
    createHost(rawImports, ENGINE),
  );
}

/** `handler` over any host (tests inject a fake one). */
export function makeRun(
  fn: HandlerFn<unknown, unknown>,
  options: HandlerOptions<unknown>,
  host: () => Host,
): Handler {
  const run = (job: RawJob): string | Promise<string> => {
    const h = host();
    const result = execute(fn, options, job, h);
    // QuickJS exports `run` synchronously: settle everything now.
    return h.engine === 'quickjs' ? settleQuickJs(result) : result;
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

async function execute(
  fn: HandlerFn<unknown, unknown>,
  options: HandlerOptions<unknown>,
  job: RawJob,
  host: Host,
): Promise<string> {
  try {
    installConsole(host);
    const data = decodeInput(job.data, options.decode);
    const ctx = new Context(jobInfo(job), host);
    return encodeOutput(await fn(data, ctx));
  } catch (e) {
    throw toJobError(e) satisfies JobErrorVariant;
  }
}

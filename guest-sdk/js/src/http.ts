// Helpers that give `fetch` responses the Rust SDK's error semantics.

import { FatalError, RetryableError, messageOf } from './errors';
import { RetryAfterError, laterMs } from './work';

/** The status of a response that {@link ensureOk} refused, on the error it threw. */
export interface HttpStatusFailure {
  readonly status: number;
}

/** Whether a failed status is worth a retry: 5xx, 408 and 429. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/** Options of {@link ensureOk}. */
export interface EnsureOkOptions {
  /**
   * A 429 throws a {@link RetryAfterError} with the delay its `Retry-After`
   * header asks for (see {@link retryAfterFrom}) instead of a
   * {@link RetryableError}: the SDK then ends the run and runs the job
   * again after that delay, using up no attempt.
   */
  retryOn429?: boolean;
}

/**
 * `response` when its status is 2xx; otherwise it throws — a
 * {@link RetryableError} for 5xx/408/429, a {@link FatalError} for any other
 * status — with the message `HTTP status <code>: <start of the body>`
 * (like the Rust SDK's `error_for_status()?`). The error carries `status`.
 * With `retryOn429`, a 429 throws {@link retryAfterFrom}'s
 * {@link RetryAfterError} instead.
 */
export async function ensureOk(response: Response, options: EnsureOkOptions = {}): Promise<Response> {
  if (response.status >= 200 && response.status < 300) return response;
  if (options.retryOn429) {
    const later = retryAfterFrom(response);
    if (later !== undefined) throw later;
  }
  let body = '';
  try {
    body = await response.text();
  } catch {
    // the status says enough
  }
  const message = `HTTP status ${response.status}: ${body.slice(0, 512)}`;
  const error = isRetryableStatus(response.status) ? new RetryableError(message) : new FatalError(message);
  throw Object.assign(error, { status: response.status }) as (RetryableError | FatalError) & HttpStatusFailure;
}

/** The body as JSON; a body that is not JSON is a {@link FatalError} (`response body: ...`). */
export async function readJson<T = unknown>(response: Response): Promise<T> {
  const text = await response.text();
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new FatalError(`response body: ${messageOf(e)}`);
  }
}

/** The delay {@link retryAfterFrom} uses when a 429 has no readable `Retry-After`: one second. */
export const DEFAULT_RETRY_AFTER_MS = 1000;

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94
// 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`): the three forms
// of an HTTP-date (RFC 9110, 5.6.7).
const IMF_DATE = /^[a-z]{3},\s+(\d{1,2})\s+([a-z]{3})\s+(\d{4})\s+(\d{2}):(\d{2}):(\d{2})\s+gmt$/i;
const RFC850_DATE = /^[a-z]+,\s+(\d{1,2})-([a-z]{3})-(\d{2})\s+(\d{2}):(\d{2}):(\d{2})\s+gmt$/i;
const ASCTIME_DATE = /^[a-z]{3}\s+([a-z]{3})\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})\s+(\d{4})$/i;

/** An HTTP-date in epoch milliseconds, or `undefined` when `text` is none. */
function httpDate(text: string): number | undefined {
  let day: string, month: string, year: string, h: string, m: string, s: string;
  let match = IMF_DATE.exec(text);
  if (match) [, day, month, year, h, m, s] = match;
  else if ((match = RFC850_DATE.exec(text))) {
    [, day, month, year, h, m, s] = match;
    // Two-digit years: RFC 9110 reads them within 50 years of now; enough to say 19xx from 70 up.
    year = String(Number(year) + (Number(year) >= 70 ? 1900 : 2000));
  } else if ((match = ASCTIME_DATE.exec(text))) [, month, day, h, m, s, year] = match;
  else return undefined;
  const mon = MONTHS.indexOf(month.toLowerCase());
  if (mon < 0 || Number(h) > 23 || Number(m) > 59 || Number(s) > 60 || Number(day) < 1 || Number(day) > 31) return undefined;
  const ms = Date.UTC(Number(year), mon, Number(day), Number(h), Number(m), Number(s));
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * The delay a `Retry-After` header value asks for, in whole milliseconds
 * (at least 0, at most a day): delay-seconds (`"120"`; a fraction is
 * accepted) or an HTTP-date
 * (`"Wed, 21 Oct 2015 07:28:00 GMT"`, counted from `now`; a past date is
 * 0). `undefined` when the value is missing or neither.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = String(value).trim();
  if (/^\d+(\.\d+)?$/.test(text)) return laterMs(Number(text) * 1000);
  const at = httpDate(text);
  return at === undefined ? undefined : laterMs(at - now);
}

/** The `Retry-After` header of something shaped like a `Response` (a `Headers`, or a plain object). */
function retryAfterHeader(response: Response): string | null | undefined {
  const headers = (response as { headers?: unknown }).headers;
  if (headers === null || typeof headers !== 'object') return undefined;
  const get = (headers as { get?: unknown }).get;
  if (typeof get === 'function') return (get as (name: string) => string | null).call(headers, 'retry-after');
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
    if (k.toLowerCase() === 'retry-after') return v === undefined || v === null ? undefined : String(v);
  }
  return undefined;
}

/**
 * For a 429 (Too Many Requests) response, the {@link RetryAfterError} to
 * throw: its delay is what the `Retry-After` header asks for (seconds or
 * an HTTP-date, see {@link parseRetryAfter}), one second when the header
 * is missing or unreadable, at most a day; its message `HTTP 429 from
 * <the URL without query> (Retry-After: <the header>)`. Any other status:
 * `undefined`.
 *
 * Thrown out of the handler or a step, the error makes the SDK end the run
 * and run the job again after the delay, using up no attempt:
 *
 * ```ts
 * const res = await fetch(url);
 * const later = retryAfterFrom(res);
 * if (later) throw later;
 * ```
 *
 * `ensureOk(res, { retryOn429: true })` and `ctx.fetch(url, { retryOn429:
 * true })` do this for you.
 */
export function retryAfterFrom(response: Response): RetryAfterError | undefined {
  if (response.status !== 429) return undefined;
  const header = retryAfterHeader(response);
  const ms = parseRetryAfter(header);
  const text = header === null || header === undefined ? '' : String(header).trim().slice(0, 64);
  const said =
    text === '' ? 'no Retry-After' : ms === undefined ? `Retry-After "${text}" does not parse` : `Retry-After: ${text}`;
  const url = (response as { url?: unknown }).url;
  const where = typeof url === 'string' && url !== '' ? ` from ${withoutQuery(url)}` : '';
  const error = new RetryAfterError(`HTTP 429${where} (${said})`, ms ?? DEFAULT_RETRY_AFTER_MS);
  return Object.assign(error, { status: 429 }) as RetryAfterError & HttpStatusFailure;
}

/** `url` without its query and fragment (they may hold credentials): for a log line. */
function withoutQuery(url: string): string {
  const end = url.search(/[?#]/);
  return end < 0 ? url : url.slice(0, end);
}

// Helpers that give `fetch` responses the Rust SDK's error semantics.

import { FatalError, RetryableError, messageOf } from './errors';

/** The status of a response that {@link ensureOk} refused, on the error it threw. */
export interface HttpStatusFailure {
  readonly status: number;
}

/** Whether a failed status is worth a retry: 5xx, 408 and 429. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/**
 * `response` when its status is 2xx; otherwise it throws — a
 * {@link RetryableError} for 5xx/408/429, a {@link FatalError} for any other
 * status — with the message `HTTP status <code>: <start of the body>`
 * (like the Rust SDK's `error_for_status()?`). The error carries `status`.
 */
export async function ensureOk(response: Response): Promise<Response> {
  if (response.status >= 200 && response.status < 300) return response;
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

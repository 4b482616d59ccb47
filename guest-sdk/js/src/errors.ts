// The errors a handler throws, the typed error of a failed host call, and
// how any thrown value maps onto the WIT `job-error` (retry or fatal).

/** The WIT `job-error` variant, as both engines' bindings represent it. */
export type JobErrorVariant = { tag: 'retry'; val: string } | { tag: 'fatal'; val: string };

/**
 * A failure no retry can fix (invalid input, a business rule refusing the
 * job): the job fails at once, whatever attempts are left — BullMQ's
 * `UnrecoverableError`.
 */
export class FatalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FatalError';
  }
}

/** BullMQ's name for a {@link FatalError}. */
export const UnrecoverableError = FatalError;

/**
 * A failure worth retrying, per the job's `attempts` and `backoff`. Any
 * other thrown `Error` is retryable too (BullMQ semantics); this class only
 * makes the intent explicit.
 */
export class RetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryableError';
  }
}

/** Why Airlock could not serve a `context`/`config` call (WIT `host-error`). */
export type HostErrorKind = 'unsupported' | 'invalid' | 'limit-exceeded' | 'unavailable';

const HOST_ERROR_KINDS: readonly string[] = ['unsupported', 'invalid', 'limit-exceeded', 'unavailable'];

/**
 * A host call failed. `kind` says why; `detail` is the host's own message;
 * `message` reads like the Rust SDK's (`kv get refused: ...`).
 *
 * Left uncaught it fails the job: `unavailable` (Redis down) as retryable,
 * the other kinds as fatal — retrying cannot fix a refused argument, a
 * missing feature or a limit.
 */
export class HostError extends Error {
  readonly kind: HostErrorKind;
  /** The host call, e.g. `kv get` or ``secret `MAIL_API_KEY` ``. */
  readonly operation: string;
  /** The host's message. */
  readonly detail: string;

  constructor(operation: string, kind: HostErrorKind, detail: string) {
    super(hostErrorMessage(operation, kind, detail));
    this.name = 'HostError';
    this.kind = kind;
    this.operation = operation;
    this.detail = detail;
  }

  /** Whether failing the job with this error retries it. */
  get retryable(): boolean {
    return this.kind === 'unavailable';
  }
}

function hostErrorMessage(what: string, kind: HostErrorKind, detail: string): string {
  switch (kind) {
    case 'unavailable':
      return `${what}: ${detail}`;
    case 'unsupported':
      return `${what} unsupported: ${detail}`;
    case 'invalid':
      return `${what} refused: ${detail}`;
    case 'limit-exceeded':
      return `${what}: limit exceeded: ${detail}`;
  }
}

/**
 * The WIT `host-error` carried by what a failed host import threw, or
 * `undefined` when `thrown` is something else. StarlingMonkey throws an
 * `Error` whose `payload` is the variant; QuickJS throws the variant itself.
 */
export function hostErrorVariant(thrown: unknown): { tag: HostErrorKind; val: string } | undefined {
  let v: unknown = thrown;
  if (v !== null && typeof v === 'object' && 'payload' in v) v = (v as { payload: unknown }).payload;
  if (v === null || typeof v !== 'object') return undefined;
  const { tag, val } = v as { tag?: unknown; val?: unknown };
  if (typeof tag !== 'string' || !HOST_ERROR_KINDS.includes(tag)) return undefined;
  return { tag: tag as HostErrorKind, val: typeof val === 'string' ? val : String(val ?? '') };
}

/** Turns what a host import threw into a {@link HostError} (anything else is returned as is). */
export function toHostError(operation: string, thrown: unknown): unknown {
  const v = hostErrorVariant(thrown);
  return v ? new HostError(operation, v.tag, v.val) : thrown;
}

/**
 * Fails the job as invalid input: a fatal error reading like the Rust SDK's
 * (`invalid job data at field `amount`: expected a number`).
 */
export function invalidData(message: string, field?: string): FatalError {
  return new FatalError(field ? `invalid job data at field \`${field}\`: ${message}` : `invalid job data: ${message}`);
}

/** The message of any thrown value. */
export function messageOf(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message || thrown.name || 'Error';
  if (typeof thrown === 'string') return thrown;
  if (thrown !== null && typeof thrown === 'object') {
    const m = (thrown as { message?: unknown }).message;
    if (typeof m === 'string') return m;
    try {
      const text = JSON.stringify(thrown);
      if (text !== undefined) return text;
    } catch {
      // fall through
    }
  }
  return String(thrown);
}

/**
 * How a thrown value fails the job:
 * - {@link FatalError} (and anything named `UnrecoverableError`) → fatal;
 * - {@link HostError} → retry when `unavailable`, else fatal;
 * - a raw `{ tag: 'retry' | 'fatal', val }` → as it says;
 * - anything else (any `Error`, a string) → retry with its message.
 */
export function toJobError(thrown: unknown): JobErrorVariant {
  if (thrown instanceof FatalError) return { tag: 'fatal', val: thrown.message };
  if (thrown instanceof RetryableError) return { tag: 'retry', val: thrown.message };
  if (thrown instanceof HostError) return { tag: thrown.retryable ? 'retry' : 'fatal', val: thrown.message };
  if (thrown instanceof Error) {
    return { tag: thrown.name === 'UnrecoverableError' ? 'fatal' : 'retry', val: messageOf(thrown) };
  }
  if (thrown !== null && typeof thrown === 'object') {
    const { tag, val } = thrown as { tag?: unknown; val?: unknown };
    if (tag === 'retry' || tag === 'fatal') return { tag, val: typeof val === 'string' ? val : messageOf(val) };
  }
  return { tag: 'retry', val: messageOf(thrown) };
}

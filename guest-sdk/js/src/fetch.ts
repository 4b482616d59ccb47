// Outgoing requests the host refused or cut off, as fatal job errors.
//
// The host refuses a request (the binding's egress list, the operator's,
// the address check, the scheme, `maxHttpRequests`) or cuts it off (a size
// or time cap) with a `wasi:http` error code, which StarlingMonkey turns
// into the same `TypeError` as any network failure. The host records why
// (`context.http-refusals`, airlock:job@0.4.0): after a request or a body
// read fails, the SDK looks there for a refusal it has not used yet and,
// when there is one, fails with a FatalError carrying the host's reason —
// the same request would be refused again on a retry. A failure with no
// new refusal (DNS, connect, reset, a timeout of the handler's own) stays
// what it was.
//
// `ctx.fetch` maps its failures itself. So that plain `await fetch(url)`
// and `await res.text()` in a handler map the same way, the SDK wraps
// `globalThis.fetch` and the body methods of `Response.prototype`
// (StarlingMonkey; QuickJS has no fetch) once, as it does the timers (and
// `fetch` again at a job's start if something replaced the wrapper): the
// wrapper maps the failures of requests made while a job runs, with that
// job's refusals; outside a job it passes everything through.

import { FatalError } from './errors';
import { ENGINE, type Engine, type Host, type RawHttpRefusal } from './host';

/** Why the host refused, or cut off, a request (the WIT `http-refusal-kind`). */
export type HttpRefusalKind =
  | 'egress-rule'
  | 'operator'
  | 'address'
  | 'scheme'
  | 'too-many-requests'
  | 'request-too-large'
  | 'response-too-large'
  | 'timeout';

/** One request the host refused or cut off. */
export interface HttpRefusal {
  readonly kind: HttpRefusalKind;
  /** The request's URL without its query: `https://host[:port]/path`. */
  readonly url: string;
  /** The host's reason, as in the job's log (`api.example.com:443 is not in this queue's egress list`). */
  readonly reason: string;
}

/** What a refused request rejects with: a {@link FatalError} carrying the refusal. */
export interface HttpRefusalFailure {
  readonly refusal: HttpRefusal;
}

/** A {@link FatalError} made by {@link refusalError}. */
export type HttpRefusalError = FatalError & HttpRefusalFailure;

/**
 * The refusals of one job's run that the SDK has already turned into
 * errors. The host numbers a run's refusals from 1 (`seq`) and keeps the
 * newest 32; the SDK remembers the highest `seq` it used, so a refusal
 * becomes at most one error and a failure after it is not blamed on it.
 * One per job: a warm instance's next job counts from 1 again.
 */
export class Refusals {
  readonly #host: Host;
  #used = 0;

  constructor(host: Host) {
    this.#host = host;
  }

  /**
   * The refusal behind a request to `url` that has just failed, or
   * `undefined` when the host recorded none since the last one taken.
   * Among the new ones: the newest for `url` (compared without query),
   * else the newest (a redirect's refused hop has another URL). It and
   * every older one count as used.
   */
  take(url: string | undefined): HttpRefusal | undefined {
    let entries: RawHttpRefusal[];
    try {
      entries = this.#host.httpRefusals();
    } catch {
      return undefined; // the job has ended (its ctx refuses every host call)
    }
    const fresh = entries.filter((r) => r.seq > this.#used);
    if (fresh.length === 0) return undefined;
    const newest = (a: RawHttpRefusal, b: RawHttpRefusal) => (b.seq > a.seq ? b : a);
    const wanted = url === undefined ? undefined : withoutQuery(url);
    const forUrl = fresh.filter((r) => wanted !== undefined && withoutQuery(r.url) === wanted);
    const picked = (forUrl.length > 0 ? forUrl : fresh).reduce(newest);
    this.#used = Math.max(this.#used, picked.seq);
    return Object.freeze({ kind: picked.kind, url: picked.url, reason: picked.reason });
  }
}

/** The error a refused request fails with: ``HTTP request refused: <the host's reason>``. */
export function refusalError(refusal: HttpRefusal, cause?: unknown): HttpRefusalError {
  const error = new FatalError(`HTTP request refused: ${refusal.reason}`, { cause });
  return Object.assign(error, { refusal });
}

/** Whether `e` is a refusal's error already (a wrapped fetch inside another). */
export function isRefusalError(e: unknown): e is HttpRefusalError {
  return e instanceof FatalError && typeof (e as Partial<HttpRefusalFailure>).refusal === 'object';
}

/**
 * What a request to `url` that failed with `error` rejects with: `error`
 * itself when it is a refusal's already, the refusal's error when the host
 * recorded a new one, else `undefined` (not a refusal).
 */
export function refused(refusals: Refusals, error: unknown, url: string | undefined): HttpRefusalError | undefined {
  if (isRefusalError(error)) return error;
  const refusal = refusals.take(url);
  return refusal === undefined ? undefined : refusalError(refusal, error);
}

/** The URL `fetch` was given, as text (`undefined` when there is none to read). */
export function requestUrl(input: unknown): string | undefined {
  if (typeof input === 'string') return input;
  if (input !== null && typeof input === 'object') {
    const url = (input as { url?: unknown; href?: unknown }).url ?? (input as { href?: unknown }).href;
    if (typeof url === 'string') return url;
  }
  return input === undefined || input === null ? undefined : String(input);
}

/** `scheme://host[:port]/path` of `url`: what the host records. */
function withoutQuery(url: string): string {
  if (typeof URL === 'function') {
    try {
      const u = new URL(url);
      return `${u.protocol}//${u.host}${u.pathname}`;
    } catch {
      // not absolute: compare the text
    }
  }
  const end = url.search(/[?#]/);
  return end < 0 ? url : url.slice(0, end);
}

/** The refusals of the job running now: what the global `fetch` maps with. */
let current: Refusals | undefined;
/** The global `fetch` the SDK put in place last. */
let wrapper: typeof fetch | undefined;
/** Whether `Response.prototype`'s body methods are wrapped (or cannot be). */
let responseDone = false;
/** The responses of requests a job made, with that job's refusals. */
const responses = new WeakMap<object, Refusals>();

/** Whether `f` is the SDK's wrapper of the global `fetch` (which maps its failures itself). */
export function isWrappedFetch(f: unknown): boolean {
  return f !== undefined && f === wrapper;
}

/** Remembers that `response` came from a request of the job of `refusals`, for its body reads. */
export function trackResponse(response: unknown, refusals: Refusals): void {
  if (response !== null && typeof response === 'object') responses.set(response, refusals);
}

/**
 * Points the global `fetch` at the job starting now (`refusals`, over its
 * host) until {@link releaseFetch}, wrapping `fetch` and the body methods
 * of `Response` first if that is not done yet. `run` calls it when a job
 * starts.
 */
export function installFetch(refusals: Refusals, engine: Engine): void {
  current = refusals;
  if (engine !== 'quickjs') wrapGlobals();
}

/** Ends `refusals`' hold on the global `fetch` (its job's run has returned). */
export function releaseFetch(refusals: Refusals): void {
  if (current === refusals) current = undefined;
}

/**
 * Wraps `globalThis.fetch` unless it is the SDK's wrapper already, and the
 * body methods of `Response.prototype` (once). Also called when the SDK is
 * loaded, before the handler's module runs: a `fetch` it keeps in a
 * variable is the wrapper too. A `fetch` that replaced the wrapper (a
 * polyfill, a test's stub) is wrapped at the next job's start; wrapping a
 * function that calls the wrapper in turn is harmless, as a refusal's
 * error passes through a wrapper unchanged.
 */
function wrapGlobals(): void {
  const g = globalThis as { fetch?: unknown; Response?: { prototype?: object } };
  const inner = g.fetch;
  if (typeof inner === 'function' && inner !== wrapper) {
    const native = inner as typeof fetch;
    const wrapped = function fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
      const refusals = current; // the job making the request, also when it fails later
      const sent = native.call(globalThis, input, init);
      if (refusals === undefined) return sent;
      return Promise.resolve(sent).then(
        (response) => {
          trackResponse(response, refusals);
          return response;
        },
        (error: unknown) => {
          throw refused(refusals, error, requestUrl(input)) ?? error;
        },
      );
    } as typeof fetch;
    try {
      g.fetch = wrapped;
      wrapper = wrapped;
    } catch {
      // a read-only fetch stays as it is: ctx.fetch still maps
    }
  }
  if (!responseDone) {
    responseDone = true;
    const proto = g.Response?.prototype as Record<string, unknown> | undefined;
    if (proto !== undefined) wrapBodyMethods(proto);
  }
}

/** The `Response` methods that read the whole body. */
const BODY_METHODS = ['arrayBuffer', 'blob', 'bytes', 'formData', 'json', 'text'] as const;

/**
 * Makes the body methods of responses a job's requests returned reject
 * with a refusal's error when the host cut the body off (a size or time
 * cap); `clone()` hands its response's job on to the clone. Responses the
 * SDK did not see come back from a request (made with `new Response`, or
 * before any job) read as ever. A body read through `res.body` (a stream
 * reader) is not mapped.
 */
function wrapBodyMethods(proto: Record<string, unknown>): void {
  for (const name of BODY_METHODS) {
    const original = proto[name];
    if (typeof original !== 'function') continue;
    const read = original as (this: unknown, ...args: unknown[]) => Promise<unknown>;
    const wrapped = function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const reading = read.apply(this, args);
      const refusals = this !== null && typeof this === 'object' ? responses.get(this) : undefined;
      if (refusals === undefined) return reading;
      const url = (this as { url?: unknown }).url;
      return reading.then(undefined, (error: unknown) => {
        throw refused(refusals, error, typeof url === 'string' && url !== '' ? url : undefined) ?? error;
      });
    };
    try {
      proto[name] = wrapped;
    } catch {
      // a read-only method stays as it is
    }
  }
  const clone = proto.clone;
  if (typeof clone === 'function') {
    const original = clone as (this: unknown) => unknown;
    try {
      proto.clone = function (this: unknown): unknown {
        const copy = original.call(this);
        const refusals = this !== null && typeof this === 'object' ? responses.get(this) : undefined;
        if (refusals !== undefined) trackResponse(copy, refusals);
        return copy;
      };
    } catch {
      // as above
    }
  }
}

if (ENGINE !== 'quickjs') wrapGlobals();

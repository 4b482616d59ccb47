// The handle a handler uses to talk to Airlock while it runs.

import { parseDuration, type Duration } from './duration';
import { FatalError, RetryableError, messageOf } from './errors';
import { parseEvent, type Event } from './event';
import { Refusals, isRefusalError, isWrappedFetch, refused, requestUrl, trackResponse } from './fetch';
import type { Host, JobInfo, LogLevel, RawEventMatch } from './host';
import { retryAfterFrom } from './http';
import {
  InvokeError,
  RetryAfterError,
  childEndOf,
  jsonText,
  laterMs,
  rawNewJob,
  type ChildEnd,
  type InvokeManyOptions,
  type InvokeOptions,
  type NewJob,
} from './work';

/** Any value `JSON.stringify` writes. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Points at a job in some queue. */
export interface JobRef {
  readonly queue: string;
  readonly id: string;
}

/** One child of a flow parent and its outcome. */
export type ChildResult =
  | { readonly child: JobRef; readonly status: 'completed'; readonly value: unknown }
  | { readonly child: JobRef; readonly status: 'failed'; readonly reason: string };

/** Options of {@link Kv.set} and {@link Kv.setIfAbsent}. */
export interface KvSetOptions {
  /** Expire the key after this many milliseconds. */
  ttlMs?: number;
  /** Expire the key after this duration (`"24h"`, or milliseconds). */
  ttl?: Duration;
}

/** Log lines in the job's log (BullMQ job logs). */
export interface Logger {
  trace(message: string): void;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** The handler's key-value store: namespaced per handler name, optional TTL. */
export interface Kv {
  /** The value under `key`, or `undefined`. */
  get(key: string): string | undefined;
  /** Store `value` under `key`. */
  set(key: string, value: string, options?: KvSetOptions): void;
  /** Store `value` only when `key` is absent; `true` when this call stored it (first writer wins). */
  setIfAbsent(key: string, value: string, options?: KvSetOptions): boolean;
  /** Delete `key`; `true` when it existed. */
  delete(key: string): boolean;
}

/** The queue binding's `config` map. */
export interface Config {
  /** The value of `key`, or `undefined` when the binding does not set it. */
  get(key: string): string | undefined;
  /** The value of `key`; a {@link FatalError} naming the key when it is not set. */
  require(key: string): string;
  /** The keys the binding sets, sorted. */
  keys(): string[];
}

/**
 * Which events a {@link Steps.waitForEvent} accepts beyond their name: those
 * whose `data` holds `value` at `path`.
 */
export interface EventMatch {
  /**
   * A JSON path into the event's `data`: `$` then 1 to 16 `.name` segments
   * of letters, digits, `_` or `-` (`"$.refundId"`, `"$.order.id"`).
   */
  path: string;
  /**
   * The value the event must hold there. It is sent as its JSON
   * (`JSON.stringify`) and compared as a JSON value, not as text: `"r1"`
   * matches the string `"r1"` only, `42` the number 42.
   */
  value: unknown;
}

/** Options of {@link Steps.waitForEvent}. */
export interface WaitForEventOptions {
  /** Accept only events whose `data` holds this value at this path. */
  match?: EventMatch;
  /**
   * How long to wait (`"7d"`, `"30s"`, or milliseconds), from the first time
   * the job reached the wait; at most a year.
   */
  timeout: Duration;
}

/** Options of {@link Steps.waitForToken}. */
export interface WaitForTokenOptions {
  /**
   * How long to wait (`"3d"`, `"1h"`, or milliseconds), from the first time
   * the job reached the wait; at most a year.
   */
  timeout: Duration;
}

/** Durable steps, sleeps and waits (Inngest's `step`). */
export interface Steps {
  /**
   * Runs `fn` until its result is recorded, then never again for this job
   * (durably, at least once: a host that dies after `fn` ran but before its
   * record runs it again). The first run records its JSON result;
   * any later run of the same job (retry, wake-up after a sleep, recovery
   * after a crash) gets the recorded result back without running `fn`.
   * A failing `fn` records nothing. The value returned is the JSON round
   * trip of `fn`'s result (the same on the first run and on replays;
   * `undefined` becomes `null`). Repeated ids in one run are recorded per
   * occurrence (`id`, `id#2`, ...).
   */
  run<T>(id: string, fn: () => T | Promise<T>): Promise<Jsonified<T>>;
  /** Durable sleep for `duration` (`"24h"`, `"30s"`, or milliseconds): the job is parked as delayed. */
  sleep(id: string, duration: Duration): Promise<void>;
  /** Durable sleep until `when` (a `Date`, epoch milliseconds or an ISO date). */
  sleepUntil(id: string, when: Date | number | string): Promise<void>;
  /**
   * Durable wait for an event (Inngest's `step.waitForEvent`): resolves with
   * the first event named `event` — and, with `options.match`, whose `data`
   * holds `match.value` at `match.path` — sent to `POST /v1/events` since
   * the job became ready to run (its enqueue time plus delay) that no other
   * wait of this job received; `null` when `options.timeout`, counted from
   * the first time the job reached this wait, passes first.
   *
   * Unless a matching event came already (it then resolves at once), the
   * job is parked like in {@link Steps.sleep}: the instance stops (the
   * promise never settles in that run), holding no worker slot and using
   * up no attempt. The event wakes the job; it runs again from the start,
   * replays its recorded steps, and this call then resolves with the
   * event. So an event sent before the wait (while the job still runs,
   * say) is not lost: the fleet keeps its last ~10,000 events (of at most
   * 64 KiB each), and a wait looks back at the newest 1,000 sent since its
   * job became ready. The outcome — the event or the
   * timeout — is recorded: every later run gets the same one. An event sent
   * with a producer token reaches only the jobs that token enqueued.
   *
   * Repeated ids in one run are told apart per occurrence (`id`, `id#2`,
   * ...), counted separately from steps and sleeps. Failures: a bad
   * `match.path`, a `match.value` the host refuses or a timeout over a year
   * fail the job fatally (`HostError` `invalid`: `wait for event refused:
   * ...`), as do waits for this event name already matching on 32 other
   * paths (`limit-exceeded`) and `airlock run`, where no events arrive
   * (`unsupported`); Redis being down is retried (`unavailable`). A
   * `match.value` that `JSON.stringify` cannot encode is a
   * {@link FatalError}.
   */
  waitForEvent<T = unknown>(id: string, event: string, options: WaitForEventOptions): Promise<Event<T> | null>;
  /**
   * The completion token of the next {@link Steps.waitForToken} with this id
   * (Trigger.dev's waitpoint tokens): created on the first call, the same on
   * every run. Hand it out — in an approval link, as a callback URL —
   * before waiting: whoever holds it completes the wait once with `POST
   * /v1/tokens/{token}/complete` and a JSON body, no other credential
   * needed (so treat it as a secret). A completion that comes before the
   * wait is kept for it.
   *
   * It does not count as an occurrence of `id`: call it before the
   * `waitForToken` with the same id (in a loop, each turn's `waitToken`
   * gives the token of that turn's wait).
   */
  waitToken(id: string): Promise<string>;
  /**
   * Durable wait for the completion of this wait's token (see
   * {@link Steps.waitToken}; created here if `waitToken` was not called):
   * parks the job like {@link Steps.waitForEvent} and resolves with the
   * JSON body the token was completed with, parsed, or `null` once
   * `options.timeout` has passed since the job first reached the wait. The
   * outcome is recorded: every later run gets the same one. The token is
   * used up either way: completing it again, or after the timeout, is
   * refused (409). A token completed with the JSON `null` also resolves
   * `null`: complete it with an object to tell the two apart.
   *
   * Repeated ids in one run are told apart per occurrence (`id`, `id#2`,
   * ...), under the same count as {@link Steps.waitForEvent}.
   */
  waitForToken<T = unknown>(id: string, options: WaitForTokenOptions): Promise<T | null>;
}

/** What a value looks like after `JSON.parse(JSON.stringify(value))`. */
export type Jsonified<T> = T extends undefined | void
  ? null
  : T extends { toJSON(): infer R }
    ? R
    : T extends Json
      ? T
      : T extends (infer U)[]
        ? Jsonified<U>[]
        : T extends object
          ? { [K in keyof T]: Jsonified<T[K]> }
          : T;

/** `init` of {@link Context.fetch}: `fetch`'s, plus a per-request timeout and the 429 helper. */
export interface FetchInit extends RequestInit {
  /** Give up after this many milliseconds (the job's deadline caps it in any case). */
  timeoutMs?: number;
  /**
   * A 429 (Too Many Requests) response ends the run, and the job runs
   * again after the delay its `Retry-After` header asks for (seconds or an
   * HTTP-date; one second when it is missing or unreadable; at most a
   * day), using up no attempt: {@link Context.retryAfter}. The promise
   * then never resolves. Off by default: the 429 comes back like any
   * response.
   */
  retryOn429?: boolean;
}

/**
 * Whether a job's run has returned. Shared by its {@link Context} and the
 * host calls behind it; set by {@link endContext}.
 */
interface Lifetime {
  ended: boolean;
}

const lifetimes = new WeakMap<Context, Lifetime>();
/** Each context's {@link Refusals}: shared with the global `fetch` while its job runs. */
const refusalsOfContext = new WeakMap<Context, Refusals>();

/**
 * What each host call is to the handler, for the error an ended `ctx`
 * throws. Typed over {@link Host}, so a new host call cannot be left
 * unguarded.
 */
const CALLS: { readonly [K in Exclude<keyof Host, 'engine'>]: string } = {
  log: 'ctx.log',
  reportProgress: 'ctx.progress',
  stepLookup: 'ctx.step.run',
  stepRecord: 'ctx.step.run',
  sleepUntil: 'ctx.step.sleep',
  waitForEvent: 'ctx.step.waitForEvent',
  waitToken: 'ctx.step.waitToken',
  waitForToken: 'ctx.step.waitForToken',
  childrenResults: 'ctx.children',
  httpRefusals: 'ctx.fetch',
  kvGet: 'ctx.kv.get',
  kvSet: 'ctx.kv.set',
  kvSetIfAbsent: 'ctx.kv.setIfAbsent',
  kvDelete: 'ctx.kv.delete',
  enqueue: 'ctx.enqueue',
  invoke: 'ctx.invoke',
  sendEvent: 'ctx.sendEvent',
  retryAfter: 'ctx.retryAfter',
  rateLimit: 'ctx.rateLimit',
  configGet: 'ctx.config',
  configKeys: 'ctx.config.keys',
  secret: 'ctx.secret',
  revealSecret: 'ctx.revealSecret',
};

/** The error of a `ctx` used after its job's run returned. */
function endedError(jobId: string, call: string): FatalError {
  return new FatalError(
    `this job (${jobId}) has ended; ctx cannot be used after the handler returned (${call}: a ctx kept in a global, or used by a timer or promise the job left pending)`,
  );
}

/** `host` with every call refused once `lifetime` has ended, before it reaches the host. */
function guardedHost(host: Host, jobId: string, lifetime: Lifetime): Host {
  const guarded: Record<string, unknown> = { engine: host.engine };
  for (const name of Object.keys(CALLS) as (keyof typeof CALLS)[]) {
    const call = host[name] as (...args: unknown[]) => unknown;
    guarded[name] = (...args: unknown[]) => {
      if (lifetime.ended) throw endedError(jobId, CALLS[name]);
      return call.apply(host, args);
    };
  }
  return guarded as unknown as Host;
}

/**
 * Ends `ctx`: from now on every call through it (and its `step`, `log`,
 * `kv`, `config`) throws a {@link FatalError} naming its job, without
 * reaching the host. The SDK's `run` calls it when the handler's run has
 * returned, so that on a reused (warm) instance nothing a job left behind
 * acts in a later job's name. `ctx.job` stays readable.
 */
export function endContext(ctx: Context): void {
  const lifetime = lifetimes.get(ctx);
  if (lifetime !== undefined) lifetime.ended = true;
}

/**
 * The refusals `ctx`'s job has used (over its guarded host): the SDK's
 * `run` points the global `fetch` at them while the job runs, so that
 * `ctx.fetch` and plain `fetch` never turn one refusal into two errors.
 */
export function contextRefusals(ctx: Context): Refusals {
  const refusals = refusalsOfContext.get(ctx);
  if (refusals === undefined) throw new TypeError('contextRefusals: not a Context made by the SDK');
  return refusals;
}

/**
 * The running job's link to Airlock. It works while the job's run lasts:
 * once the handler has returned (or thrown), every call through it throws
 * a {@link FatalError} (`this job (<id>) has ended; ...`) — keep no `ctx`
 * past its job.
 */
export class Context {
  /** The job being run. */
  readonly job: JobInfo;
  /** Durable steps, sleeps and waits. */
  readonly step: Steps;
  /** The job's log. */
  readonly log: Logger;
  /** The key-value store. */
  readonly kv: Kv;
  /** The binding's configuration. */
  readonly config: Config;

  readonly #host: Host;
  readonly #refusals: Refusals;
  readonly #lifetime: Lifetime = { ended: false };
  readonly #occurrences = new Map<string, number>();

  constructor(job: JobInfo, rawHost: Host) {
    this.job = job;
    lifetimes.set(this, this.#lifetime);
    const host = guardedHost(rawHost, job.id, this.#lifetime);
    this.#host = host;
    this.#refusals = new Refusals(host);
    refusalsOfContext.set(this, this.#refusals);
    const line = (level: LogLevel) => (message: string) => host.log(level, String(message));
    this.log = Object.freeze({
      trace: line('trace'),
      debug: line('debug'),
      info: line('info'),
      warn: line('warn'),
      error: line('error'),
    });
    this.kv = Object.freeze({
      get: (key: string) => host.kvGet(key),
      set: (key: string, value: string, options?: KvSetOptions) =>
        host.kvSet(key, kvValue(value), ttlOf(options)),
      setIfAbsent: (key: string, value: string, options?: KvSetOptions) =>
        host.kvSetIfAbsent(key, kvValue(value), ttlOf(options)),
      delete: (key: string) => host.kvDelete(key),
    });
    this.config = Object.freeze({
      get: (key: string) => host.configGet(key),
      require: (key: string) => {
        const value = host.configGet(key);
        if (value === undefined) {
          throw new FatalError(`configuration \`${key}\` is not set in this queue's binding (config.${key})`);
        }
        return value;
      },
      keys: () => host.configKeys(),
    });
    this.step = Object.freeze({
      run: <T>(id: string, fn: () => T | Promise<T>) => this.#stepRun(id, fn),
      sleep: async (id: string, duration: Duration) => {
        const ms = parseDuration(duration);
        this.#sleepUntil(id, Date.now() + ms);
      },
      sleepUntil: async (id: string, when: Date | number | string) => {
        this.#sleepUntil(id, wakeTime(when));
      },
      waitForEvent: async <T = unknown>(id: string, event: string, options: WaitForEventOptions) =>
        this.#waitForEvent<T>(id, event, options),
      waitToken: async (id: string) => this.#host.waitToken(this.#nextOccurrenceKey('wait', id)),
      waitForToken: async <T = unknown>(id: string, options: WaitForTokenOptions) => this.#waitForToken<T>(id, options),
    });
  }

  /**
   * Report progress: a number is a percentage (clamped to 0–100), anything
   * else is stored as JSON. Best effort: never fails the job.
   */
  progress(value: number | Json | object): void {
    this.#check('ctx.progress');
    if (typeof value === 'number') {
      const percent = Number.isFinite(value) ? Math.min(100, Math.max(0, Math.floor(value))) : 0;
      this.#host.reportProgress({ tag: 'percent', val: percent });
      return;
    }
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch {
      return;
    }
    if (text !== undefined) this.#host.reportProgress({ tag: 'json', val: text });
  }

  /** The outcomes of this job's flow children (empty for a job without any). */
  children(): ChildResult[] {
    return this.#host.childrenResults().map((r): ChildResult => {
      const child = Object.freeze({ queue: r.child.queue, id: r.child.id });
      if (r.outcome.tag === 'completed') {
        let value: unknown;
        try {
          value = JSON.parse(r.outcome.val);
        } catch {
          value = r.outcome.val;
        }
        return { child, status: 'completed', value };
      }
      return { child, status: 'failed', reason: r.outcome.val };
    });
  }

  /** The return values of the children that completed. */
  childrenValues<T = unknown>(): T[] {
    return this.children().flatMap((c) => (c.status === 'completed' ? [c.value as T] : []));
  }

  /**
   * A placeholder for the binding's secret `name`: put it in a request
   * header (or body, when the secret allows) and the host sends the value
   * instead, to the secret's destinations only.
   */
  secret(name: string): string {
    return this.#host.secret(name);
  }

  /**
   * The value of secret `name` itself (secrets set with `reveal` only); it
   * is then redacted from the job's logs, output, steps and failure reason.
   */
  revealSecret(name: string): string {
    return this.#host.revealSecret(name);
  }

  /**
   * Adds `job` to its queue, once: a step with id `id` (it shares the
   * steps' occurrence count, so a repeated id gets `id#2`, ...). A replay
   * adds nothing new, nor does a rerun after a crash between the add and
   * its record (the job's id is derived from this job's and the step's).
   * The job belongs to this job's producer and continues its trace. Fire
   * and forget: resolves with where it went, `{ queue, id }`. A queue the
   * binding's `starts.queues` does not allow fails this job at once
   * (`guest_fatal`, saying why).
   */
  async enqueue(id: string, job: NewJob): Promise<JobRef> {
    this.#check('ctx.enqueue');
    const raw = rawNewJob(job, `enqueue \`${id}\``);
    const ref = this.#host.enqueue(this.#occurrenceKey('step', id), raw);
    return Object.freeze({ queue: ref.queue, id: ref.id });
  }

  /**
   * Starts `job` as a child of this job and resolves with its return value
   * once it has ended (Inngest's `step.invoke`); rejects with an
   * {@link InvokeError} when it failed for good (after its retries:
   * `kind: 'failed'`, its `failure`) or `options.timeout` ran out first
   * (`kind: 'timedOut'`). Uncaught, that error fails this job fatally.
   *
   * The first time, the job parks (the promise never settles in that
   * run), holding no worker slot and no instance, until the child has
   * ended; it then runs again from the start, replays its steps, and this
   * call resolves. Keep side effects before it in steps. Repeated ids in
   * one run are `id`, `id#2`, ... (one count with {@link Context.invokeMany}).
   */
  async invoke<T = unknown>(id: string, job: NewJob, options: InvokeOptions = {}): Promise<T> {
    const [end] = this.#invoke<T>(id, [job], { timeout: options.timeout }, 'ctx.invoke');
    if (end === undefined) throw new RetryableError(`invoke \`${id}\`: the host answered no end`);
    if (end.status === 'completed') return end.value;
    throw new InvokeError(id, end);
  }

  /**
   * Starts `jobs` as children of this job (a fan-out, at most 10,000) and
   * resolves once every one has ended: their ends in the order of `jobs`
   * (`{ status: 'completed', value }`, `{ status: 'failed', failure }` or
   * `{ status: 'timedOut' }`), a failed child hiding none of the others'
   * values. Parks the job like {@link Context.invoke}. `maxRunning`: at
   * most that many run at once (they start in groups of that size, each
   * once the one before has ended); `timeout`: the children still running
   * then end as `timedOut` (they are left to run).
   */
  async invokeMany<T = unknown>(id: string, jobs: NewJob[], options: InvokeManyOptions = {}): Promise<ChildEnd<T>[]> {
    return this.#invoke<T>(id, jobs, options, 'ctx.invokeMany');
  }

  /**
   * Sends event `name` with `data`, once: a step with id `id` (the steps'
   * occurrence count). It reaches the queues subscribed to `name` and the
   * jobs waiting for it, as `POST /v1/events` does, sent as this job's
   * producer; a replay sends nothing new. Resolves with the event's id.
   * An event the binding's `starts.events` does not allow fails the job at
   * once.
   */
  async sendEvent(id: string, name: string, data?: unknown): Promise<string> {
    this.#check('ctx.sendEvent');
    const text = jsonText(data, `the data of event \`${name}\` (send \`${id}\`)`);
    return this.#host.sendEvent(this.#occurrenceKey('step', id), String(name), text);
  }

  /**
   * Ends this run; the job runs again after `delay` (`"30s"`, milliseconds,
   * or a `Date` to run at; cut to a day), using up no attempt — for an
   * API's `Retry-After`. `reason` goes to the job's log. A job may ask
   * this 100 times; past that the run fails as an ordinary retry (which
   * uses an attempt). Never resolves: `return ctx.retryAfter(...)`.
   * Throwing a {@link RetryAfterError} does the same.
   */
  async retryAfter(delay: Duration | Date, reason: string): Promise<never> {
    this.#check('ctx.retryAfter');
    this.#endForRetry(delayMs(delay), String(reason));
  }

  /**
   * Ends this run, pauses the whole queue for `duration` (cut to a day)
   * across the fleet, and puts the job back, using up no attempt
   * (BullMQ's `worker.rateLimit`). The queue pauses only when its binding
   * has a `rateLimit`; elsewhere this job alone waits `duration`, as with
   * {@link Context.retryAfter}, and its log says so. Never resolves.
   */
  async rateLimit(duration: Duration, reason: string): Promise<never> {
    this.#check('ctx.rateLimit');
    const ms = delayMs(duration);
    this.#host.rateLimit(ms, String(reason));
    throw new RetryableError(`rate limit for ${ms} ms: ${reason} (the host did not end the run)`);
  }

  /**
   * `fetch` (StarlingMonkey only), with failures mapped like the Rust SDK's
   * HTTP client. A request the host refused — by the binding's egress
   * list, the operator's, the address check, the scheme or
   * `maxHttpRequests` — or cut off at a size or time cap rejects with a
   * {@link FatalError} `HTTP request refused: <the host's reason>`, the
   * refusal (`kind`, `url`, `reason`) on its `refusal`: a retry would be
   * refused too. Any other failure to get a response (DNS, connect, reset,
   * `timeoutMs`) rejects with a {@link RetryableError} (`HTTP transport:
   * ...`). Reading the body (`text()`, `json()`, `arrayBuffer()`, `blob()`)
   * fails with the refusal's error when the host cut the body off.
   * Responses come back whatever their status: pass them to
   * {@link ensureOk}. With `init.retryOn429`, a 429 ends the run instead,
   * to run again after its `Retry-After` ({@link FetchInit.retryOn429}).
   */
  async fetch(input: string | URL | Request, init?: FetchInit): Promise<Response> {
    this.#check('ctx.fetch');
    const f = (globalThis as { fetch?: typeof fetch }).fetch;
    if (typeof f !== 'function') {
      throw new FatalError(
        `fetch is not available on the ${this.#host.engine} engine (build with --engine starlingmonkey for outgoing HTTP)`,
      );
    }
    const { timeoutMs, retryOn429, ...rest } = init ?? {};
    if (timeoutMs !== undefined && rest.signal == null && typeof AbortSignal !== 'undefined' && typeof AbortSignal.timeout === 'function') {
      rest.signal = AbortSignal.timeout(timeoutMs);
    }
    let response: Response;
    try {
      response = await f(input, rest);
    } catch (e) {
      // The SDK's wrapper of the global fetch has looked for a refusal
      // already; a fetch that replaced it has not.
      if (isRefusalError(e)) throw e;
      const refusal = isWrappedFetch(f) ? undefined : refused(this.#refusals, e, requestUrl(input));
      if (refusal !== undefined) throw refusal;
      if (e instanceof Error && e.name === 'TimeoutError') {
        throw new RetryableError(`HTTP transport: timed out after ${timeoutMs} ms`, { cause: e });
      }
      throw new RetryableError(`HTTP transport: ${messageOf(e)}`, { cause: e });
    }
    trackResponse(response, this.#refusals);
    if (retryOn429) {
      const later = retryAfterFrom(response);
      if (later !== undefined) this.#endForRetry(later.delayMs, later.message);
    }
    return response;
  }

  /** Ends the run to run again in `ms` (the host's `retry-after` does not return). */
  #endForRetry(ms: number, reason: string): never {
    this.#host.retryAfter(ms, reason);
    throw new RetryableError(`retry after ${ms} ms: ${reason} (the host did not end the run)`);
  }

  #invoke<T>(id: string, jobs: NewJob[], options: InvokeManyOptions, call: string): ChildEnd<T>[] {
    this.#check(call);
    if (!Array.isArray(jobs)) throw new FatalError(`invoke \`${id}\`: jobs must be an array`);
    const raw = jobs.map((job, i) => rawNewJob(job, `invoke \`${id}\`${jobs.length > 1 ? ` (job ${i})` : ''}`));
    const maxRunning = options.maxRunning;
    if (maxRunning !== undefined && (!Number.isInteger(maxRunning) || maxRunning < 1 || maxRunning > 0xffff_ffff)) {
      throw new FatalError(`invoke \`${id}\`: maxRunning must be a whole number from 1 (got ${String(maxRunning)})`);
    }
    const timeoutMs = options.timeout === undefined || options.timeout === null ? undefined : Math.floor(parseDuration(options.timeout));
    const ends = this.#host.invoke(this.#occurrenceKey('invoke', id), raw, maxRunning, timeoutMs);
    return ends.map((end) => childEndOf<T>(end, id));
  }

  /** Throws when this context's job has ended (for calls that may not reach the host). */
  #check(call: string): void {
    if (this.#lifetime.ended) throw endedError(this.job.id, call);
  }

  async #stepRun<T>(id: string, fn: () => T | Promise<T>): Promise<Jsonified<T>> {
    const key = this.#occurrenceKey('step', id);
    const recorded = this.#host.stepLookup(key);
    if (recorded !== undefined) {
      try {
        return JSON.parse(recorded) as Jsonified<T>;
      } catch (e) {
        throw new FatalError(`recorded result of step \`${id}\` no longer fits its type: ${messageOf(e)}`);
      }
    }
    let value: T;
    try {
      value = await fn();
    } catch (e) {
      // Inngest's RetryAfterError out of a step: the run ends here (the
      // step records nothing), whatever the handler would catch.
      if (e instanceof RetryAfterError) this.#endForRetry(e.delayMs, e.message);
      throw e;
    }
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (e) {
      throw new FatalError(`result of step \`${id}\` is not serialisable: ${messageOf(e)}`);
    }
    if (text === undefined) text = 'null';
    this.#host.stepRecord(key, text);
    return JSON.parse(text) as Jsonified<T>;
  }

  #sleepUntil(id: string, wakeAtMs: number): void {
    const key = this.#occurrenceKey('sleep', id);
    this.#host.sleepUntil(key, wakeAtMs);
  }

  #waitForEvent<T>(id: string, event: string, options: WaitForEventOptions): Event<T> | null {
    const timeoutMs = waitTimeout(id, options);
    const match = options.match == null ? undefined : eventMatch(id, options.match);
    const key = this.#occurrenceKey('wait', id);
    const text = this.#host.waitForEvent(key, event, match, timeoutMs);
    if (text === undefined) return null;
    try {
      return parseEvent<T>(text);
    } catch (e) {
      throw new FatalError(`the event of wait \`${id}\` does not parse: ${messageOf(e)}`);
    }
  }

  #waitForToken<T>(id: string, options: WaitForTokenOptions): T | null {
    const timeoutMs = waitTimeout(id, options);
    const key = this.#occurrenceKey('wait', id);
    const text = this.#host.waitForToken(key, timeoutMs);
    if (text === undefined) return null;
    try {
      return JSON.parse(text) as T;
    } catch (e) {
      throw new FatalError(`the result of wait \`${id}\` does not parse: ${messageOf(e)}`);
    }
  }

  /** `id` for its first use in this run, `id#2`, `id#3`, ... afterwards (per kind). */
  #occurrenceKey(kind: OccurrenceKind, id: string): string {
    const counter = `${kind}:${id}`;
    const n = (this.#occurrences.get(counter) ?? 0) + 1;
    this.#occurrences.set(counter, n);
    return occurrence(id, n);
  }

  /** The key the next `#occurrenceKey` call will give, without counting it. */
  #nextOccurrenceKey(kind: OccurrenceKind, id: string): string {
    return occurrence(id, (this.#occurrences.get(`${kind}:${id}`) ?? 0) + 1);
  }
}

/**
 * Steps, sleeps, waits and invokes count their occurrences separately
 * (`enqueue` and `sendEvent` are steps).
 */
type OccurrenceKind = 'step' | 'sleep' | 'wait' | 'invoke';

/** The record key of occurrence `n` (from 1) of `id` in one run. */
function occurrence(id: string, n: number): string {
  return n === 1 ? id : `${id}#${n}`;
}

/** A wait's timeout in whole milliseconds. */
function waitTimeout(id: string, options: { timeout?: Duration } | undefined): number {
  if (options?.timeout === undefined || options.timeout === null) {
    throw new FatalError(`wait \`${id}\` needs a timeout (\`timeout: "7d"\`, \`"30s"\` or milliseconds)`);
  }
  return Math.floor(parseDuration(options.timeout));
}

/** The WIT `event-match` of a {@link EventMatch}: its value as JSON text. */
function eventMatch(id: string, match: EventMatch): RawEventMatch {
  let value: string | undefined;
  try {
    value = JSON.stringify(match.value);
  } catch (e) {
    throw new FatalError(`the match value of wait \`${id}\` is not serialisable: ${messageOf(e)}`);
  }
  if (value === undefined) {
    throw new FatalError(`the match value of wait \`${id}\` is not serialisable: ${typeof match.value} has no JSON`);
  }
  return { path: String(match.path), value };
}

function kvValue(value: unknown): string {
  if (typeof value !== 'string') {
    throw new TypeError(`kv values are strings (got ${typeof value}); JSON.stringify it first`);
  }
  return value;
}

function ttlOf(options: KvSetOptions | undefined): number | undefined {
  if (!options) return undefined;
  const ms = options.ttlMs !== undefined ? parseDuration(options.ttlMs) : options.ttl !== undefined ? parseDuration(options.ttl) : undefined;
  return ms === undefined ? undefined : Math.max(1, Math.floor(ms));
}

function wakeTime(when: Date | number | string): number {
  const ms = when instanceof Date ? when.getTime() : typeof when === 'string' ? Date.parse(when) : when;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new FatalError(`invalid wake-up time ${String(when)}`);
  }
  return Math.max(0, ms);
}

/** A `retry-after`/`rate-limit` delay in whole milliseconds (a `Date`: from now), within 0 to a day. */
function delayMs(delay: Duration | Date): number {
  return laterMs(delay instanceof Date ? delay.getTime() - Date.now() : parseDuration(delay));
}

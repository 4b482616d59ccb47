// The handle a handler uses to talk to Airlock while it runs.

import { parseDuration, type Duration } from './duration';
import { FatalError, RetryableError, messageOf } from './errors';
import type { Host, JobInfo, LogLevel } from './host';

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

/** Durable steps and sleeps (Inngest's `step`). */
export interface Steps {
  /**
   * Runs `fn` once per job, durably. The first run records its JSON result;
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

/** `init` of {@link Context.fetch}: `fetch`'s, plus a per-request timeout. */
export interface FetchInit extends RequestInit {
  /** Give up after this many milliseconds (the job's deadline caps it in any case). */
  timeoutMs?: number;
}

/** The running job's link to Airlock. */
export class Context {
  /** The job being run. */
  readonly job: JobInfo;
  /** Durable steps and sleeps. */
  readonly step: Steps;
  /** The job's log. */
  readonly log: Logger;
  /** The key-value store. */
  readonly kv: Kv;
  /** The binding's configuration. */
  readonly config: Config;

  readonly #host: Host;
  readonly #occurrences = new Map<string, number>();

  constructor(job: JobInfo, host: Host) {
    this.job = job;
    this.#host = host;
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
    });
  }

  /**
   * Report progress: a number is a percentage (clamped to 0–100), anything
   * else is stored as JSON. Best effort: never fails the job.
   */
  progress(value: number | Json | object): void {
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
   * `fetch` (StarlingMonkey only), with failures mapped like the Rust SDK's
   * HTTP client: a request that could not be sent — refused by the
   * binding's egress rules, or a transport failure — rejects with a
   * {@link RetryableError} (`HTTP transport: ...`); the engine reports
   * both the same way. Responses come back whatever their status: pass
   * them to {@link ensureOk}.
   */
  async fetch(input: string | URL | Request, init?: FetchInit): Promise<Response> {
    const f = (globalThis as { fetch?: typeof fetch }).fetch;
    if (typeof f !== 'function') {
      throw new FatalError(
        `fetch is not available on the ${this.#host.engine} engine (build with --engine starlingmonkey for outgoing HTTP)`,
      );
    }
    const { timeoutMs, ...rest } = init ?? {};
    if (timeoutMs !== undefined && rest.signal == null && typeof AbortSignal !== 'undefined' && typeof AbortSignal.timeout === 'function') {
      rest.signal = AbortSignal.timeout(timeoutMs);
    }
    try {
      return await f(input, rest);
    } catch (e) {
      if (e instanceof Error && e.name === 'TimeoutError') {
        throw new RetryableError(`HTTP transport: timed out after ${timeoutMs} ms`, { cause: e });
      }
      throw new RetryableError(`HTTP transport: ${messageOf(e)}`, { cause: e });
    }
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
    const value = await fn();
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

  /** `id` for its first use in this run, `id#2`, `id#3`, ... afterwards (per kind). */
  #occurrenceKey(kind: 'step' | 'sleep', id: string): string {
    const counter = `${kind}:${id}`;
    const n = (this.#occurrences.get(counter) ?? 0) + 1;
    this.#occurrences.set(counter, n);
    return n === 1 ? id : `${id}#${n}`;
  }
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

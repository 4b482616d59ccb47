// A thin layer over the raw imports that hides how the two engines differ:
//
// |                        | StarlingMonkey (componentize-js) | QuickJS (componentize-qjs) |
// |------------------------|----------------------------------|----------------------------|
// | `u64`                  | `bigint` (in and out)            | `number` (a bigint traps)  |
// | `option<T>` none       | `undefined`                      | `null`                     |
// | failed `result` import | throws an Error, variant on `.payload` | throws the variant   |
//
// Everything above it sees numbers, `undefined` for none and `HostError`.

import { toHostError } from './errors';
import type { HttpRefusalKind } from './fetch';
import type { RawImports, RawJob } from './raw';

export type Engine = 'starlingmonkey' | 'quickjs';
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';
export type Progress = { tag: 'percent'; val: number } | { tag: 'json'; val: string };

declare const __AIRLOCK_ENGINE__: Engine | undefined;

/** The engine this bundle was built for (set by `airlock-build`; StarlingMonkey otherwise). */
export const ENGINE: Engine =
  typeof __AIRLOCK_ENGINE__ === 'string' && __AIRLOCK_ENGINE__ === 'quickjs' ? 'quickjs' : 'starlingmonkey';

export interface RawChild {
  child: { queue: string; id: string };
  outcome: { tag: 'completed' | 'failed'; val: string };
}

/** The WIT `event-match`: a JSON path into the event's data and the JSON text of the value there. */
export interface RawEventMatch {
  path: string;
  value: string;
}

/** The WIT `http-refusal`: a request of this run the host refused or cut off. */
export interface RawHttpRefusal {
  seq: number;
  url: string;
  kind: HttpRefusalKind;
  reason: string;
}

/** The WIT `new-job`: a job to start, its data (and options) as JSON text. */
export interface RawNewJob {
  queue: string;
  name: string;
  data: string;
  /** BullMQ job options as a JSON object's text; `undefined`: the target queue's defaults. */
  options: string | undefined;
}

/** The WIT `child-failure`: why an invoked child failed for good. */
export interface RawChildFailure {
  kind: string;
  reason: string;
  attempts: number;
}

/** The WIT `child-end`: how an invoked child ended. */
export type RawChildEnd =
  | { tag: 'completed'; val: string }
  | { tag: 'failed'; val: RawChildFailure }
  | { tag: 'timed-out' };

/** The host calls, normalised. Failed calls throw {@link HostError}. */
export interface Host {
  readonly engine: Engine;
  log(level: LogLevel, message: string): void;
  reportProgress(value: Progress): void;
  stepLookup(id: string): string | undefined;
  stepRecord(id: string, output: string): void;
  sleepUntil(id: string, wakeAtMs: number): void;
  /** The event (JSON text) or `undefined` on timeout; parks the job (does not return) until one of them. */
  waitForEvent(id: string, event: string, match: RawEventMatch | undefined, timeoutMs: number): string | undefined;
  waitToken(id: string): string;
  /** The token's JSON body or `undefined` on timeout; parks the job (does not return) until one of them. */
  waitForToken(id: string, timeoutMs: number): string | undefined;
  childrenResults(): RawChild[];
  /** The requests of this run the host refused or cut off, oldest first (the newest 32). */
  httpRefusals(): RawHttpRefusal[];
  kvGet(key: string): string | undefined;
  kvSet(key: string, value: string, ttlMs: number | undefined): void;
  kvSetIfAbsent(key: string, value: string, ttlMs: number | undefined): boolean;
  kvDelete(key: string): boolean;
  /** Adds a job, once (a step): where it went. */
  enqueue(id: string, job: RawNewJob): { queue: string; id: string };
  /** The children's ends, in order; parks the job (does not return) until all have ended. */
  invoke(id: string, jobs: RawNewJob[], maxRunning: number | undefined, timeoutMs: number | undefined): RawChildEnd[];
  /** Sends an event, once (a step): its id. */
  sendEvent(id: string, name: string, data: string): string;
  /** Ends the run; the job runs again in `delayMs` (does not return). */
  retryAfter(delayMs: number, reason: string): void;
  /** Ends the run and pauses the queue for `durationMs` (does not return). */
  rateLimit(durationMs: number, reason: string): void;
  configGet(key: string): string | undefined;
  configKeys(): string[];
  secret(name: string): string;
  revealSecret(name: string): string;
}

/** `null` (QuickJS) and `undefined` (StarlingMonkey) both mean none. */
export function fromOption<T>(value: T | null | undefined): T | undefined {
  return value === null || value === undefined ? undefined : value;
}

/** A WIT `u64` from either engine as a JS number. */
export function fromU64(value: bigint | number): number {
  return typeof value === 'bigint' ? Number(value) : value;
}

/** A non-negative integer as the engine's `u64`. */
export function toU64(engine: Engine, value: number): bigint | number {
  const n = Math.max(0, Math.floor(value));
  return engine === 'starlingmonkey' ? BigInt(n) : n;
}

function call<T>(operation: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw toHostError(operation, e);
  }
}

/** The normalised host over the raw imports of `engine`. */
export function createHost(raw: RawImports, engine: Engine): Host {
  const { context, config } = raw;
  // The generated types describe StarlingMonkey (`bigint`); QuickJS wants numbers.
  const u64 = (n: number) => toU64(engine, n) as bigint;
  const optU64 = (n: number | undefined) => (n === undefined ? undefined : u64(n));
  // An `option` argument's none, as each engine documents it.
  const none = (engine === 'quickjs' ? null : undefined) as undefined;
  const newJob = (job: RawNewJob) => ({
    queue: job.queue,
    name: job.name,
    data: job.data,
    options: job.options === undefined ? none : job.options,
  });
  return {
    engine,
    log: (level, message) => context.log(level, message),
    reportProgress: (value) => context.reportProgress(value),
    stepLookup: (id) => call('step lookup', () => fromOption(context.stepLookup(id))),
    stepRecord: (id, output) => call('step record', () => context.stepRecord(id, output)),
    sleepUntil: (id, wakeAtMs) => call('sleep', () => context.sleepUntil(id, u64(wakeAtMs))),
    waitForEvent: (id, event, match, timeoutMs) =>
      call('wait for event', () =>
        fromOption(
          context.waitForEvent(id, event, match ? { path: match.path, value: match.value } : none, u64(timeoutMs)) as
            | string
            | null
            | undefined,
        ),
      ),
    waitToken: (id) => call('wait token', () => context.waitToken(id)),
    waitForToken: (id, timeoutMs) =>
      call('wait for token', () => fromOption(context.waitForToken(id, u64(timeoutMs)) as string | null | undefined)),
    childrenResults: () => call('children results', () => context.childrenResults() as RawChild[]),
    httpRefusals: () =>
      context.httpRefusals().map((r) => ({ seq: r.seq, url: r.url, kind: r.kind, reason: r.reason })),
    kvGet: (key) => call('kv get', () => fromOption(context.kvGet(key))),
    kvSet: (key, value, ttlMs) => call('kv set', () => context.kvSet(key, value, optU64(ttlMs))),
    kvSetIfAbsent: (key, value, ttlMs) =>
      call('kv set-if-absent', () => context.kvSetIfAbsent(key, value, optU64(ttlMs))),
    kvDelete: (key) => call('kv delete', () => context.kvDelete(key)),
    enqueue: (id, job) =>
      call('enqueue', () => {
        const ref = context.enqueue(id, newJob(job));
        return { queue: ref.queue, id: ref.id };
      }),
    invoke: (id, jobs, maxRunning, timeoutMs) =>
      call('invoke', () =>
        context
          .invoke(id, jobs.map(newJob), maxRunning === undefined ? none : maxRunning, timeoutMs === undefined ? none : u64(timeoutMs))
          .map(childEnd),
      ),
    sendEvent: (id, name, data) => call('send event', () => context.sendEvent(id, name, data)),
    // No result to fail: both end the run (the host stops the instance).
    retryAfter: (delayMs, reason) => context.retryAfter(u64(delayMs), reason),
    rateLimit: (durationMs, reason) => context.rateLimit(u64(durationMs), reason),
    configGet: (key) => fromOption(config.get(key)),
    configKeys: () => config.keys(),
    secret: (name) => call(`secret \`${name}\``, () => config.secret(name)),
    revealSecret: (name) => call(`secret \`${name}\``, () => config.revealSecret(name)),
  };
}

/** A WIT `child-end` from either engine (a case without payload may carry a `val` of none). */
function childEnd(end: { tag: string; val?: unknown }): RawChildEnd {
  switch (end.tag) {
    case 'completed':
      return { tag: 'completed', val: String(end.val) };
    case 'failed': {
      const f = end.val as RawChildFailure;
      return { tag: 'failed', val: { kind: f.kind, reason: f.reason, attempts: f.attempts } };
    }
    case 'timed-out':
      return { tag: 'timed-out' };
    default:
      throw new TypeError(`invoke: a child end of unknown kind \`${end.tag}\``);
  }
}

/** What a handler learns about its job. */
export interface JobInfo {
  /** The job id, unique within its queue (BullMQ job id). */
  readonly id: string;
  /** The queue the job was taken from. */
  readonly queue: string;
  /** The job name given at enqueue time (BullMQ job name). */
  readonly name: string;
  /** This attempt, starting at 1 (a resumption after a durable sleep is not a new attempt). */
  readonly attempt: number;
  /** Attempts allowed in total (1 when the job is never retried). */
  readonly maxAttempts: number;
  /** When the job was enqueued, in milliseconds since the Unix epoch. */
  readonly enqueuedAt: number;
  /** When this run started, in milliseconds since the Unix epoch. */
  readonly startedAt: number;
  /** The flow parent when this job is a child in a flow. */
  readonly parent: { readonly queue: string; readonly id: string } | undefined;
  /** The job's data as the JSON text it arrived in. */
  readonly rawData: string;
}

/** The WIT `job` record from either engine as a {@link JobInfo}. */
export function jobInfo(job: RawJob): JobInfo {
  const parent = fromOption(job.parent as RawJob['parent'] | null);
  return Object.freeze({
    id: job.id,
    queue: job.queue,
    name: job.name,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    enqueuedAt: fromU64(job.enqueuedAtMs),
    startedAt: fromU64(job.startedAtMs),
    parent: parent ? Object.freeze({ queue: parent.queue, id: parent.id }) : undefined,
    rawData: job.data,
  });
}

// Starting other work from a handler — a job on another queue, fire and
// forget (`ctx.enqueue`) or awaited (`ctx.invoke`, `ctx.invokeMany`), an
// event (`ctx.sendEvent`) — and ending the run to run again later
// (`ctx.retryAfter`, `ctx.rateLimit`, a thrown `RetryAfterError`): the
// types and errors of those calls (the Rust SDK's `work.rs`). The calls
// themselves are on `Context`. What a handler may start is its binding's
// `starts`: anything else fails the job at once, saying why.

import { parseDuration, type Duration } from './duration';
import { FatalError, RetryableError, messageOf } from './errors';
import type { RawChildEnd, RawNewJob } from './host';

/** The longest `retry-after` delay or `rate-limit` pause the host takes: a day (longer ones are cut to it). */
export const MAX_LATER_MS = 24 * 60 * 60 * 1000;

/**
 * BullMQ job options of a job a handler starts, over the target queue's
 * `defaultJobOptions`. The job id is always Airlock's (derived from this
 * job and the call's id), so there is no `jobId`.
 */
export interface NewJobOptions {
  /** Runs no sooner than this from its add (`"5m"`, or milliseconds). */
  delay?: Duration;
  /** BullMQ priority (1 is the highest; 0 or absent: none). */
  priority?: number;
  /** Attempts in total. */
  attempts?: number;
  /** BullMQ backoff: milliseconds, or `{ type: 'fixed' | 'exponential', delay }`. */
  backoff?: number | { type: string; delay?: number };
  /** Add it at the head of the wait list. */
  lifo?: boolean;
  /** BullMQ `removeOnComplete`: `true`, a count, or `{ age, count }`. */
  removeOnComplete?: boolean | number | { age?: number; count?: number };
  /** BullMQ `removeOnFail`: `true`, a count, or `{ age, count }`. */
  removeOnFail?: boolean | number | { age?: number; count?: number };
}

/** A job to start on another queue (`ctx.enqueue`, `ctx.invoke`, `ctx.invokeMany`). */
export interface NewJob {
  /** The queue to add it to: one its binding's `starts.queues` allows. */
  queue: string;
  /** The job name (BullMQ job name). */
  name: string;
  /** The job's data: anything `JSON.stringify` encodes (`undefined` is sent as `null`). */
  data: unknown;
  /** BullMQ job options; absent or empty: the target queue's defaults. */
  options?: NewJobOptions;
}

/** Why an invoked child failed for good (all its attempts used, or a fatal error), or why its end could not be handed over. */
export interface ChildFailure {
  /**
   * The failure kind (`guest_fatal`, `guest_retry`, `timeout`, `fuel_exhausted`, ...; `failed` for
   * another worker's reason; `output_too_large` for a value over 8 MiB, or past 64 MiB for the
   * invoke's ends in all).
   */
  readonly kind: string;
  /** Its failure reason. */
  readonly reason: string;
  /** How many attempts it made (1 when that is not known any more). */
  readonly attempts: number;
}

/** How an invoked child ended (`ctx.invokeMany`). */
export type ChildEnd<T = unknown> =
  /** It completed; its return value, parsed from JSON. */
  | { readonly status: 'completed'; readonly value: T }
  /** It failed for good, after its retries. */
  | { readonly status: 'failed'; readonly failure: ChildFailure }
  /** The invoke's timeout ran out first (a child that started is left to run, and what it returns reaches nobody; one of a group not started yet never runs). */
  | { readonly status: 'timedOut' };

/** Options of `ctx.invoke`. */
export interface InvokeOptions {
  /**
   * How long to wait for the child (`"1h"`, or milliseconds), from the first
   * time the job reached the invoke; at most a year. Absent: no limit.
   */
  timeout?: Duration;
}

/** Options of `ctx.invokeMany`. */
export interface InvokeManyOptions extends InvokeOptions {
  /** At most this many children at once: they start in groups of this size, each once the one before has ended. */
  maxRunning?: number;
}

/**
 * Why `ctx.invoke` has no value: the child failed for good (`kind:
 * 'failed'`, the child's `failure`), or the invoke's `timeout` ran out
 * before it ended (`kind: 'timedOut'`). Catch it to react; left uncaught
 * it fails the job fatally (it is a {@link FatalError}): the children's
 * ends are recorded, so a retry would meet the same. The message reads
 * like the Rust SDK's (`the invoked job failed for good after 3
 * attempt(s): guest_fatal: card declined`).
 *
 * A failed host call of the invoke is a `HostError`, not an `InvokeError`.
 */
export class InvokeError extends FatalError {
  /** The invoke's id (the `id` given to `ctx.invoke`). */
  readonly id: string;
  /** What happened to the child. */
  readonly kind: 'failed' | 'timedOut';
  /** Why the child failed, when `kind` is `'failed'`. */
  readonly failure: ChildFailure | undefined;

  constructor(id: string, end: { status: 'failed'; failure: ChildFailure } | { status: 'timedOut' }) {
    super(
      end.status === 'failed'
        ? `the invoked job failed for good after ${end.failure.attempts} attempt(s): ${end.failure.kind}: ${end.failure.reason}`
        : 'the invoked job did not end in time',
    );
    this.name = 'InvokeError';
    this.id = id;
    this.kind = end.status;
    this.failure = end.status === 'failed' ? Object.freeze({ ...end.failure }) : undefined;
  }
}

/**
 * Ends the run to run the job again after `delay`, using up no attempt
 * (Inngest's `RetryAfterError`, BullMQ's `DelayedError`): thrown out of a
 * handler — or out of a `ctx.step.run` function, which then records
 * nothing — it makes the SDK call the host's `retry-after` with `delay`
 * (cut to a day), `message` going to the job's log. A job may do so 100
 * times; past that the host fails the run as an ordinary retry, which uses
 * an attempt.
 *
 * `delay` is a {@link Duration} (`"30s"`, or milliseconds) or the `Date` to
 * run again at (counted from when the error is made).
 */
export class RetryAfterError extends RetryableError {
  /** The delay as given. */
  readonly retryAfter: Duration | Date;
  /** The delay in whole milliseconds, at least 0 and at most a day. */
  readonly delayMs: number;

  constructor(message: string, delay: Duration | Date, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryAfterError';
    this.retryAfter = delay;
    this.delayMs = laterMs(delay instanceof Date ? Math.max(0, delay.getTime() - Date.now()) : parseDuration(delay));
  }
}

/** A delay or pause in whole milliseconds, within what the host takes (0 to a day). */
export function laterMs(ms: number): number {
  if (!Number.isFinite(ms)) return ms > 0 ? MAX_LATER_MS : 0;
  return Math.min(MAX_LATER_MS, Math.max(0, Math.floor(ms)));
}

/** `value` as JSON text, for a job's data or an event's (`undefined` → `null`); a {@link FatalError} naming `what` otherwise. */
export function jsonText(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new FatalError(`${what} is not serialisable: ${messageOf(e)}`);
  }
  if (text === undefined) {
    if (value === undefined) return 'null';
    throw new FatalError(`${what} is not serialisable: ${typeof value} has no JSON`);
  }
  return text;
}

/** The WIT `new-job` of `job` (number `i` of the call `call`, for the errors). */
export function rawNewJob(job: NewJob, call: string): RawNewJob {
  if (job === null || typeof job !== 'object') throw new FatalError(`${call}: a job is \`{ queue, name, data, options? }\``);
  const data = jsonText(job.data, `the data of ${call}'s job`);
  let options: string | undefined;
  if (job.options != null) {
    const o: Record<string, unknown> = { ...job.options };
    if (o.delay !== undefined) o.delay = Math.floor(parseDuration(o.delay as Duration));
    for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
    if (Object.keys(o).length > 0) options = jsonText(o, `the options of ${call}'s job`);
  }
  return { queue: String(job.queue), name: String(job.name), data, options };
}

/** A {@link ChildEnd} of the WIT `child-end` of invoke `id`. */
export function childEndOf<T>(end: RawChildEnd, id: string): ChildEnd<T> {
  switch (end.tag) {
    case 'completed': {
      let value: T;
      try {
        value = JSON.parse(end.val) as T;
      } catch (e) {
        throw new FatalError(`a child's return value of invoke \`${id}\` does not parse: ${messageOf(e)}`);
      }
      return Object.freeze({ status: 'completed', value });
    }
    case 'failed':
      return Object.freeze({ status: 'failed', failure: Object.freeze({ ...end.val }) });
    case 'timed-out':
      return Object.freeze({ status: 'timedOut' });
  }
}

// A Promise whose jobs run on a queue that the SDK drains itself.
//
// componentize-qjs exports `run` synchronously (its non-async runtime; the
// host does not use the component-model async ABI) and never runs QuickJS's
// own job queue during the call, so a native promise returned by an async
// handler never settles. For QuickJS builds, `airlock-build` lowers
// `async`/`await` to generators (esbuild) and this prelude replaces the
// global `Promise` with `SyncPromise`, whose reactions go to `jobQueue`;
// `run` drains the queue before it returns, which settles everything that
// does not wait for the outside world. QuickJS has no timers and no fetch,
// so nothing can: a promise still pending after the drain never settles.
//
// Ordering follows the spec's microtask semantics (FIFO reactions,
// thenables adopted in a job of their own), so code that works on native
// promises works here.

type Job = () => void;

const queue: (Job | undefined)[] = [];
let head = 0;
/** How many `drainJobs` calls are running (more than one: a nested drain). */
let depth = 0;

/** Queues a job (a microtask). */
export function enqueueJob(job: Job): void {
  queue.push(job);
}

/**
 * Runs queued jobs, and the jobs they queue, until none is left (or
 * `until()` holds). Re-entrant: a job may drain too (a nested `settleNow`);
 * every level takes jobs from the same FIFO queue.
 */
export function drainJobs(until?: () => boolean): void {
  depth++;
  try {
    while (head < queue.length) {
      if (until !== undefined && until()) return;
      const job = queue[head];
      queue[head++] = undefined;
      job!();
      if (head >= 4096 && head * 2 >= queue.length) {
        queue.splice(0, head);
        head = 0;
      }
    }
    queue.length = 0;
    head = 0;
  } finally {
    depth--;
  }
}

/** Jobs queued and not run yet. */
export function pendingJobs(): number {
  return queue.length - head;
}

/** Whether a drain is running (the caller is inside a queued job). */
export function draining(): boolean {
  return depth > 0;
}

/**
 * Drops every queued job without running it and resets the queue; how many
 * were dropped. `run` calls it when a job's result has settled: what that
 * job left queued (the rest of a promise chain it did not await) belongs to
 * it and must not run during the next job of a reused instance — it never
 * would have on a fresh one. The promises those jobs would have settled stay
 * pending for ever.
 */
export function discardJobs(): number {
  const dropped = queue.length - head;
  queue.length = 0;
  head = 0;
  return dropped;
}

const PENDING = 0;
const FULFILLED = 1;
const REJECTED = 2;
type State = typeof PENDING | typeof FULFILLED | typeof REJECTED;

interface Reaction {
  onFulfilled: ((value: any) => any) | undefined;
  onRejected: ((reason: any) => any) | undefined;
  resolve: (value: any) => void;
  reject: (reason: any) => void;
}

const STATE = Symbol('state');
const VALUE = Symbol('value');
const REACTIONS = Symbol('reactions');

type Executor<T> = (resolve: (value: T | PromiseLike<T>) => void, reject: (reason?: unknown) => void) => void;

export class SyncPromise<T> implements PromiseLike<T> {
  [STATE]: State = PENDING;
  [VALUE]: unknown = undefined;
  [REACTIONS]: Reaction[] | undefined = [];

  constructor(executor: Executor<T>) {
    if (typeof executor !== 'function') throw new TypeError('Promise resolver is not a function');
    const { resolve, reject } = resolvingFunctions(this);
    try {
      executor(resolve, reject);
    } catch (e) {
      reject(e);
    }
  }

  then<R1 = T, R2 = never>(
    onFulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onRejected?: ((reason: any) => R2 | PromiseLike<R2>) | null,
  ): SyncPromise<R1 | R2> {
    let resolve!: (value: any) => void;
    let reject!: (reason: any) => void;
    const child = new SyncPromise<R1 | R2>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const reaction: Reaction = {
      onFulfilled: typeof onFulfilled === 'function' ? onFulfilled : undefined,
      onRejected: typeof onRejected === 'function' ? onRejected : undefined,
      resolve,
      reject,
    };
    if (this[STATE] === PENDING) this[REACTIONS]!.push(reaction);
    else scheduleReaction(reaction, this[STATE], this[VALUE]);
    return child;
  }

  catch<R = never>(onRejected?: ((reason: any) => R | PromiseLike<R>) | null): SyncPromise<T | R> {
    return this.then(undefined, onRejected);
  }

  finally(onFinally?: (() => void) | null): SyncPromise<T> {
    if (typeof onFinally !== 'function') return this.then(onFinally, onFinally) as SyncPromise<T>;
    return this.then(
      (value) => SyncPromise.resolve(onFinally()).then(() => value),
      (reason) =>
        SyncPromise.resolve(onFinally()).then(() => {
          throw reason;
        }),
    );
  }

  get [Symbol.toStringTag](): string {
    return 'Promise';
  }

  static resolve(): SyncPromise<void>;
  static resolve<T>(value: T | PromiseLike<T>): SyncPromise<Awaited<T>>;
  static resolve<T>(value?: T | PromiseLike<T>): SyncPromise<Awaited<T>> {
    if (value instanceof SyncPromise && value.constructor === SyncPromise) return value as SyncPromise<Awaited<T>>;
    return new SyncPromise((resolve) => resolve(value as Awaited<T>));
  }

  static reject<T = never>(reason?: unknown): SyncPromise<T> {
    return new SyncPromise((_resolve, reject) => reject(reason));
  }

  static withResolvers<T>(): { promise: SyncPromise<T>; resolve: (value: T | PromiseLike<T>) => void; reject: (reason?: unknown) => void } {
    let resolve!: (value: T | PromiseLike<T>) => void;
    let reject!: (reason?: unknown) => void;
    const promise = new SyncPromise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  }

  static all<T>(values: Iterable<T | PromiseLike<T>>): SyncPromise<Awaited<T>[]> {
    return new SyncPromise((resolve, reject) => {
      const results: Awaited<T>[] = [];
      let remaining = 1;
      let index = 0;
      for (const v of values) {
        const i = index++;
        remaining++;
        SyncPromise.resolve(v).then((value) => {
          results[i] = value as Awaited<T>;
          if (--remaining === 0) resolve(results);
        }, reject);
      }
      if (--remaining === 0) resolve(results);
    });
  }

  static allSettled<T>(values: Iterable<T | PromiseLike<T>>): SyncPromise<PromiseSettledResult<Awaited<T>>[]> {
    return SyncPromise.all(
      Array.from(values, (v) =>
        SyncPromise.resolve(v).then(
          (value) => ({ status: 'fulfilled', value }) as PromiseFulfilledResult<Awaited<T>>,
          (reason) => ({ status: 'rejected', reason }) as PromiseRejectedResult,
        ),
      ),
    );
  }

  static race<T>(values: Iterable<T | PromiseLike<T>>): SyncPromise<Awaited<T>> {
    return new SyncPromise((resolve, reject) => {
      for (const v of values) SyncPromise.resolve(v).then(resolve, reject);
    });
  }

  static any<T>(values: Iterable<T | PromiseLike<T>>): SyncPromise<Awaited<T>> {
    return new SyncPromise((resolve, reject) => {
      const errors: unknown[] = [];
      let remaining = 1;
      let index = 0;
      const fail = () => reject(new AggregateError(errors, 'All promises were rejected'));
      for (const v of values) {
        const i = index++;
        remaining++;
        SyncPromise.resolve(v).then(resolve as (value: Awaited<T>) => void, (reason) => {
          errors[i] = reason;
          if (--remaining === 0) fail();
        });
      }
      if (--remaining === 0) fail();
    });
  }

  /** The state of `promise`: settled with its value/reason, or pending. */
  static inspect(promise: SyncPromise<unknown>): { state: 'pending' | 'fulfilled' | 'rejected'; value: unknown } {
    const state = promise[STATE];
    return { state: state === PENDING ? 'pending' : state === FULFILLED ? 'fulfilled' : 'rejected', value: promise[VALUE] };
  }
}

function settle(promise: SyncPromise<unknown>, state: State, value: unknown): void {
  if (promise[STATE] !== PENDING) return;
  const reactions = promise[REACTIONS]!;
  promise[STATE] = state;
  promise[VALUE] = value;
  promise[REACTIONS] = undefined;
  for (const r of reactions) scheduleReaction(r, state, value);
}

function scheduleReaction(reaction: Reaction, state: State, value: unknown): void {
  enqueueJob(() => {
    const handler = state === FULFILLED ? reaction.onFulfilled : reaction.onRejected;
    if (handler === undefined) {
      if (state === FULFILLED) reaction.resolve(value);
      else reaction.reject(value);
      return;
    }
    let result: unknown;
    try {
      result = handler(value);
    } catch (e) {
      reaction.reject(e);
      return;
    }
    reaction.resolve(result);
  });
}

function resolvingFunctions(promise: SyncPromise<unknown>): { resolve: (value: unknown) => void; reject: (reason: unknown) => void } {
  let done = false;
  const reject = (reason: unknown) => {
    if (done) return;
    done = true;
    settle(promise, REJECTED, reason);
  };
  const resolve = (value: unknown) => {
    if (done) return;
    done = true;
    if (value === promise) {
      settle(promise, REJECTED, new TypeError('Chaining cycle detected for promise'));
      return;
    }
    if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
      let then: unknown;
      try {
        then = (value as { then?: unknown }).then;
      } catch (e) {
        settle(promise, REJECTED, e);
        return;
      }
      if (typeof then === 'function') {
        enqueueJob(() => {
          const fns = resolvingFunctions(promise);
          try {
            (then as (res: (v: unknown) => void, rej: (r: unknown) => void) => void).call(value, fns.resolve, fns.reject);
          } catch (e) {
            fns.reject(e);
          }
        });
        return;
      }
    }
    settle(promise, FULFILLED, value);
  };
  return { resolve, reject };
}

/** Thrown by {@link settleNow} for a promise the drain could not settle. */
export class NeverSettledError extends Error {
  constructor() {
    super(
      'the handler is still waiting after all its work ran: on QuickJS there is no event loop (no timers, no fetch), so it can only await work that finishes by itself — build with --engine starlingmonkey for that',
    );
    this.name = 'NeverSettledError';
  }
}

/** Drains the job queue, then returns what `promise` fulfilled with or throws what it rejected with. */
export function settleNow<T>(promise: PromiseLike<T> | T): T {
  if (promise instanceof SyncPromise) drainJobs(() => promise[STATE] !== PENDING);
  else drainJobs();
  if (!(promise instanceof SyncPromise)) {
    if (promise !== null && typeof promise === 'object' && typeof (promise as PromiseLike<T>).then === 'function') {
      throw new NeverSettledError();
    }
    return promise as T;
  }
  const { state, value } = SyncPromise.inspect(promise);
  if (state === 'fulfilled') return value as T;
  if (state === 'rejected') throw value;
  throw new NeverSettledError();
}

/** Makes `SyncPromise` the global `Promise` (and `queueMicrotask` use its queue). */
export function installSyncPromise(): void {
  const g = globalThis as Record<string, unknown>;
  if (g.Promise === SyncPromise) return;
  g.__airlockNativePromise = g.Promise;
  g.Promise = SyncPromise;
  g.queueMicrotask = (callback: () => void) => {
    enqueueJob(() => {
      try {
        callback();
      } catch {
        // an exception in a microtask has nowhere to go
      }
    });
  };
}

// An in-memory stand-in for Airlock's `context` and `config` imports that
// behaves like either engine's bindings (see src/host.ts): StarlingMonkey
// takes and gives `bigint` for u64, `undefined` for none and throws
// `{ payload: variant }` (not an Error); QuickJS takes numbers (a bigint
// traps), gives `null` for none and throws the bare variant.
import type { Engine } from '../../src/host';

declare const __AIRLOCK_ENGINE__: Engine;

type Variant = { tag: string; val: string };

export interface FakeState {
  engine: Engine;
  logs: { level: string; message: string }[];
  progress: Variant[];
  steps: Map<string, string>;
  stepCalls: string[];
  sleeps: { id: string; wakeAtMs: number }[];
  /**
   * The recorded outcome of each wait, by key (`approval`, `approval#2`):
   * the JSON text the host returns (an event, a token's body), or `null`
   * when it timed out. A wait whose key is missing parks the job.
   */
  waits: Map<string, string | null>;
  /** Every wait call, in order, as the host saw it. */
  waitCalls: WaitCall[];
  /** The tokens `waitToken` created, by key. */
  tokens: Map<string, string>;
  /** The keys of the waits that parked the job (the import trapped). */
  parked: string[];
  kv: Map<string, { value: string; ttlMs: number | undefined }>;
  config: Map<string, string>;
  secrets: Map<string, { value: string; reveal: boolean }>;
  children: { child: { queue: string; id: string }; outcome: Variant }[] | undefined;
  /** Makes the next call of `op` fail with this host-error. */
  failures: Map<string, Variant>;
  /** What `httpRefusals` returns: the run's refused requests, oldest first (see {@link refuse}). */
  httpRefusals: FakeRefusal[];
  /**
   * The ends of each invoke, by key (`charge`, `charge#2`): as the host
   * returns them (see {@link recordInvoke}). An invoke whose key is
   * missing parks the job.
   */
  invokes: Map<string, FakeChildEnd[]>;
  /** Every enqueue, invoke and send-event call, in order, as the host saw it. */
  workCalls: WorkCall[];
  /** The jobs and events the fake host really started (not replayed from a record). */
  started: string[];
  /** Every retry-after and rate-limit call (each ended the run: the import threw {@link FakeEnded}). */
  laters: { op: 'retryAfter' | 'rateLimit'; ms: number; reason: string }[];
}

/** A WIT `child-end` as both engines' bindings give it. */
export type FakeChildEnd =
  | { tag: 'completed'; val: string }
  | { tag: 'failed'; val: { kind: string; reason: string; attempts: number } }
  | { tag: 'timed-out' };

/** A WIT `new-job` as the fake host saw it (`options` none as `undefined`). */
export interface FakeNewJob {
  queue: string;
  name: string;
  data: string;
  options: string | undefined;
}

export type WorkCall =
  | { op: 'enqueue'; id: string; job: FakeNewJob }
  | { op: 'invoke'; id: string; jobs: FakeNewJob[]; maxRunning: number | undefined; timeoutMs: number | undefined }
  | { op: 'sendEvent'; id: string; name: string; data: string };

/** A WIT `http-refusal` as both engines' bindings give it (`seq` a number, `kind` the enum's name). */
export interface FakeRefusal {
  seq: number;
  url: string;
  kind: string;
  reason: string;
}

export type WaitCall =
  | { op: 'waitForEvent'; id: string; event: string; match: { path: string; value: string } | undefined; timeoutMs: number }
  | { op: 'waitToken'; id: string }
  | { op: 'waitForToken'; id: string; timeoutMs: number };

/**
 * What the fake throws where the real host's retry-after or rate-limit
 * import traps (stops the instance to end the run): the handler's run ends
 * there.
 */
export class FakeEnded extends Error {
  constructor(readonly op: 'retryAfter' | 'rateLimit', readonly ms: number, readonly reason: string) {
    super(`ended: ${op === 'retryAfter' ? 'retry after' : 'rate limit for'} ${ms} ms: ${reason}`);
    this.name = 'FakeEnded';
  }
}

/**
 * What the fake throws where the real host's wait import traps (stops the
 * instance to park the job): the handler's run ends there.
 */
export class FakeParked extends Error {
  constructor(readonly key: string) {
    super(`parked on wait \`${key}\``);
    this.name = 'FakeParked';
  }
}

export const fake: FakeState = {
  engine: __AIRLOCK_ENGINE__,
  logs: [],
  progress: [],
  steps: new Map(),
  stepCalls: [],
  sleeps: [],
  waits: new Map(),
  waitCalls: [],
  tokens: new Map(),
  parked: [],
  kv: new Map(),
  config: new Map(),
  secrets: new Map(),
  children: [],
  failures: new Map(),
  httpRefusals: [],
  invokes: new Map(),
  workCalls: [],
  started: [],
  laters: [],
};

export function resetFake(engine: Engine = __AIRLOCK_ENGINE__): void {
  fake.engine = engine;
  fake.logs = [];
  fake.progress = [];
  fake.steps = new Map();
  fake.stepCalls = [];
  fake.sleeps = [];
  fake.waits = new Map();
  fake.waitCalls = [];
  fake.tokens = new Map();
  fake.parked = [];
  fake.kv = new Map();
  fake.config = new Map();
  fake.secrets = new Map();
  fake.children = [];
  fake.failures = new Map();
  fake.httpRefusals = [];
  fake.invokes = new Map();
  fake.workCalls = [];
  fake.started = [];
  fake.laters = [];
}

/** Records the ends of invoke `key` (a value completes with its JSON, a failure, or `'timedOut'`). */
export function recordInvoke(
  key: string,
  ends: ({ completed: unknown } | { failed: { kind: string; reason: string; attempts: number } } | 'timedOut')[],
): void {
  fake.invokes.set(
    key,
    ends.map((end): FakeChildEnd => {
      if (end === 'timedOut') return { tag: 'timed-out' };
      if ('completed' in end) return { tag: 'completed', val: JSON.stringify(end.completed) };
      return { tag: 'failed', val: { ...end.failed } };
    }),
  );
}

/**
 * Records that the host refused (or cut off) a request to `url` (without
 * query), as the next of this run's refusals; its `seq`. Like the host,
 * only the newest 32 are kept.
 */
export function refuse(url: string, kind: string, reason: string): number {
  const seq = (fake.httpRefusals.at(-1)?.seq ?? 0) + 1;
  fake.httpRefusals.push({ seq, url, kind, reason });
  if (fake.httpRefusals.length > 32) fake.httpRefusals.shift();
  return seq;
}

/** Records that wait `key` received `event` (as the host returns it: `{name, data, id, ts}`). */
export function recordEvent(key: string, event: { name: string; data?: unknown; id: string; ts: number }): void {
  fake.waits.set(key, JSON.stringify(event));
}

/** Records that the token of wait `key` was completed with `body`. */
export function recordTokenResult(key: string, body: unknown): void {
  fake.waits.set(key, JSON.stringify(body));
}

/** Records that wait `key` timed out. */
export function recordTimeout(key: string): void {
  fake.waits.set(key, null);
}

export function none(): undefined {
  return (fake.engine === 'quickjs' ? null : undefined) as undefined;
}

export function fail(tag: string, val: string): never {
  if (fake.engine === 'quickjs') throw { tag, val };
  // StarlingMonkey: an object that is not an Error, the variant on `payload`.
  throw { payload: { tag, val } };
}

export function maybeFail(op: string): void {
  const f = fake.failures.get(op);
  if (f) {
    fake.failures.delete(op);
    fail(f.tag, f.val);
  }
}

/** A u64 argument as the engine's binding takes it. */
export function u64In(value: unknown): number {
  if (fake.engine === 'quickjs') {
    if (typeof value !== 'number') throw new Error(`expected number: FromJs { from: "${typeof value}", to: "f64" }`);
    return value;
  }
  if (typeof value !== 'bigint') throw new TypeError(`u64 argument must be a bigint on StarlingMonkey, got ${typeof value}`);
  return Number(value);
}

export function optU64In(value: unknown): number | undefined {
  return value === undefined || value === null ? undefined : u64In(value);
}

/** An `option` argument: each engine's none (`undefined`, `null` on QuickJS) is `undefined`. */
export function optIn<T>(value: T | null | undefined): T | undefined {
  if (fake.engine === 'quickjs' ? value === undefined : value === null) {
    throw new TypeError(`none is ${fake.engine === 'quickjs' ? 'null' : 'undefined'} on ${fake.engine}, got ${String(value)}`);
  }
  return value === undefined || value === null ? undefined : value;
}

/** A WIT `job` record as the engine's binding gives it. */
export function rawJob(over: Partial<{ id: string; queue: string; name: string; data: string; attempt: number; maxAttempts: number; enqueuedAtMs: number; startedAtMs: number; parent: { queue: string; id: string } }> = {}) {
  const u64 = (n: number) => (fake.engine === 'quickjs' ? n : BigInt(n));
  return {
    id: over.id ?? 'job-1',
    queue: over.queue ?? 'orders',
    name: over.name ?? 'local',
    data: over.data ?? '{}',
    attempt: over.attempt ?? 1,
    maxAttempts: over.maxAttempts ?? 3,
    enqueuedAtMs: u64(over.enqueuedAtMs ?? 1_700_000_000_000),
    startedAtMs: u64(over.startedAtMs ?? 1_700_000_000_500),
    parent: over.parent ?? none(),
  } as unknown as import('airlock:job/types@0.6.0').Job;
}

// Aliased to `airlock:job/context@0.6.0` in the test bundles.
import { FakeEnded, FakeParked, fail, fake, maybeFail, none, optIn, optU64In, u64In, type FakeNewJob } from './state';

type Variant = { tag: string; val: string };

export function reportProgress(value: Variant): void {
  fake.progress.push(value);
}
export function log(level: string, message: string): void {
  fake.logs.push({ level, message });
}
export function stepLookup(id: string): string | undefined {
  maybeFail('stepLookup');
  if (id === '') fail('invalid', 'step id must not be empty');
  fake.stepCalls.push(`lookup ${id}`);
  return fake.steps.get(id) ?? none();
}
export function stepRecord(id: string, output: string): void {
  maybeFail('stepRecord');
  JSON.parse(output); // the host refuses output that is not JSON
  fake.stepCalls.push(`record ${id}`);
  fake.steps.set(id, output);
}
export function sleepUntil(id: string, wakeAtMs: unknown): void {
  maybeFail('sleepUntil');
  fake.sleeps.push({ id, wakeAtMs: u64In(wakeAtMs) });
}
const MATCH_PATH = /^\$(\.[A-Za-z0-9_-]+){1,16}$/;
const YEAR_MS = 366 * 24 * 60 * 60 * 1000;

/** The outcome recorded for wait `key`, or the trap that parks the job. */
function waitOutcome(key: string): string | undefined {
  if (!fake.waits.has(key)) {
    fake.parked.push(key);
    throw new FakeParked(key);
  }
  return fake.waits.get(key) ?? none();
}

export function waitForEvent(id: string, event: string, match: unknown, timeoutMs: unknown): string | undefined {
  maybeFail('waitForEvent');
  const m = optIn(match as { path: string; value: string } | null | undefined);
  const ms = u64In(timeoutMs);
  if (id === '') fail('invalid', 'wait id must not be empty');
  if (event === '') fail('invalid', 'event name must not be empty');
  if (m !== undefined) {
    if (Object.keys(m).sort().join(',') !== 'path,value') fail('invalid', `event-match has fields ${Object.keys(m)}`);
    if (!MATCH_PATH.test(m.path)) fail('invalid', `match path \`${m.path}\` is not \`$\` then .name segments`);
    try {
      JSON.parse(m.value);
    } catch {
      fail('invalid', `match value is not JSON: ${m.value}`);
    }
  }
  if (ms > YEAR_MS) fail('invalid', 'wait timeout is more than a year');
  fake.waitCalls.push({ op: 'waitForEvent', id, event, match: m && { path: m.path, value: m.value }, timeoutMs: ms });
  return waitOutcome(id);
}
export function waitToken(id: string): string {
  maybeFail('waitToken');
  if (id === '') fail('invalid', 'wait id must not be empty');
  fake.waitCalls.push({ op: 'waitToken', id });
  let token = fake.tokens.get(id);
  if (token === undefined) {
    token = `wt_fake_${id}`;
    fake.tokens.set(id, token);
  }
  return token;
}
export function waitForToken(id: string, timeoutMs: unknown): string | undefined {
  maybeFail('waitForToken');
  const ms = u64In(timeoutMs);
  if (id === '') fail('invalid', 'wait id must not be empty');
  if (ms > YEAR_MS) fail('invalid', 'wait timeout is more than a year');
  fake.waitCalls.push({ op: 'waitForToken', id, timeoutMs: ms });
  if (!fake.tokens.has(id)) fake.tokens.set(id, `wt_fake_${id}`);
  return waitOutcome(id);
}
export function childrenResults(): unknown[] {
  maybeFail('childrenResults');
  if (fake.children === undefined) fail('unsupported', 'this host has no flows');
  return fake.children;
}
export function httpRefusals(): unknown[] {
  return fake.httpRefusals.map((r) => ({ ...r }));
}
export function kvGet(key: string): string | undefined {
  maybeFail('kvGet');
  if (key === '') fail('invalid', 'kv key must not be empty');
  return fake.kv.get(key)?.value ?? none();
}
export function kvSet(key: string, value: string, ttlMs: unknown): void {
  maybeFail('kvSet');
  if (key === '') fail('invalid', 'kv key must not be empty');
  fake.kv.set(key, { value, ttlMs: optU64In(ttlMs) });
}
export function kvSetIfAbsent(key: string, value: string, ttlMs: unknown): boolean {
  maybeFail('kvSetIfAbsent');
  if (fake.kv.has(key)) return false;
  fake.kv.set(key, { value, ttlMs: optU64In(ttlMs) });
  return true;
}
export function kvDelete(key: string): boolean {
  maybeFail('kvDelete');
  return fake.kv.delete(key);
}
/** A `new-job` record as the host reads it: checked like the host does. */
function newJob(job: unknown): FakeNewJob {
  const j = job as { queue: string; name: string; data: string; options: string | null | undefined };
  if (Object.keys(j).sort().join(',') !== 'data,name,options,queue') fail('invalid', `new-job has fields ${Object.keys(j)}`);
  const options = optIn(j.options);
  if (j.queue === '' || j.name === '') fail('invalid', 'a job needs a queue and a name');
  try {
    JSON.parse(j.data);
  } catch {
    fail('invalid', `the job's data is not JSON: ${j.data}`);
  }
  if (options !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(options);
    } catch {
      fail('invalid', `the job's options are not JSON: ${options}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) fail('invalid', "the job's options are not a JSON object");
  }
  return { queue: j.queue, name: j.name, data: j.data, options };
}

/** Like the host: a step recorded under `id` (`[queue, id]`), so a replay adds nothing. */
export function enqueue(id: string, job: unknown): { queue: string; id: string } {
  maybeFail('enqueue');
  if (id === '') fail('invalid', 'step id must not be empty');
  const j = newJob(job);
  fake.workCalls.push({ op: 'enqueue', id, job: j });
  const recorded = fake.steps.get(id);
  if (recorded !== undefined) {
    const [queue, jobId] = JSON.parse(recorded) as [string, string];
    return { queue, id: jobId };
  }
  const ref = { queue: j.queue, id: `job-1:${id}` };
  fake.started.push(`${ref.queue}/${ref.id}`);
  fake.steps.set(id, JSON.stringify([ref.queue, ref.id]));
  return ref;
}
export function invoke(id: string, jobs: unknown[], maxRunning: unknown, timeoutMs: unknown): unknown[] {
  maybeFail('invoke');
  if (id === '') fail('invalid', 'step id must not be empty');
  const max = optIn(maxRunning as number | null | undefined);
  const timeout = optIn(timeoutMs as bigint | number | null | undefined);
  const ms = timeout === undefined ? undefined : u64In(timeout);
  if (max === 0) fail('invalid', 'max-running must be at least 1');
  const parsed = jobs.map(newJob);
  fake.workCalls.push({ op: 'invoke', id, jobs: parsed, maxRunning: max, timeoutMs: ms });
  if (parsed.length === 0) return [];
  const ends = fake.invokes.get(id);
  if (ends === undefined) {
    fake.parked.push(id);
    throw new FakeParked(id);
  }
  // A case without payload may come with a `val` of none or without one: the SDK reads the tag only.
  return ends.map((e) => (e.tag === 'timed-out' && fake.engine === 'starlingmonkey' ? { tag: 'timed-out', val: undefined } : e));
}
export function sendEvent(id: string, name: string, data: string): string {
  maybeFail('sendEvent');
  if (id === '') fail('invalid', 'step id must not be empty');
  try {
    JSON.parse(data);
  } catch {
    fail('invalid', `the event's data is not JSON: ${data}`);
  }
  fake.workCalls.push({ op: 'sendEvent', id, name, data });
  const recorded = fake.steps.get(id);
  if (recorded !== undefined) return JSON.parse(recorded) as string;
  const eventId = `ev_fake_${id}`;
  fake.started.push(`event ${name} ${eventId}`);
  fake.steps.set(id, JSON.stringify(eventId));
  return eventId;
}
export function retryAfter(delayMs: unknown, reason: string): void {
  const ms = u64In(delayMs);
  fake.laters.push({ op: 'retryAfter', ms, reason });
  throw new FakeEnded('retryAfter', ms, reason);
}
export function rateLimit(durationMs: unknown, reason: string): void {
  const ms = u64In(durationMs);
  fake.laters.push({ op: 'rateLimit', ms, reason });
  throw new FakeEnded('rateLimit', ms, reason);
}
export function reportPanic(message: string): void {
  fake.logs.push({ level: 'panic', message });
}

// Aliased to `airlock:job/context@0.4.0` in the test bundles.
import { FakeParked, fail, fake, maybeFail, none, optIn, optU64In, u64In } from './state';

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
export function reportPanic(message: string): void {
  fake.logs.push({ level: 'panic', message });
}

// Aliased to `airlock:job/context@0.2.0` in the test bundles.
import { fail, fake, maybeFail, none, optU64In, u64In } from './state';

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
export function childrenResults(): unknown[] {
  maybeFail('childrenResults');
  if (fake.children === undefined) fail('unsupported', 'this host has no flows');
  return fake.children;
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

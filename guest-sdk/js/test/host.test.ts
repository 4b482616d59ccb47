import assert from 'node:assert/strict';
import { createHost, fromOption, fromU64, jobInfo, toU64 } from '../src/host';
import { HostError } from '../src/errors';
import { rawImports } from '../src/raw';
import { fake, rawJob, recordEvent, recordInvoke, recordTimeout, resetFake } from './fake/state';
import { test } from './harness';

for (const engine of ['starlingmonkey', 'quickjs'] as const) {
  test(`${engine} shapes: none, u64 and host errors are normalised`, () => {
    resetFake(engine);
    const host = createHost(rawImports, engine);
    assert.equal(host.kvGet('missing'), undefined);
    assert.equal(host.configGet('missing'), undefined);
    assert.equal(host.stepLookup('missing'), undefined);
    host.kvSet('a', '1', 1000);
    host.kvSet('b', '2', undefined);
    assert.deepEqual(fake.kv.get('a'), { value: '1', ttlMs: 1000 });
    assert.deepEqual(fake.kv.get('b'), { value: '2', ttlMs: undefined });
    assert.equal(host.kvGet('a'), '1');
    assert.equal(host.kvSetIfAbsent('a', 'x', 5), false);
    assert.equal(host.kvSetIfAbsent('c', 'x', 5), true);
    host.sleepUntil('nap', 1_700_000_000_123.7);
    assert.deepEqual(fake.sleeps, [{ id: 'nap', wakeAtMs: 1_700_000_000_123 }]);
    // Waits: the option argument's none and u64 per engine, none back as undefined.
    recordTimeout('w');
    recordEvent('w#2', { name: 'e', data: 1, id: 'ev', ts: 1 });
    assert.equal(host.waitForEvent('w', 'e', undefined, 1000.6), undefined);
    assert.equal(host.waitForEvent('w#2', 'e', { path: '$.a', value: '1' }, 5), '{"name":"e","data":1,"id":"ev","ts":1}');
    assert.equal(host.waitToken('t'), 'wt_fake_t');
    recordTimeout('t');
    assert.equal(host.waitForToken('t', 7), undefined);
    assert.deepEqual(fake.waitCalls, [
      { op: 'waitForEvent', id: 'w', event: 'e', match: undefined, timeoutMs: 1000 },
      { op: 'waitForEvent', id: 'w#2', event: 'e', match: { path: '$.a', value: '1' }, timeoutMs: 5 },
      { op: 'waitToken', id: 't' },
      { op: 'waitForToken', id: 't', timeoutMs: 7 },
    ]);
    assert.throws(() => host.waitForToken('parks', 7), /parked on wait `parks`/);
    assert.throws(
      () => host.kvGet(''),
      (e: unknown) => e instanceof HostError && e.kind === 'invalid' && e.message === 'kv get refused: kv key must not be empty',
    );
    fake.failures.set('stepRecord', { tag: 'unavailable', val: 'redis is down' });
    assert.throws(() => host.stepRecord('s', '1'), (e: unknown) => e instanceof HostError && e.retryable && e.message === 'step record: redis is down');
    fake.failures.set('kvSet', { tag: 'limit-exceeded', val: 'value over 64 KiB' });
    assert.throws(() => host.kvSet('k', 'v', undefined), /kv set: limit exceeded: value over 64 KiB/);
    assert.throws(() => host.secret('NOPE'), /secret `NOPE` refused: no secret `NOPE` is set/);
    fake.children = undefined;
    assert.throws(() => host.childrenResults(), /children results unsupported: this host has no flows/);
  });

  test(`${engine} shapes of the 0.5.0 calls: new-job options and invoke's options as none, u64 per engine`, () => {
    resetFake(engine);
    const host = createHost(rawImports, engine);
    const job = { queue: 'q', name: 'n', data: '{}', options: undefined };
    assert.deepEqual(host.enqueue('e', job), { queue: 'q', id: 'job-1:e' });
    assert.deepEqual(host.enqueue('e2', { ...job, options: '{"attempts":2}' }), { queue: 'q', id: 'job-1:e2' });
    recordInvoke('i', [{ completed: 1 }, { failed: { kind: 'guest_fatal', reason: 'no', attempts: 1 } }, 'timedOut']);
    assert.deepEqual(host.invoke('i', [job, job, job], undefined, undefined), [
      { tag: 'completed', val: '1' },
      { tag: 'failed', val: { kind: 'guest_fatal', reason: 'no', attempts: 1 } },
      { tag: 'timed-out' },
    ]);
    assert.deepEqual(host.invoke('i', [job], 2, 1000.9).length, 3);
    assert.throws(() => host.invoke('parks', [job], undefined, undefined), /parked on wait `parks`/);
    assert.equal(host.sendEvent('s', 'e', '{"a":1}'), 'ev_fake_s');
    assert.deepEqual(fake.workCalls.map((c) => (c.op === 'invoke' ? [c.maxRunning, c.timeoutMs] : c.op)), [
      'enqueue',
      'enqueue',
      [undefined, undefined],
      [2, 1000],
      [undefined, undefined],
      'sendEvent',
    ]);
    assert.throws(() => host.retryAfter(1500.5, 'r'), /ended: retry after 1500 ms: r/);
    assert.throws(() => host.rateLimit(10, 'q'), /ended: rate limit for 10 ms: q/);
    fake.failures.set('enqueue', { tag: 'invalid', val: "the job's data is not JSON" });
    assert.throws(() => host.enqueue('x', job), (e: unknown) => e instanceof HostError && e.message === "enqueue refused: the job's data is not JSON");
    fake.failures.set('sendEvent', { tag: 'unavailable', val: 'redis is down' });
    assert.throws(() => host.sendEvent('x', 'e', '{}'), (e: unknown) => e instanceof HostError && e.message === 'send event: redis is down');
  });

  test(`${engine} job record becomes JobInfo`, () => {
    resetFake(engine);
    const info = jobInfo(rawJob({ enqueuedAtMs: 1_700_000_000_000, startedAtMs: 1_700_000_000_500 }));
    assert.equal(info.enqueuedAt, 1_700_000_000_000);
    assert.equal(info.startedAt, 1_700_000_000_500);
    assert.equal(typeof info.enqueuedAt, 'number');
    assert.equal(info.parent, undefined);
    assert.equal(info.maxAttempts, 3);
    const child = jobInfo(rawJob({ parent: { queue: 'flows', id: 'p1' } }));
    assert.deepEqual(child.parent, { queue: 'flows', id: 'p1' });
  });
}

test('option and u64 helpers', () => {
  assert.equal(fromOption(null), undefined);
  assert.equal(fromOption(undefined), undefined);
  assert.equal(fromOption(''), '');
  assert.equal(fromOption(0), 0);
  assert.equal(fromU64(5n), 5);
  assert.equal(fromU64(5), 5);
  assert.equal(toU64('starlingmonkey', 5.9), 5n);
  assert.equal(toU64('quickjs', 5.9), 5);
  assert.equal(toU64('quickjs', -3), 0);
});

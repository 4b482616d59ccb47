import assert from 'node:assert/strict';
import { test as nodeTest } from 'node:test';
import { NeverSettledError, SyncPromise, drainJobs, settleNow } from '../src/sync-promise';
import { ENGINE } from './harness';

// These run synchronously on both bundles: they exercise SyncPromise itself.
const test = (name: string, fn: () => void) => nodeTest(`[${ENGINE}] SyncPromise: ${name}`, fn);

test('reactions run in spec order when the queue drains', () => {
  const log: string[] = [];
  const p = SyncPromise.resolve(1);
  p.then(() => log.push('then 1'));
  SyncPromise.resolve().then(() => log.push('then 2')).then(() => log.push('then 4'));
  p.then(() => log.push('then 3'));
  log.push('sync');
  assert.deepEqual(log, ['sync']);
  drainJobs();
  assert.deepEqual(log, ['sync', 'then 1', 'then 2', 'then 3', 'then 4']);
});

test('thenables are adopted; cycles rejected', () => {
  const adopted = new SyncPromise((resolve) => resolve({ then: (ok: (v: number) => void) => ok(7) }));
  assert.equal(settleNow(adopted), 7);
  const self: SyncPromise<unknown> = new SyncPromise((resolve) => queueMicrotaskLike(() => resolve(self)));
  assert.throws(() => settleNow(self), TypeError);
});

function queueMicrotaskLike(f: () => void) {
  SyncPromise.resolve().then(f);
}

test('combinators', () => {
  assert.deepEqual(settleNow(SyncPromise.all([1, SyncPromise.resolve(2), new SyncPromise((r) => r(3))])), [1, 2, 3]);
  assert.deepEqual(settleNow(SyncPromise.all([])), []);
  assert.throws(() => settleNow(SyncPromise.all([1, SyncPromise.reject(new Error('no'))])), /no/);
  assert.deepEqual(settleNow(SyncPromise.allSettled([1, SyncPromise.reject('x')])), [
    { status: 'fulfilled', value: 1 },
    { status: 'rejected', reason: 'x' },
  ]);
  assert.equal(settleNow(SyncPromise.race([new SyncPromise(() => {}), SyncPromise.resolve('b')])), 'b');
  assert.equal(settleNow(SyncPromise.any([SyncPromise.reject(1), SyncPromise.resolve(2)])), 2);
  assert.throws(() => settleNow(SyncPromise.any([SyncPromise.reject(1)])), AggregateError);
  const { promise, resolve } = SyncPromise.withResolvers<number>();
  resolve(5);
  assert.equal(settleNow(promise), 5);
});

test('finally, catch and errors thrown in reactions', () => {
  const seen: string[] = [];
  const p = SyncPromise.reject(new Error('boom'))
    .finally(() => seen.push('finally'))
    .catch((e: Error) => `caught ${e.message}`);
  assert.equal(settleNow(p), 'caught boom');
  assert.deepEqual(seen, ['finally']);
  const thrown = SyncPromise.resolve(1).then(() => {
    throw new Error('in then');
  });
  assert.throws(() => settleNow(thrown), /in then/);
  assert.equal(settleNow(new SyncPromise((_r, reject) => { throw new Error('executor'); }).catch((e: Error) => e.message)), 'executor');
});

test('a long chain does not grow the stack', () => {
  let p: SyncPromise<number> = SyncPromise.resolve(0);
  for (let i = 0; i < 100_000; i++) p = p.then((n) => n + 1);
  assert.equal(settleNow(p), 100_000);
});

test('a promise that nothing settles is reported', () => {
  assert.throws(() => settleNow(new SyncPromise(() => {})), NeverSettledError);
  assert.equal(settleNow(5 as unknown as SyncPromise<number>), 5);
});

if (ENGINE === 'quickjs') {
  test('the QuickJS prelude made it the global Promise', () => {
    assert.equal(globalThis.Promise as unknown, SyncPromise);
    const order: number[] = [];
    queueMicrotask(() => order.push(1));
    assert.deepEqual(order, []);
    drainJobs();
    assert.deepEqual(order, [1]);
  });
}

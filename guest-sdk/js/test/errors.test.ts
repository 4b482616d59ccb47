import assert from 'node:assert/strict';
import { FatalError, HostError, RetryableError, UnrecoverableError, invalidData, toJobError } from '../src/index';
import { hostErrorVariant, toHostError } from '../src/errors';
import { test } from './harness';

test('thrown values map onto job-error like BullMQ', () => {
  assert.deepEqual(toJobError(new FatalError('bad amount')), { tag: 'fatal', val: 'bad amount' });
  assert.deepEqual(toJobError(new UnrecoverableError('bad amount')), { tag: 'fatal', val: 'bad amount' });
  assert.deepEqual(toJobError(new RetryableError('later')), { tag: 'retry', val: 'later' });
  assert.deepEqual(toJobError(new Error('boom')), { tag: 'retry', val: 'boom' });
  assert.deepEqual(toJobError(new TypeError('x is undefined')), { tag: 'retry', val: 'x is undefined' });
  assert.deepEqual(toJobError('just a string'), { tag: 'retry', val: 'just a string' });
  assert.deepEqual(toJobError({ tag: 'fatal', val: 'raw' }), { tag: 'fatal', val: 'raw' });
  assert.deepEqual(toJobError({ tag: 'retry', val: 'raw' }), { tag: 'retry', val: 'raw' });
  assert.deepEqual(toJobError({ message: 'like an error' }), { tag: 'retry', val: 'like an error' });
  assert.deepEqual(toJobError(42), { tag: 'retry', val: '42' });
  assert.deepEqual(toJobError(undefined), { tag: 'retry', val: 'undefined' });
  // A BullMQ UnrecoverableError ported as is keeps its meaning.
  class Unrecoverable extends Error {
    constructor(m: string) {
      super(m);
      this.name = 'UnrecoverableError';
    }
  }
  assert.deepEqual(toJobError(new Unrecoverable('no')), { tag: 'fatal', val: 'no' });
});

test('host errors read like the Rust SDK and retry only when unavailable', () => {
  const cases: [HostError['kind'], string, 'retry' | 'fatal'][] = [
    ['unavailable', 'kv get: redis down', 'retry'],
    ['unsupported', 'kv get unsupported: redis down', 'fatal'],
    ['invalid', 'kv get refused: redis down', 'fatal'],
    ['limit-exceeded', 'kv get: limit exceeded: redis down', 'fatal'],
  ];
  for (const [kind, message, tag] of cases) {
    const e = new HostError('kv get', kind, 'redis down');
    assert.equal(e.message, message);
    assert.equal(e.kind, kind);
    assert.equal(e.detail, 'redis down');
    assert.equal(e.operation, 'kv get');
    assert.equal(e.retryable, tag === 'retry');
    assert.ok(e instanceof Error);
    assert.deepEqual(toJobError(e), { tag, val: message });
  }
});

test('both engines\u2019 host-error shapes are recognised', () => {
  const variant = { tag: 'invalid', val: 'kv key must not be empty' };
  // StarlingMonkey: an object with the variant on `payload`.
  assert.deepEqual(hostErrorVariant({ payload: variant }), variant);
  const smError = Object.assign(new Error('[object Object] (see error.payload)'), { payload: variant });
  assert.deepEqual(hostErrorVariant(smError), variant);
  // QuickJS: the variant itself.
  assert.deepEqual(hostErrorVariant(variant), variant);
  // Anything else is not a host error.
  assert.equal(hostErrorVariant(new TypeError('nope')), undefined);
  assert.equal(hostErrorVariant({ tag: 'retry', val: 'x' }), undefined);
  assert.equal(hostErrorVariant(null), undefined);
  const mapped = toHostError('kv get', { payload: variant });
  assert.ok(mapped instanceof HostError);
  assert.equal((mapped as HostError).message, 'kv get refused: kv key must not be empty');
  const other = new TypeError('not a host error');
  assert.equal(toHostError('kv get', other), other);
});

test('invalidData names the field', () => {
  assert.equal(invalidData('expected a number', 'amount').message, 'invalid job data at field `amount`: expected a number');
  assert.equal(invalidData('expected an object').message, 'invalid job data: expected an object');
  assert.ok(invalidData('x') instanceof FatalError);
});

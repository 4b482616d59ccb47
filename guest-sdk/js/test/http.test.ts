import assert from 'node:assert/strict';
import { FatalError, RetryableError, ensureOk, isRetryableStatus, readJson } from '../src/index';
import { caught, test } from './harness';

// A stand-in for `Response` (the QuickJS bundle cannot await native promises).
const response = (status: number, body: string) => ({ status, text: async () => body }) as unknown as Response;

test('ensureOk passes 2xx and maps failures like the Rust SDK', async () => {
  const ok = response(201, '{"id":"led_1"}');
  assert.equal(await ensureOk(ok), ok);
  for (const [status, retry] of [[500, true], [503, true], [429, true], [408, true], [400, false], [401, false], [404, false], [302, false]] as const) {
    const e = await caught(() => ensureOk(response(status, 'x'.repeat(600))));
    assert.ok(retry ? e instanceof RetryableError : e instanceof FatalError, String(status));
    assert.equal((e as Error).message, `HTTP status ${status}: ${'x'.repeat(512)}`);
    assert.equal((e as unknown as { status: number }).status, status);
    assert.equal(isRetryableStatus(status), retry);
  }
});

test('readJson: a body that is not JSON is fatal', async () => {
  assert.deepEqual(await readJson(response(200, '{"id":"x"}')), { id: 'x' });
  const e = await caught(() => readJson(response(200, '<html>')));
  assert.ok(e instanceof FatalError);
  assert.match((e as Error).message, /^response body: /);
});

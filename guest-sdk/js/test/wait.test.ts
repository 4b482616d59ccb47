// Durable waits: ctx.step.waitForEvent, waitToken and waitForToken over the
// fake host (test/fake/context.ts), which parks the job (throws FakeParked,
// where the real import traps) unless an outcome is recorded for the key.
import assert from 'node:assert/strict';
import { FatalError, HostError, handler, type Context, type Event } from '../src/index';
import { fake, rawJob, recordEvent, recordTimeout, recordTokenResult } from './fake/state';
import { caught, ENGINE, test } from './harness';

type Run = (job: ReturnType<typeof rawJob>) => string | Promise<string>;

async function run(h: Run, data: unknown = {}): Promise<{ ok?: string; err?: unknown }> {
  try {
    const result = h(rawJob({ data: JSON.stringify(data) }));
    if (ENGINE === 'quickjs') assert.equal(typeof result, 'string', 'QuickJS runs return synchronously');
    return { ok: await result };
  } catch (e) {
    return { err: e };
  }
}

/** Runs `fn` with a live Context; what it returned or threw. */
async function withCtx<T>(fn: (ctx: Context) => Promise<T>): Promise<{ value?: T; error?: unknown }> {
  let out: { value?: T; error?: unknown } = {};
  await run(handler(async (_d, ctx) => {
    try {
      out = { value: await fn(ctx) };
    } catch (e) {
      out = { error: e };
    }
  }));
  return out;
}

const settled = (id: string, refundId = 'r1'): Event => ({ name: 'refund.settled', data: { refundId }, id, ts: 1_700_000_000_000 });

test('waitForEvent: event, match and timeout as the host gets them; the event comes back parsed', async () => {
  recordEvent('settlement', settled('ev_1'));
  const r = await withCtx((ctx) =>
    ctx.step.waitForEvent('settlement', 'refund.settled', { match: { path: '$.refundId', value: 'r1' }, timeout: '7d' }),
  );
  assert.deepEqual(r, { value: { name: 'refund.settled', data: { refundId: 'r1' }, id: 'ev_1', ts: 1_700_000_000_000 } });
  assert.deepEqual(fake.waitCalls, [
    { op: 'waitForEvent', id: 'settlement', event: 'refund.settled', match: { path: '$.refundId', value: '"r1"' }, timeoutMs: 604_800_000 },
  ]);
});

test('waitForEvent: match values are sent as JSON text; no match is none', async () => {
  for (const k of ['a', 'b', 'c', 'd', 'e', 'f']) recordTimeout(k);
  await withCtx(async (ctx) => {
    await ctx.step.waitForEvent('a', 'e', { match: { path: '$.n', value: 42 }, timeout: 1000 });
    await ctx.step.waitForEvent('b', 'e', { match: { path: '$.order.id', value: { id: 'o-17', tags: ['x'] } }, timeout: 1000 });
    await ctx.step.waitForEvent('c', 'e', { match: { path: '$.flag', value: false }, timeout: 1000 });
    await ctx.step.waitForEvent('d', 'e', { match: { path: '$.x', value: null }, timeout: 1000 });
    await ctx.step.waitForEvent('e', 'e', { match: { path: '$.text', value: 'say "hi"' }, timeout: 1000 });
    await ctx.step.waitForEvent('f', 'e', { timeout: 1000 });
  });
  const values = fake.waitCalls.map((c) => (c.op === 'waitForEvent' ? c.match : 'other'));
  assert.deepEqual(values, [
    { path: '$.n', value: '42' },
    { path: '$.order.id', value: '{"id":"o-17","tags":["x"]}' },
    { path: '$.flag', value: 'false' },
    { path: '$.x', value: 'null' },
    { path: '$.text', value: '"say \\"hi\\""' },
    undefined,
  ]);
});

test('waitForEvent: a match value with no JSON is a FatalError, before the host is asked', async () => {
  for (const value of [1n, undefined, () => 1]) {
    const r = await withCtx((ctx) => ctx.step.waitForEvent('w', 'e', { match: { path: '$.a', value }, timeout: 1000 }));
    assert.ok(r.error instanceof FatalError, String(r.error));
    assert.match((r.error as Error).message, /^the match value of wait `w` is not serialisable: /);
  }
  assert.deepEqual(fake.waitCalls, []);
});

test('timeouts: durations and milliseconds, whole ms; unreadable or missing ones are fatal', async () => {
  for (const k of ['s', 'ms', 'frac', 'tok']) recordTimeout(k);
  await withCtx(async (ctx) => {
    await ctx.step.waitForEvent('s', 'e', { timeout: '30s' });
    await ctx.step.waitForEvent('ms', 'e', { timeout: 1500 });
    await ctx.step.waitForEvent('frac', 'e', { timeout: 1500.9 });
    await ctx.step.waitForToken('tok', { timeout: '3d' });
  });
  assert.deepEqual(fake.waitCalls.map((c) => ('timeoutMs' in c ? c.timeoutMs : -1)), [30_000, 1500, 1500, 259_200_000]);
  const bad = await run(handler(async (_d, ctx) => ctx.step.waitForEvent('x', 'e', { timeout: 'next week' })));
  assert.equal((bad.err as { tag: string }).tag, 'fatal');
  assert.match((bad.err as { val: string }).val, /^invalid duration "next week"/);
  const missing = await run(handler(async (_d, ctx) => ctx.step.waitForToken('x', {} as { timeout: string })));
  assert.deepEqual(missing, { err: { tag: 'fatal', val: 'wait `x` needs a timeout (`timeout: "7d"`, `"30s"` or milliseconds)' } });
  assert.deepEqual(fake.waitCalls.length, 4, 'nothing reached the host');
});

test('null on timeout, for events and tokens', async () => {
  recordTimeout('settlement');
  recordTimeout('approval');
  const r = await withCtx(async (ctx) => ({
    event: await ctx.step.waitForEvent('settlement', 'refund.settled', { timeout: '7d' }),
    token: await ctx.step.waitForToken('approval', { timeout: '3d' }),
  }));
  assert.deepEqual(r, { value: { event: null, token: null } });
});

test('waitForToken: the completion body comes back parsed, any JSON value', async () => {
  recordTokenResult('approval', { approved: true, by: 'ann' });
  recordTokenResult('approval#2', 'ok');
  recordTokenResult('approval#3', null);
  const r = await withCtx(async (ctx) => [
    await ctx.step.waitForToken<{ approved: boolean; by: string }>('approval', { timeout: '3d' }),
    await ctx.step.waitForToken('approval', { timeout: '3d' }),
    await ctx.step.waitForToken('approval', { timeout: '3d' }),
  ]);
  // A token completed with JSON `null` reads like a timeout: both are null.
  assert.deepEqual(r, { value: [{ approved: true, by: 'ann' }, 'ok', null] });
});

test('repeated wait ids get id, id#2, ... in one "wait" count, apart from steps and sleeps', async () => {
  for (const k of ['poll', 'poll#2', 'poll#3', 'mixed', 'mixed#2']) recordTimeout(k);
  await withCtx(async (ctx) => {
    await ctx.step.run('poll', () => 1);
    await ctx.step.sleep('poll', 10);
    for (let i = 0; i < 3; i++) await ctx.step.waitForEvent('poll', 'tick', { timeout: '1m' });
    await ctx.step.run('poll', () => 2);
    // Event and token waits share the count, as in the Rust SDK.
    await ctx.step.waitForEvent('mixed', 'tick', { timeout: '1m' });
    await ctx.step.waitForToken('mixed', { timeout: '1m' });
  });
  assert.deepEqual(fake.waitCalls.map((c) => c.id), ['poll', 'poll#2', 'poll#3', 'mixed', 'mixed#2']);
  assert.deepEqual([...fake.steps.keys()], ['poll', 'poll#2']);
  assert.deepEqual(fake.sleeps.map((s) => s.id), ['poll']);
});

test('waitToken: the key of the next waitForToken, not counted; the same token on every run', async () => {
  recordTimeout('approval');
  recordTimeout('approval#2');
  const h = async (ctx: Context) => {
    const tokens: string[] = [];
    for (let i = 0; i < 2; i++) {
      tokens.push(await ctx.step.waitToken('approval'));
      tokens.push(await ctx.step.waitToken('approval')); // asking twice changes nothing
      await ctx.step.waitForToken('approval', { timeout: '1h' });
    }
    tokens.push(await ctx.step.waitToken('approval')); // the third wait's, not yet reached
    return tokens;
  };
  const first = await withCtx(h);
  assert.deepEqual(first, { value: ['wt_fake_approval', 'wt_fake_approval', 'wt_fake_approval#2', 'wt_fake_approval#2', 'wt_fake_approval#3'] });
  assert.deepEqual(fake.waitCalls.map((c) => `${c.op} ${c.id}`), [
    'waitToken approval',
    'waitToken approval',
    'waitForToken approval',
    'waitToken approval#2',
    'waitToken approval#2',
    'waitForToken approval#2',
    'waitToken approval#3',
  ]);
  fake.waitCalls = [];
  assert.deepEqual(await withCtx(h), first, 'a later run gets the same tokens and keys');
});

test('a wait with no outcome parks the job there; the next run gets the recorded outcome', async () => {
  let refunds = 0;
  const h = handler(async (_d, ctx) => {
    const token = await ctx.step.waitToken('approval');
    ctx.progress({ stage: 'awaiting-approval', approvalToken: token });
    const decision = await ctx.step.waitForToken<{ approved: boolean }>('approval', { timeout: '3d' });
    if (!decision?.approved) return 'not approved';
    await ctx.step.run('issue', () => ++refunds);
    const event = await ctx.step.waitForEvent('settlement', 'refund.settled', { match: { path: '$.refundId', value: 'r1' }, timeout: '7d' });
    return event ? `settled by ${event.id}` : 'unsettled';
  });
  const parked = await run(h);
  assert.equal((parked.err as { val: string }).val, 'parked on wait `approval`');
  assert.deepEqual(fake.parked, ['approval']);
  assert.deepEqual(fake.progress, [{ tag: 'json', val: '{"stage":"awaiting-approval","approvalToken":"wt_fake_approval"}' }]);
  recordTokenResult('approval', { approved: true });
  await run(h);
  assert.deepEqual(fake.parked, ['approval', 'settlement']);
  recordEvent('settlement', settled('ev_9'));
  assert.deepEqual(await run(h), { ok: '"settled by ev_9"' });
  assert.equal(refunds, 1, 'the step ran once over three runs');
});

test('recorded outcomes that do not parse are fatal, naming the wait', async () => {
  fake.waits.set('settlement', '{not json');
  fake.waits.set('shape', '{"name":"e","id":7,"ts":1}');
  fake.waits.set('approval', 'nope');
  assert.match(
    ((await run(handler(async (_d, ctx) => ctx.step.waitForEvent('settlement', 'e', { timeout: 1 })))).err as { val: string }).val,
    /^the event of wait `settlement` does not parse: /,
  );
  assert.deepEqual(await run(handler(async (_d, ctx) => ctx.step.waitForEvent('shape', 'e', { timeout: 1 }))), {
    err: { tag: 'fatal', val: 'the event of wait `shape` does not parse: expected a string at `id`' },
  });
  const t = await run(handler(async (_d, ctx) => ctx.step.waitForToken('approval', { timeout: 1 })));
  assert.equal((t.err as { tag: string }).tag, 'fatal');
  assert.match((t.err as { val: string }).val, /^the result of wait `approval` does not parse: /);
  // An event without `data` gets `null`, like the Rust SDK's `#[serde(default)]`.
  fake.waits.set('bare', '{"name":"e","id":"ev","ts":5}');
  assert.deepEqual(await withCtx((ctx) => ctx.step.waitForEvent('bare', 'e', { timeout: 1 })), {
    value: { name: 'e', data: null, id: 'ev', ts: 5 },
  });
});

test('host errors: HostError naming the call, retried when unavailable, fatal otherwise', async () => {
  fake.failures.set('waitForEvent', { tag: 'unavailable', val: 'redis is down' });
  assert.deepEqual(await run(handler(async (_d, ctx) => ctx.step.waitForEvent('w', 'e', { timeout: '1h' }))), {
    err: { tag: 'retry', val: 'wait for event: redis is down' },
  });
  assert.deepEqual(
    await run(handler(async (_d, ctx) => ctx.step.waitForEvent('w', 'e', { match: { path: 'refundId', value: 'r1' }, timeout: '1h' }))),
    { err: { tag: 'fatal', val: 'wait for event refused: match path `refundId` is not `$` then .name segments' } },
  );
  assert.deepEqual(await run(handler(async (_d, ctx) => ctx.step.waitForEvent('w', 'e', { timeout: '2y' }))), {
    err: { tag: 'fatal', val: 'wait for event refused: wait timeout is more than a year' },
  });
  fake.failures.set('waitForEvent', { tag: 'unsupported', val: 'no events arrive in `airlock run`' });
  assert.deepEqual(await run(handler(async (_d, ctx) => ctx.step.waitForEvent('w', 'e', { timeout: '1h' }))), {
    err: { tag: 'fatal', val: 'wait for event unsupported: no events arrive in `airlock run`' },
  });
  fake.failures.set('waitToken', { tag: 'unavailable', val: 'redis is down' });
  assert.deepEqual(await run(handler(async (_d, ctx) => ctx.step.waitToken('approval'))), {
    err: { tag: 'retry', val: 'wait token: redis is down' },
  });
  fake.failures.set('waitToken', { tag: 'invalid', val: 'wait id must not be empty' });
  assert.deepEqual(await run(handler(async (_d, ctx) => ctx.step.waitToken(''))), {
    err: { tag: 'fatal', val: 'wait token refused: wait id must not be empty' },
  });
  fake.failures.set('waitForToken', { tag: 'limit-exceeded', val: 'too many waits' });
  assert.deepEqual(await run(handler(async (_d, ctx) => ctx.step.waitForToken('approval', { timeout: '1h' }))), {
    err: { tag: 'fatal', val: 'wait for token: limit exceeded: too many waits' },
  });
  // A handler may catch it and look at the kind and the call.
  fake.failures.set('waitForToken', { tag: 'unavailable', val: 'redis is down' });
  const e = await caught(() => withCtx((ctx) => ctx.step.waitForToken('approval', { timeout: '1h' })).then((r) => { throw r.error; }));
  assert.ok(e instanceof HostError);
  assert.deepEqual([e.kind, e.operation, e.detail, e.retryable], ['unavailable', 'wait for token', 'redis is down', true]);
});

// Starting other work (airlock:job@0.5.0): ctx.enqueue, ctx.invoke,
// ctx.invokeMany and ctx.sendEvent, and ending a run to run again later
// (ctx.retryAfter, ctx.rateLimit, a thrown RetryAfterError, the 429
// helper) over the fake host (test/fake/context.ts). Like the real host,
// the fake records enqueues and sends as steps, parks the job at an invoke
// with no recorded ends (throws FakeParked) and ends the run at a
// retry-after or rate-limit (throws FakeEnded, where the import traps).
import assert from 'node:assert/strict';
import {
  DEFAULT_RETRY_AFTER_MS,
  FatalError,
  InvokeError,
  MAX_LATER_MS,
  RetryAfterError,
  RetryableError,
  ensureOk,
  handler,
  parseRetryAfter,
  retryAfterFrom,
  toJobError,
  type ChildEnd,
  type Context,
  type HostError,
} from '../src/index';
import { fake, rawJob, recordInvoke } from './fake/state';
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
  await run(
    handler(async (_d, ctx) => {
      try {
        out = { value: await fn(ctx) };
      } catch (e) {
        out = { error: e };
      }
    }),
  );
  return out;
}

const charge = { queue: 'charges', name: 'charge', data: { orderId: 'o1', amount: 99.5 } };
const declined = { kind: 'guest_fatal', reason: 'card declined', attempts: 1 };

test('invoke: parks the job until the child has ended, then resolves with its value', async () => {
  let before = 0;
  const h = handler(async (_d, ctx) => {
    await ctx.step.run('before', () => ++before);
    const c = await ctx.invoke<{ chargeId: string }>('charge-payment', charge);
    return { chargeId: c.chargeId };
  });
  const parked = await run(h);
  assert.deepEqual(parked, { err: { tag: 'retry', val: 'parked on wait `charge-payment`' } });
  assert.deepEqual(fake.parked, ['charge-payment']);
  recordInvoke('charge-payment', [{ completed: { chargeId: 'ch_o1' } }]);
  assert.deepEqual(await run(h), { ok: '{"chargeId":"ch_o1"}' });
  assert.equal(before, 1, 'the step before the invoke ran once');
  assert.deepEqual(fake.workCalls, [
    { op: 'invoke', id: 'charge-payment', jobs: [{ queue: 'charges', name: 'charge', data: '{"orderId":"o1","amount":99.5}', options: undefined }], maxRunning: undefined, timeoutMs: undefined },
    { op: 'invoke', id: 'charge-payment', jobs: [{ queue: 'charges', name: 'charge', data: '{"orderId":"o1","amount":99.5}', options: undefined }], maxRunning: undefined, timeoutMs: undefined },
  ]);
});

test('invoke: options and timeout as the host gets them; repeated ids are id, id#2 (one count with invokeMany)', async () => {
  recordInvoke('c', [{ completed: 1 }]);
  recordInvoke('c#2', [{ completed: 2 }]);
  recordInvoke('c#3', [{ completed: 3 }]);
  const r = await withCtx(async (ctx) => [
    await ctx.invoke('c', { ...charge, options: { attempts: 3, delay: '5s', priority: undefined } }, { timeout: '1h' }),
    await ctx.invoke('c', { ...charge, options: {} }, { timeout: 1500.7 }),
    (await ctx.invokeMany('c', [charge]))[0],
  ]);
  assert.deepEqual(r, { value: [1, 2, { status: 'completed', value: 3 }] });
  const calls = fake.workCalls.map((c) => (c.op === 'invoke' ? [c.id, c.jobs[0].options, c.timeoutMs] : []));
  assert.deepEqual(calls, [
    ['c', '{"attempts":3,"delay":5000}', 3_600_000],
    ['c#2', undefined, 1500],
    ['c#3', undefined, undefined],
  ]);
});

test('invoke: a child that failed for good rejects with an InvokeError the handler can catch', async () => {
  recordInvoke('charge-payment', [{ failed: declined }]);
  const r = await withCtx((ctx) => ctx.invoke('charge-payment', charge));
  const e = r.error as InvokeError;
  assert.ok(e instanceof InvokeError);
  assert.ok(e instanceof FatalError, 'an InvokeError is fatal');
  assert.equal(e.kind, 'failed');
  assert.equal(e.id, 'charge-payment');
  assert.deepEqual(e.failure, declined);
  assert.equal(e.message, 'the invoked job failed for good after 1 attempt(s): guest_fatal: card declined');
  assert.equal(e.name, 'InvokeError');
});

test('invoke: a timeout rejects with InvokeError timedOut', async () => {
  recordInvoke('slow', ['timedOut']);
  const r = await withCtx((ctx) => ctx.invoke('slow', charge, { timeout: '1m' }));
  assert.ok(r.error instanceof InvokeError);
  assert.equal((r.error as InvokeError).kind, 'timedOut');
  assert.equal((r.error as InvokeError).failure, undefined);
  assert.equal((r.error as Error).message, 'the invoked job did not end in time');
});

test('invoke: an uncaught InvokeError fails the job fatally, with the child\'s reason', async () => {
  recordInvoke('charge-payment', [{ failed: { kind: 'guest_retry', reason: 'gateway down', attempts: 3 } }]);
  const r = await run(handler(async (_d, ctx) => ctx.invoke('charge-payment', charge)));
  assert.deepEqual(r, { err: { tag: 'fatal', val: 'the invoked job failed for good after 3 attempt(s): guest_retry: gateway down' } });
  assert.deepEqual(toJobError(new InvokeError('x', { status: 'timedOut' })), { tag: 'fatal', val: 'the invoked job did not end in time' });
});

test('invokeMany: the ends in the order of the jobs, a failed child hiding none of the others', async () => {
  recordInvoke('fan-out', [{ completed: { n: 0 } }, { failed: declined }, 'timedOut', { completed: { n: 3 } }]);
  const jobs = [0, 1, 2, 3].map((n) => ({ queue: 'work', name: 'part', data: { n } }));
  const r = await withCtx((ctx) => ctx.invokeMany<{ n: number }>('fan-out', jobs, { maxRunning: 2, timeout: '10m' }));
  const expected: ChildEnd<{ n: number }>[] = [
    { status: 'completed', value: { n: 0 } },
    { status: 'failed', failure: declined },
    { status: 'timedOut' },
    { status: 'completed', value: { n: 3 } },
  ];
  assert.deepEqual(r, { value: expected });
  assert.deepEqual(fake.workCalls, [
    {
      op: 'invoke',
      id: 'fan-out',
      jobs: [0, 1, 2, 3].map((n) => ({ queue: 'work', name: 'part', data: `{"n":${n}}`, options: undefined })),
      maxRunning: 2,
      timeoutMs: 600_000,
    },
  ]);
  // Promise.all-friendly: the values of the completed ones.
  const values = (r.value ?? []).flatMap((end) => (end.status === 'completed' ? [end.value.n] : []));
  assert.deepEqual(values, [0, 3]);
});

test('invokeMany: no jobs, no park; bad arguments are fatal before the host is asked', async () => {
  assert.deepEqual(await withCtx((ctx) => ctx.invokeMany('none', [])), { value: [] });
  assert.deepEqual(fake.parked, []);
  fake.workCalls = [];
  for (const maxRunning of [0, -1, 1.5]) {
    const r = await withCtx((ctx) => ctx.invokeMany('x', [charge], { maxRunning }));
    assert.ok(r.error instanceof FatalError, String(maxRunning));
    assert.match((r.error as Error).message, /^invoke `x`: maxRunning must be a whole number from 1/);
  }
  const bad = await withCtx((ctx) => ctx.invokeMany('x', [charge, { queue: 'q', name: 'n', data: { n: 1n } }]));
  assert.ok(bad.error instanceof FatalError);
  assert.match((bad.error as Error).message, /^the data of invoke `x` \(job 1\)'s job is not serialisable: /);
  assert.deepEqual(fake.workCalls, []);
});

test('invoke: a failed host call is a HostError, not an InvokeError', async () => {
  fake.failures.set('invoke', { tag: 'unavailable', val: 'redis is down' });
  const r = await run(handler(async (_d, ctx) => ctx.invoke('c', charge)));
  assert.deepEqual(r, { err: { tag: 'retry', val: 'invoke: redis is down' } });
  fake.failures.set('invoke', { tag: 'invalid', val: "the job's options are not a JSON object" });
  const caughtError = await withCtx((ctx) => ctx.invoke('c', charge));
  assert.equal((caughtError.error as HostError).name, 'HostError');
  assert.equal((caughtError.error as HostError).kind, 'invalid');
});

test('enqueue: a step — recorded, so a replay adds nothing; shares the steps\' occurrence count', async () => {
  const h = handler(async (_d, ctx) => {
    const first = await ctx.enqueue('receipt', { queue: 'mail', name: 'receipt', data: { to: 'c@example.com' }, options: { delay: 1000 } });
    const second = await ctx.enqueue('receipt', { queue: 'mail', name: 'receipt', data: undefined });
    await ctx.step.run('receipt', () => 'a step after them');
    return [first, second];
  });
  const out = '[{"queue":"mail","id":"job-1:receipt"},{"queue":"mail","id":"job-1:receipt#2"}]';
  assert.deepEqual(await run(h), { ok: out });
  assert.deepEqual(fake.started, ['mail/job-1:receipt', 'mail/job-1:receipt#2']);
  assert.deepEqual([...fake.steps.keys()], ['receipt', 'receipt#2', 'receipt#3']);
  assert.deepEqual(
    fake.workCalls.map((c) => (c.op === 'enqueue' ? c.job : undefined)),
    [
      { queue: 'mail', name: 'receipt', data: '{"to":"c@example.com"}', options: '{"delay":1000}' },
      { queue: 'mail', name: 'receipt', data: 'null', options: undefined },
    ],
  );
  assert.deepEqual(await run(h), { ok: out }, 'a replay gets the same refs');
  assert.equal(fake.started.length, 2, 'and adds nothing');
});

test('sendEvent: a step — resolves with the event id, sends once over replays', async () => {
  const h = handler(async (_d, ctx) => ctx.sendEvent('notify', 'order.reviewed', { orderId: 'o1', chargeId: 'ch_o1' }));
  assert.deepEqual(await run(h), { ok: '"ev_fake_notify"' });
  assert.deepEqual(await run(h), { ok: '"ev_fake_notify"' });
  assert.deepEqual(fake.started, ['event order.reviewed ev_fake_notify']);
  assert.deepEqual(fake.steps.get('notify'), '"ev_fake_notify"');
  assert.deepEqual(fake.workCalls[0], { op: 'sendEvent', id: 'notify', name: 'order.reviewed', data: '{"orderId":"o1","chargeId":"ch_o1"}' });
  const bad = await run(handler(async (_d, ctx) => ctx.sendEvent('n', 'e', { f: () => 1, n: 1n })));
  assert.equal((bad.err as { tag: string }).tag, 'fatal');
  assert.match((bad.err as { val: string }).val, /^the data of event `e` \(send `n`\) is not serialisable: /);
});

test('retryAfter and rateLimit end the run: the delay in ms, cut to a day; never resolve', async () => {
  let after = false;
  const r = await run(
    handler(async (_d, ctx) => {
      await ctx.retryAfter('90s', 'the API is busy');
      after = true;
    }),
  );
  assert.equal(after, false);
  assert.deepEqual(r, { err: { tag: 'retry', val: 'ended: retry after 90000 ms: the API is busy' } });
  await run(handler(async (_d, ctx) => ctx.rateLimit('2d', 'quota')));
  await run(handler(async (_d, ctx) => ctx.retryAfter(new Date(Date.now() + 60_000), 'at a time')));
  await run(handler(async (_d, ctx) => ctx.retryAfter(new Date(0), 'in the past')));
  assert.deepEqual(fake.laters.slice(0, 2), [
    { op: 'retryAfter', ms: 90_000, reason: 'the API is busy' },
    { op: 'rateLimit', ms: MAX_LATER_MS, reason: 'quota' },
  ]);
  assert.ok(fake.laters[2].ms > 50_000 && fake.laters[2].ms <= 60_000, String(fake.laters[2].ms));
  assert.equal(fake.laters[3].ms, 0);
  const bad = await run(handler(async (_d, ctx) => ctx.retryAfter('soon', 'x')));
  assert.equal((bad.err as { tag: string }).tag, 'fatal');
  assert.equal(fake.laters.length, 4, 'an unreadable delay reaches no host');
});

test('RetryAfterError thrown out of the handler: retry-after with its delay', async () => {
  const r = await run(handler(async () => { throw new RetryAfterError('upstream said later', '2m'); }));
  assert.deepEqual(fake.laters, [{ op: 'retryAfter', ms: 120_000, reason: 'upstream said later' }]);
  assert.deepEqual(r, { err: { tag: 'retry', val: 'ended: retry after 120000 ms: upstream said later' } });
  const e = new RetryAfterError('x', 5000);
  assert.ok(e instanceof RetryableError, 'a retry, when nothing ends the run');
  assert.equal(e.delayMs, 5000);
  assert.equal(e.retryAfter, 5000);
  assert.equal(new RetryAfterError('x', '3d').delayMs, MAX_LATER_MS);
  assert.deepEqual(toJobError(e), { tag: 'retry', val: 'x' });
});

test('RetryAfterError thrown out of a step: the run ends there, the step records nothing', async () => {
  const r = await run(
    handler(async (_d, ctx) => {
      await ctx.step.run('before', () => 1);
      await ctx.step.run('call-api', () => {
        throw new RetryAfterError('rate limited', 30_000);
      });
      return 'went on';
    }),
  );
  assert.deepEqual(fake.laters, [{ op: 'retryAfter', ms: 30_000, reason: 'rate limited' }], 'asked once');
  assert.deepEqual([...fake.steps.keys()], ['before']);
  assert.deepEqual(r, { err: { tag: 'retry', val: 'ended: retry after 30000 ms: rate limited' } });
  // The host is asked at the step, before a handler's catch could swallow
  // the error (the real import then stops the instance; the fake's throws).
  fake.laters = [];
  let askedBeforeCatch = -1;
  await run(
    handler(async (_d, ctx) => {
      try {
        await ctx.step.run('call-api', () => {
          throw new RetryAfterError('rate limited', '1m');
        });
      } catch {
        askedBeforeCatch = fake.laters.length;
      }
    }),
  );
  assert.equal(askedBeforeCatch, 1);
  assert.equal(fake.laters[0].ms, 60_000);
});

test('the new calls refuse to serve once their job has ended', async () => {
  let kept: Context | undefined;
  await run(handler((_d, ctx) => { kept = ctx; }));
  for (const [call, f] of [
    ['ctx.enqueue', () => kept!.enqueue('e', charge)],
    ['ctx.invoke', () => kept!.invoke('i', charge)],
    ['ctx.invokeMany', () => kept!.invokeMany('i', [charge])],
    ['ctx.sendEvent', () => kept!.sendEvent('s', 'e', {})],
    ['ctx.retryAfter', () => kept!.retryAfter(1000, 'r')],
    ['ctx.rateLimit', () => kept!.rateLimit(1000, 'r')],
  ] as const) {
    const e = await caught(f);
    assert.ok(e instanceof FatalError, call);
    assert.ok((e as Error).message.includes(`(${call}: `), (e as Error).message);
  }
  assert.deepEqual(fake.workCalls, []);
  assert.deepEqual(fake.laters, []);
});

test('parseRetryAfter: delay-seconds and the three HTTP-date forms, cut to 0..a day', () => {
  const now = Date.UTC(2015, 9, 21, 7, 28, 0);
  assert.equal(parseRetryAfter('120', now), 120_000);
  assert.equal(parseRetryAfter(' 0 ', now), 0);
  assert.equal(parseRetryAfter('999999', now), MAX_LATER_MS);
  assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:30:30 GMT', now), 150_000);
  assert.equal(parseRetryAfter('Wednesday, 21-Oct-15 07:29:00 GMT', now), 60_000);
  assert.equal(parseRetryAfter('Wed Oct 21 07:28:05 2015', now), 5_000);
  assert.equal(parseRetryAfter('Wed Oct  1 07:28:05 2015', now), 0, 'a past date is now');
  assert.equal(parseRetryAfter('Thu, 22 Oct 2015 07:28:00 GMT', now + 1), MAX_LATER_MS - 1);
  assert.equal(parseRetryAfter('Fri, 23 Oct 2015 07:28:00 GMT', now), MAX_LATER_MS);
  assert.equal(parseRetryAfter('1.5', now), 1500);
  for (const bad of [undefined, null, '', 'soon', '-5', '.5', '12s', 'Wed, 21 Foo 2015 07:30:30 GMT', 'Wed, 21 Oct 2015 25:30:30 GMT']) {
    assert.equal(parseRetryAfter(bad, now), undefined, String(bad));
  }
});

/** A stand-in for a `Response` (the QuickJS bundle cannot await native promises). */
const response = (status: number, headers: Record<string, string> = {}) =>
  ({ status, url: 'https://api.example.com/v1/x', headers: new Headers(headers), text: async () => 'slow down' }) as unknown as Response;

test('retryAfterFrom: a 429 gives a RetryAfterError of its Retry-After (1 s when unreadable); other statuses nothing', () => {
  const e = retryAfterFrom(response(429, { 'Retry-After': '7' }))!;
  assert.ok(e instanceof RetryAfterError);
  assert.equal(e.delayMs, 7000);
  assert.equal(e.message, 'HTTP 429 from https://api.example.com/v1/x (Retry-After: 7)');
  assert.equal((e as unknown as { status: number }).status, 429);
  const dated = retryAfterFrom(response(429, { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() }))!;
  assert.ok(dated.delayMs > 3_590_000 && dated.delayMs <= 3_600_000, String(dated.delayMs));
  assert.equal(retryAfterFrom(response(429))!.delayMs, DEFAULT_RETRY_AFTER_MS);
  assert.equal(retryAfterFrom(response(429))!.message, 'HTTP 429 from https://api.example.com/v1/x (no Retry-After)');
  const unreadable = retryAfterFrom(response(429, { 'retry-after': 'whenever' }))!;
  assert.equal(unreadable.delayMs, 1000);
  assert.equal(unreadable.message, 'HTTP 429 from https://api.example.com/v1/x (Retry-After "whenever" does not parse)');
  assert.equal(retryAfterFrom(response(429, { 'retry-after': '172800' }))!.delayMs, MAX_LATER_MS);
  // A plain object of headers works too.
  const plain = { status: 429, headers: { 'Retry-After': '3' } } as unknown as Response;
  assert.equal(retryAfterFrom(plain)!.delayMs, 3000);
  assert.equal(retryAfterFrom(plain)!.message, 'HTTP 429 (Retry-After: 3)');
  for (const status of [200, 503, 500, 408]) assert.equal(retryAfterFrom(response(status, { 'retry-after': '5' })), undefined);
});

test('ensureOk: retryOn429 turns a 429 into a RetryAfterError (when asked only); the job then runs again later', async () => {
  const plain = await caught(() => ensureOk(response(429, { 'retry-after': '5' })));
  assert.ok(plain instanceof RetryableError && !(plain instanceof RetryAfterError));
  const asked = await caught(() => ensureOk(response(429, { 'retry-after': '5' }), { retryOn429: true }));
  assert.ok(asked instanceof RetryAfterError);
  assert.equal((asked as RetryAfterError).delayMs, 5000);
  const other = await caught(() => ensureOk(response(503, { 'retry-after': '5' }), { retryOn429: true }));
  assert.ok(other instanceof RetryableError && !(other instanceof RetryAfterError));
  const r = await run(handler(async () => ensureOk(response(429, { 'retry-after': '42' }), { retryOn429: true })));
  assert.deepEqual(fake.laters, [{ op: 'retryAfter', ms: 42_000, reason: 'HTTP 429 from https://api.example.com/v1/x (Retry-After: 42)' }]);
  assert.equal((r.err as { tag: string }).tag, 'retry');
});

if (ENGINE === 'starlingmonkey') {
  test('ctx.fetch: retryOn429 ends the run at a 429 with its Retry-After; without it the 429 comes back', async () => {
    const g = globalThis as { fetch?: unknown };
    const saved = g.fetch;
    g.fetch = async () =>
      Object.defineProperty(new Response('slow down', { status: 429, headers: { 'retry-after': '12' } }), 'url', {
        value: 'https://api.example.com/v1/x?key=secret',
      });
    try {
      let status = 0;
      await run(handler(async (_d, ctx) => { status = (await ctx.fetch('https://api.example.com/v1/x?key=secret')).status; }));
      assert.equal(status, 429);
      assert.deepEqual(fake.laters, []);
      const r = await run(handler(async (_d, ctx) => ctx.fetch('https://api.example.com/v1/x?key=secret', { retryOn429: true })));
      assert.deepEqual(fake.laters, [
        { op: 'retryAfter', ms: 12_000, reason: 'HTTP 429 from https://api.example.com/v1/x (Retry-After: 12)' },
      ]);
      assert.equal((r.err as { tag: string }).tag, 'retry');
    } finally {
      g.fetch = saved;
    }
  });
}

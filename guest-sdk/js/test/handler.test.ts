import assert from 'node:assert/strict';
import { FatalError, HostError, RetryableError, eventPayload, handler, isEvent, type Context } from '../src/index';
import { toRun } from '../src/internal';
import { fake, rawJob } from './fake/state';
import { caught, ENGINE, test } from './harness';

type Run = (job: ReturnType<typeof rawJob>) => string | Promise<string>;

/** Runs a handler over the fake host; its result text or job-error variant. */
async function run(h: Run, data: unknown = {}, over: Parameters<typeof rawJob>[0] = {}): Promise<{ ok?: string; err?: unknown }> {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  try {
    const result = h(rawJob({ ...over, data: text }));
    if (ENGINE === 'quickjs') assert.equal(typeof result, 'string', 'QuickJS runs return synchronously');
    return { ok: await result };
  } catch (e) {
    return { err: e };
  }
}

test('output is JSON; undefined becomes null', async () => {
  assert.deepEqual(await run(handler(async () => ({ a: 1, b: [true, null] }))), { ok: '{"a":1,"b":[true,null]}' });
  assert.deepEqual(await run(handler(() => undefined)), { ok: 'null' });
  assert.deepEqual(await run(handler(async () => {})), { ok: 'null' });
  assert.deepEqual(await run(handler(() => 'text')), { ok: '"text"' });
  assert.deepEqual(await run(handler(() => () => 1)), { ok: 'null' });
  const r = await run(handler(() => ({ n: 1n })));
  assert.equal((r.err as { tag: string }).tag, 'fatal');
  assert.match((r.err as { val: string }).val, /^handler output could not be encoded as JSON: /);
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  assert.equal(((await run(handler(() => cyclic))).err as { tag: string }).tag, 'fatal');
});

test('job data is parsed; not JSON is fatal; decode refusals are fatal', async () => {
  let seen: unknown;
  await run(handler((data) => { seen = data; }), { orderId: 'o1', amount: 5 });
  assert.deepEqual(seen, { orderId: 'o1', amount: 5 });
  const bad = await run(handler(() => 1), 'not json');
  assert.equal((bad.err as { tag: string }).tag, 'fatal');
  assert.match((bad.err as { val: string }).val, /^invalid job data: /);
  const decoded = handler((n: number) => n * 2, {
    decode: (d) => {
      if (typeof (d as { n?: unknown }).n !== 'number') throw new Error('n must be a number');
      return (d as { n: number }).n;
    },
  });
  assert.deepEqual(await run(decoded, { n: 21 }), { ok: '42' });
  assert.deepEqual(await run(decoded, { n: 'x' }), { err: { tag: 'fatal', val: 'invalid job data: n must be a number' } });
});

test('errors: FatalError fatal, any other error retried, host errors by kind', async () => {
  assert.deepEqual(await run(handler(async () => { throw new FatalError('Invalid transaction amount'); })), {
    err: { tag: 'fatal', val: 'Invalid transaction amount' },
  });
  assert.deepEqual(await run(handler(() => { throw new Error('socket hang up'); })), { err: { tag: 'retry', val: 'socket hang up' } });
  assert.deepEqual(await run(handler(async () => { throw new RetryableError('later'); })), { err: { tag: 'retry', val: 'later' } });
  assert.deepEqual(await run(handler((_d, ctx) => ctx.kv.get(''))), {
    err: { tag: 'fatal', val: 'kv get refused: kv key must not be empty' },
  });
  fake.failures.set('kvGet', { tag: 'unavailable', val: 'redis is down' });
  assert.deepEqual(await run(handler((_d, ctx) => ctx.kv.get('k'))), { err: { tag: 'retry', val: 'kv get: redis is down' } });
  // A handler may catch a HostError and look at its kind.
  const r = await run(handler((_d, ctx) => {
    try {
      ctx.secret('MAIL_API_KEY');
    } catch (e) {
      return e instanceof HostError ? e.kind : 'other';
    }
  }));
  assert.deepEqual(r, { ok: '"invalid"' });
});

test('job info', async () => {
  let ctx!: Context;
  await run(handler((_d, c) => { ctx = c; }), {}, { id: '42', queue: 'q', name: 'n', attempt: 2, maxAttempts: 5, enqueuedAtMs: 1000, startedAtMs: 2000 });
  assert.deepEqual({ ...ctx.job }, {
    id: '42', queue: 'q', name: 'n', attempt: 2, maxAttempts: 5, enqueuedAt: 1000, startedAt: 2000, parent: undefined, rawData: '{}',
  });
});

test('steps run once, are recorded, and replay from the record', async () => {
  let runs = 0;
  const h = handler(async (_d, ctx) => {
    const a = await ctx.step.run('charge', async () => {
      runs++;
      return { chargeId: 'ch_1', at: new Date(0) };
    });
    const b = await ctx.step.run('nothing', () => undefined);
    return { a, b };
  });
  const first = await run(h);
  assert.deepEqual(first, { ok: '{"a":{"chargeId":"ch_1","at":"1970-01-01T00:00:00.000Z"},"b":null}' });
  assert.equal(runs, 1);
  assert.equal(fake.steps.get('charge'), '{"chargeId":"ch_1","at":"1970-01-01T00:00:00.000Z"}');
  assert.equal(fake.steps.get('nothing'), 'null');
  const second = await run(h);
  assert.deepEqual(second, first, 'a replay returns exactly what the first run returned');
  assert.equal(runs, 1, 'a recorded step does not run again');
});

test('repeated step ids get occurrence suffixes, per kind, like the Rust SDK', async () => {
  const h = handler(async (_d, ctx) => {
    const out: number[] = [];
    for (let i = 0; i < 3; i++) out.push(await ctx.step.run('repeat', () => i));
    await ctx.step.run('other', () => 0);
    await ctx.step.sleep('repeat', 10);
    await ctx.step.sleep('repeat', 10);
    return out;
  });
  assert.deepEqual(await run(h), { ok: '[0,1,2]' });
  assert.deepEqual([...fake.steps.keys()], ['repeat', 'repeat#2', 'repeat#3', 'other']);
  assert.deepEqual(fake.sleeps.map((s) => s.id), ['repeat', 'repeat#2']);
  // Replay: each occurrence gets its own record back.
  fake.steps.set('repeat#2', '7');
  assert.deepEqual(await run(h), { ok: '[0,7,2]' });
});

test('a failing step records nothing and fails the run', async () => {
  const h = handler(async (_d, ctx) => {
    await ctx.step.run('first', () => true);
    await ctx.step.run('flaky', () => {
      if (ctx.job.attempt === 1) throw new RetryableError('step `flaky` fails on the first attempt');
      return true;
    });
    return 'done';
  });
  assert.deepEqual(await run(h, {}, { attempt: 1 }), { err: { tag: 'retry', val: 'step `flaky` fails on the first attempt' } });
  assert.deepEqual([...fake.steps.keys()], ['first']);
  assert.deepEqual(await run(h, {}, { attempt: 2 }), { ok: '"done"' });
  assert.deepEqual(fake.stepCalls, ['lookup first', 'record first', 'lookup flaky', 'lookup first', 'lookup flaky', 'record flaky']);
});

test('step results must be JSON; recorded garbage is fatal', async () => {
  const r = await run(handler(async (_d, ctx) => ctx.step.run('s', () => ({ n: 1n }))));
  assert.equal((r.err as { tag: string }).tag, 'fatal');
  assert.match((r.err as { val: string }).val, /^result of step `s` is not serialisable: /);
  fake.steps.set('s', '{not json');
  const g = await run(handler(async (_d, ctx) => ctx.step.run('s', () => 1)));
  assert.match((g.err as { val: string }).val, /^recorded result of step `s` no longer fits its type: /);
});

test('sleeps: durations, dates, invalid input', async () => {
  const before = Date.now();
  await run(handler(async (_d, ctx) => {
    await ctx.step.sleep('day', '24h');
    await ctx.step.sleep('ms', 1500);
    await ctx.step.sleepUntil('date', new Date(1_800_000_000_000));
    await ctx.step.sleepUntil('num', 1_800_000_000_001);
    await ctx.step.sleepUntil('iso', '2027-01-15T00:00:00Z');
  }));
  const after = Date.now();
  const [day, ms, date, num, iso] = fake.sleeps;
  assert.ok(day.wakeAtMs >= before + 86_400_000 && day.wakeAtMs <= after + 86_400_000);
  assert.ok(ms.wakeAtMs >= before + 1500 && ms.wakeAtMs <= after + 1500);
  assert.equal(date.wakeAtMs, 1_800_000_000_000);
  assert.equal(num.wakeAtMs, 1_800_000_000_001);
  assert.equal(iso.wakeAtMs, Date.parse('2027-01-15T00:00:00Z'));
  const bad = await run(handler(async (_d, ctx) => ctx.step.sleep('x', 'tomorrow')));
  assert.equal((bad.err as { tag: string }).tag, 'fatal');
  const badDate = await run(handler(async (_d, ctx) => ctx.step.sleepUntil('x', 'not a date')));
  assert.deepEqual(badDate, { err: { tag: 'fatal', val: 'invalid wake-up time not a date' } });
});

test('progress: percent clamped, anything else as JSON', async () => {
  await run(handler((_d, ctx) => {
    ctx.progress(50);
    ctx.progress(250);
    ctx.progress(-4);
    ctx.progress(33.7);
    ctx.progress({ done: 3, total: 10 });
    ctx.progress('half');
    ctx.progress({ n: 1n }); // unencodable: best effort, dropped
  }));
  assert.deepEqual(fake.progress, [
    { tag: 'percent', val: 50 },
    { tag: 'percent', val: 100 },
    { tag: 'percent', val: 0 },
    { tag: 'percent', val: 33 },
    { tag: 'json', val: '{"done":3,"total":10}' },
    { tag: 'json', val: '"half"' },
  ]);
});

test('logs and console go to the job log with levels', async () => {
  await run(handler((_d, ctx) => {
    ctx.log.info('info line');
    ctx.log.warn('warn line');
    ctx.log.error('error line');
    ctx.log.debug('debug line');
    console.log('console', { a: 1 }, 2);
    console.warn('careful');
    console.error(new Error('bad'));
  }));
  assert.deepEqual(fake.logs.slice(0, 6), [
    { level: 'info', message: 'info line' },
    { level: 'warn', message: 'warn line' },
    { level: 'error', message: 'error line' },
    { level: 'debug', message: 'debug line' },
    { level: 'info', message: 'console {"a":1} 2' },
    { level: 'warn', message: 'careful' },
  ]);
  assert.equal(fake.logs[6].level, 'error');
  assert.match(fake.logs[6].message, /bad/);
});

test('kv: get/set/setIfAbsent/delete with TTLs', async () => {
  const r = await run(handler((_d, ctx) => {
    ctx.kv.set('a', '1');
    ctx.kv.set('b', '2', { ttlMs: 1500.9 });
    ctx.kv.set('c', '3', { ttl: '24h' });
    ctx.kv.set('d', '4', { ttlMs: 0 });
    const first = ctx.kv.setIfAbsent('e', 'x', { ttl: '1m' });
    const again = ctx.kv.setIfAbsent('e', 'y');
    return { a: ctx.kv.get('a'), missing: ctx.kv.get('zz') ?? 'none', first, again, deleted: ctx.kv.delete('a'), gone: ctx.kv.delete('a') };
  }));
  assert.deepEqual(r, { ok: '{"a":"1","missing":"none","first":true,"again":false,"deleted":true,"gone":false}' });
  assert.equal(fake.kv.get('b')!.ttlMs, 1500);
  assert.equal(fake.kv.get('c')!.ttlMs, 86_400_000);
  assert.equal(fake.kv.get('d')!.ttlMs, 1, 'a TTL is at least 1 ms, like the Rust SDK');
  assert.equal(fake.kv.get('e')!.ttlMs, 60_000);
  assert.equal(fake.kv.get('e')!.value, 'x');
  const notString = await run(handler((_d, ctx) => ctx.kv.set('k', 5 as unknown as string)));
  assert.equal((notString.err as { tag: string }).tag, 'retry');
});

test('config, secrets', async () => {
  fake.config.set('LEDGER_URL', 'http://ledger');
  fake.config.set('A', '1');
  fake.secrets.set('MAIL_API_KEY', { value: 'k', reveal: false });
  fake.secrets.set('SIGNING_KEY', { value: 's3cret', reveal: true });
  const r = await run(handler((_d, ctx) => ({
    ledger: ctx.config.get('LEDGER_URL'),
    missing: ctx.config.get('NOPE') === undefined,
    keys: ctx.config.keys(),
    required: ctx.config.require('A'),
    placeholder: ctx.secret('MAIL_API_KEY'),
    revealed: ctx.revealSecret('SIGNING_KEY'),
  })));
  assert.deepEqual(JSON.parse(r.ok!), {
    ledger: 'http://ledger', missing: true, keys: ['A', 'LEDGER_URL'], required: '1', placeholder: 'airlock-secret:MAIL_API_KEY', revealed: 's3cret',
  });
  assert.deepEqual(await run(handler((_d, ctx) => ctx.config.require('GATEWAY_URL'))), {
    err: { tag: 'fatal', val: "configuration `GATEWAY_URL` is not set in this queue's binding (config.GATEWAY_URL)" },
  });
  assert.deepEqual(await run(handler((_d, ctx) => ctx.revealSecret('MAIL_API_KEY'))), {
    err: { tag: 'fatal', val: 'secret `MAIL_API_KEY` refused: secret `MAIL_API_KEY` is not set with reveal' },
  });
});

test('children are parsed', async () => {
  fake.children = [
    { child: { queue: 'a', id: '1' }, outcome: { tag: 'completed', val: '{"n":1}' } },
    { child: { queue: 'a', id: '2' }, outcome: { tag: 'failed', val: 'boom' } },
    { child: { queue: 'b', id: '3' }, outcome: { tag: 'completed', val: 'not json' } },
  ];
  const r = await run(handler((_d, ctx) => ({ all: ctx.children(), values: ctx.childrenValues() })));
  assert.deepEqual(JSON.parse(r.ok!), {
    all: [
      { child: { queue: 'a', id: '1' }, status: 'completed', value: { n: 1 } },
      { child: { queue: 'a', id: '2' }, status: 'failed', reason: 'boom' },
      { child: { queue: 'b', id: '3' }, status: 'completed', value: 'not json' },
    ],
    values: [{ n: 1 }, 'not json'],
  });
  fake.children = undefined;
  assert.deepEqual(await run(handler((_d, ctx) => ctx.children())), {
    err: { tag: 'fatal', val: 'children results unsupported: this host has no flows' },
  });
});

test('event payloads', () => {
  const event = { name: 'user.signed_up', data: { to: 'a@example.com' }, id: 'ev_1', ts: 1_700_000_000_000 };
  assert.ok(isEvent(event));
  assert.deepEqual(eventPayload(event), { to: 'a@example.com' });
  assert.deepEqual(eventPayload({ ...event, data: null }), null);
  const direct = { to: 'a@example.com', subject: 'hi' };
  assert.equal(eventPayload(direct), direct);
  assert.equal(isEvent({ name: 'x', id: 'y', ts: -1, data: 1 }), false);
  assert.equal(isEvent({ name: 'x', id: 'y', ts: 1.5, data: 1 }), false);
  assert.equal(isEvent({ name: 'x', id: 'y', ts: 1 }), false);
  assert.equal(isEvent([1]), false);
});

test('fetch is absent on QuickJS and fails fatally; on StarlingMonkey failures are retryable', async () => {
  const g = globalThis as { fetch?: unknown };
  const saved = g.fetch;
  try {
    g.fetch = ENGINE === 'quickjs' ? undefined : async () => {
      throw new TypeError('NetworkError when attempting to fetch resource');
    };
    const r = await run(handler(async (_d, ctx) => ctx.fetch('http://127.0.0.1:1/')));
    if (ENGINE === 'quickjs') {
      assert.deepEqual(r, { err: { tag: 'fatal', val: 'fetch is not available on the quickjs engine (build with --engine starlingmonkey for outgoing HTTP)' } });
    } else {
      assert.deepEqual(r, { err: { tag: 'retry', val: 'HTTP transport: NetworkError when attempting to fetch resource' } });
    }
  } finally {
    g.fetch = saved;
  }
});

test('the generated entry accepts handler(), a plain function, or a raw run', async () => {
  const made = handler(() => 1);
  assert.equal(toRun({ default: made }), made);
  assert.deepEqual(await run(toRun({ default: async (d: { n: number }) => d.n + 1 }) as Run, { n: 1 }), { ok: '2' });
  const raw = () => '"raw"';
  assert.equal(toRun({ run: raw }), raw);
  assert.throws(() => toRun({}), /must `export default handler/);
});

test('a handler can await a chain of its own promises', async () => {
  const r = await run(handler(async () => {
    const order: string[] = [];
    const a = Promise.resolve().then(() => order.push('a'));
    const b = new Promise<void>((resolve) => resolve()).then(() => order.push('b'));
    await Promise.all([a, b, (async () => { await null; order.push('c'); })()]);
    const settled = await Promise.allSettled([Promise.reject(new Error('x')), 1]);
    const raced = await Promise.race([new Promise(() => {}), Promise.resolve('fast')]);
    let total = 0;
    for (let i = 0; i < 10_000; i++) total += await Promise.resolve(1);
    return { order, settled: settled.map((s) => s.status), raced, total };
  }));
  assert.deepEqual(JSON.parse(r.ok!), { order: ['a', 'b', 'c'], settled: ['rejected', 'fulfilled'], raced: 'fast', total: 10_000 });
});

test('caught helper works', async () => {
  const e = await caught(async () => { throw new Error('x'); });
  assert.equal((e as Error).message, 'x');
});

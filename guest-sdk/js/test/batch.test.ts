// Batch handlers: `run-batch` (many jobs, one outcome per job) and `run`
// (a batch of one) as `batchHandler` makes them, over the fake host.
import assert from 'node:assert/strict';
import {
  FatalError,
  HostError,
  RetryableError,
  batchHandler,
  handler,
  isBatchHandler,
  type BatchHandler,
  type BatchJob,
  type BatchOutcome,
  type Context,
} from '../src/index';
import { toRun, toRunBatch } from '../src/internal';
import { fake, rawJob } from './fake/state';
import { ENGINE, test } from './harness';

/** The raw jobs `job-1`, `job-2`, ... carrying `datas` (a string is sent as is, anything else as its JSON). */
function jobsOf(datas: unknown[]) {
  return datas.map((d, i) => rawJob({ id: `job-${i + 1}`, data: typeof d === 'string' ? d : JSON.stringify(d) }));
}

/** Runs a batch over the fake host; its outcomes. */
async function runBatch(h: BatchHandler, datas: unknown[]): Promise<BatchOutcome[]> {
  const result = h.runBatch(jobsOf(datas));
  if (ENGINE === 'quickjs') assert.ok(Array.isArray(result), 'QuickJS batches return synchronously');
  return await result;
}

/** Runs one job through `run`; its result text or job-error variant. */
async function runOne(h: BatchHandler, data: unknown): Promise<{ ok?: string; err?: unknown }> {
  try {
    const result = h.run(jobsOf([data])[0]);
    if (ENGINE === 'quickjs') assert.equal(typeof result, 'string', 'QuickJS runs return synchronously');
    return { ok: await result };
  } catch (e) {
    return { err: e };
  }
}

const ok = (val: string): BatchOutcome => ({ tag: 'ok', val });
const fatal = (val: string): BatchOutcome => ({ tag: 'err', val: { tag: 'fatal', val } });
const retry = (val: string): BatchOutcome => ({ tag: 'err', val: { tag: 'retry', val } });

test('batch: one outcome per job, in order: results as JSON, errors by kind', async () => {
  const h = batchHandler<{ n: number }, unknown>((jobs) =>
    jobs.map(({ data: { n } }) => {
      switch (n) {
        case 1: return { doubled: 2 };
        case 2: return new FatalError('Invalid transaction amount');
        case 3: return new Error('socket hang up');
        case 4: return new RetryableError('later');
        case 5: return new HostError('kv get', 'unavailable', 'redis is down');
        case 6: return undefined;
        case 7: return { n: 1n };
        default: return 'text';
      }
    }),
  );
  const outcomes = await runBatch(h, [1, 2, 3, 4, 5, 6, 7, 8].map((n) => ({ n })));
  assert.deepEqual(outcomes.slice(0, 6), [
    ok('{"doubled":2}'),
    fatal('Invalid transaction amount'),
    retry('socket hang up'),
    retry('later'),
    retry('kv get: redis is down'),
    ok('null'),
  ]);
  assert.equal(outcomes[6].tag, 'err');
  assert.equal((outcomes[6].val as { tag: string }).tag, 'fatal', 'an unencodable result fails its job alone, fatally');
  assert.match((outcomes[6].val as { val: string }).val, /^handler output could not be encoded as JSON: /);
  assert.deepEqual(outcomes[7], ok('"text"'));
});

test('batch: a job whose data does not decode fails alone; the function gets the others, in order', async () => {
  let got: BatchJob<number>[] = [];
  const h = batchHandler<number, number>(
    async (jobs) => {
      got = jobs;
      return jobs.map((j) => j.data * 10);
    },
    {
      decode: (d) => {
        if (typeof (d as { n?: unknown }).n !== 'number') throw new Error('n must be a number');
        return (d as { n: number }).n;
      },
    },
  );
  const outcomes = await runBatch(h, [{ n: 1 }, 'not json', { n: 'x' }, { n: 4 }]);
  assert.equal(outcomes.length, 4);
  assert.deepEqual(outcomes[0], ok('10'));
  assert.equal(outcomes[1].tag, 'err');
  assert.equal((outcomes[1].val as { tag: string }).tag, 'fatal');
  assert.match((outcomes[1].val as { val: string }).val, /^invalid job data: /);
  assert.deepEqual(outcomes[2], fatal('invalid job data: n must be a number'));
  assert.deepEqual(outcomes[3], ok('40'));
  assert.deepEqual(got.map((j) => [j.job.id, j.data]), [['job-1', 1], ['job-4', 4]]);
  assert.equal(got[1].job.rawData, '{"n":4}');
});

test('batch: when no job decodes the function is not called; an empty batch is an empty list', async () => {
  let calls = 0;
  const h = batchHandler(() => {
    calls++;
    return [];
  });
  const outcomes = await runBatch(h, ['{', '[1,']);
  assert.deepEqual(outcomes.map((o) => [o.tag, (o.val as { tag: string }).tag]), [['err', 'fatal'], ['err', 'fatal']]);
  assert.deepEqual(await runBatch(h, []), []);
  assert.equal(calls, 0);
});

test('batch: a list of another length fails every job, fatally, the undecodable one too', async () => {
  const fewer = batchHandler<number, number>((jobs) => jobs.slice(1).map((j) => j.data));
  assert.deepEqual(await runBatch(fewer, [1, 2, 'bad']), [
    fatal('the batch handler returned 1 outcomes for 2 jobs'),
    fatal('the batch handler returned 1 outcomes for 2 jobs'),
    fatal('the batch handler returned 1 outcomes for 2 jobs'),
  ]);
  const more = batchHandler<number, number>(async (jobs) => [...jobs.map((j) => j.data), 0]);
  assert.deepEqual(await runBatch(more, [1]), [fatal('the batch handler returned 2 outcomes for 1 jobs')]);
  const none = batchHandler((() => undefined) as unknown as () => unknown[]);
  assert.deepEqual(await runBatch(none, [1, 2]), [
    fatal('the batch handler returned undefined, not an array of 2 outcomes'),
    fatal('the batch handler returned undefined, not an array of 2 outcomes'),
  ]);
});

test('batch: what the function throws fails every job with that error, its kind kept', async () => {
  const thrown = batchHandler(() => {
    throw new Error('ledger down');
  });
  assert.deepEqual(await runBatch(thrown, [1, 'bad']), [retry('ledger down'), retry('ledger down')]);
  const rejected = batchHandler(async () => {
    await null;
    throw new FatalError('the ledger refused the batch');
  });
  assert.deepEqual(await runBatch(rejected, [1, 2]), [
    fatal('the ledger refused the batch'),
    fatal('the ledger refused the batch'),
  ]);
  const host = batchHandler((_jobs, ctx) => [ctx.kv.get('')]);
  assert.deepEqual(await runBatch(host, [1, 2]), [
    fatal('kv get refused: kv key must not be empty'),
    fatal('kv get refused: kv key must not be empty'),
  ]);
});

test('batch: the context is the first job\'s; progress and logs reach the host; KV and config work', async () => {
  fake.config.set('LEDGER_URL', 'http://ledger');
  let ctx!: Context;
  const h = batchHandler<{ n: number }, number>(async (jobs, c) => {
    ctx = c;
    c.progress(50);
    c.log.info(`recording ${jobs.length} payments`);
    console.warn('careful');
    c.kv.set('last', String(jobs.length));
    c.progress(100);
    return jobs.map(() => (c.config.get('LEDGER_URL') === 'http://ledger' ? 1 : 0));
  });
  // The first job's data does not decode: the context is still its job's.
  assert.deepEqual(await runBatch(h, ['bad', { n: 2 }, { n: 3 }]).then((o) => o.slice(1)), [ok('1'), ok('1')]);
  assert.equal(ctx.job.id, 'job-1');
  assert.equal(ctx.job.rawData, 'bad');
  assert.deepEqual(fake.progress, [{ tag: 'percent', val: 50 }, { tag: 'percent', val: 100 }]);
  assert.deepEqual(fake.logs, [
    { level: 'info', message: 'recording 2 payments' },
    { level: 'warn', message: 'careful' },
  ]);
  assert.equal(fake.kv.get('last')!.value, '2');
  // The batch is over: its ctx is ended, as a run's.
  assert.throws(() => ctx.kv.get('last'), (e: unknown) => e instanceof FatalError && /^this job \(job-1\) has ended; /.test(e.message));
});

test('batch: `run` is a batch of one, returning or throwing its job\'s outcome', async () => {
  let sizes: number[] = [];
  const h = batchHandler<{ n: number }, unknown>((jobs) => {
    sizes.push(jobs.length);
    return jobs.map(({ data: { n } }) => (n > 0 ? { n } : n === 0 ? new Error('zero') : new FatalError('negative')));
  });
  assert.deepEqual(await runOne(h, { n: 5 }), { ok: '{"n":5}' });
  assert.deepEqual(await runOne(h, { n: 0 }), { err: { tag: 'retry', val: 'zero' } });
  assert.deepEqual(await runOne(h, { n: -1 }), { err: { tag: 'fatal', val: 'negative' } });
  assert.deepEqual(sizes, [1, 1, 1]);
  sizes = [];
  const bad = await runOne(h, 'not json');
  assert.equal((bad.err as { tag: string }).tag, 'fatal');
  assert.match((bad.err as { val: string }).val, /^invalid job data: /);
  assert.deepEqual(sizes, [], 'the function is not called for a job that does not decode');
  const thrown = batchHandler(async () => {
    throw new RetryableError('ledger down');
  });
  assert.deepEqual(await runOne(thrown, {}), { err: { tag: 'retry', val: 'ledger down' } });
  const empty = batchHandler(() => []);
  assert.deepEqual(await runOne(empty, {}), { err: { tag: 'fatal', val: 'the batch handler returned 0 outcomes for 1 jobs' } });
  // Progress and logs of a run reach its job as in a batch.
  const logged = batchHandler((jobs, ctx) => {
    ctx.log.info(`one of ${jobs.length}`);
    ctx.progress(100);
    return jobs.map((j) => j.job.id);
  });
  assert.deepEqual(await runOne(logged, {}), { ok: '"job-1"' });
  assert.deepEqual(fake.logs.at(-1), { level: 'info', message: 'one of 1' });
  assert.deepEqual(fake.progress.at(-1), { tag: 'percent', val: 100 });
});

test('batch: the generated entry takes a batchHandler for `run` and `runBatch`, and only that for `runBatch`', async () => {
  const h = batchHandler<number, number>((jobs) => jobs.map((j) => j.data + 1));
  assert.ok(isBatchHandler(h));
  assert.equal(isBatchHandler(handler(() => 1)), false);
  assert.equal(toRun({ default: h }), h.run);
  assert.equal(toRunBatch({ default: h }), h.runBatch);
  assert.deepEqual(await runBatch({ ...h, runBatch: toRunBatch({ default: h }) } as BatchHandler, [1, 2]), [ok('2'), ok('3')]);
  assert.throws(() => toRunBatch({ default: handler(() => 1) }), /needs the handler module to `export default batchHandler.*made by `handler\(\.\.\.\)`, which runs one job$/);
  assert.throws(() => toRunBatch({ default: () => [] }), /its default export is a function$/);
  assert.throws(() => toRunBatch({}), /its default export is missing$/);
  assert.throws(() => batchHandler(undefined as unknown as () => []), /batchHandler\(fn\): fn must be a function/);
});

if (ENGINE === 'quickjs') {
  test('batch: on QuickJS, a batch still waiting once the queue is empty fails every job, fatally', async () => {
    const h = batchHandler(() => new Promise<number[]>(() => {}));
    const outcomes = await runBatch(h, [1, 2]);
    assert.equal(outcomes.length, 2);
    for (const o of outcomes) {
      assert.equal(o.tag, 'err');
      assert.equal((o.val as { tag: string }).tag, 'fatal');
      assert.match((o.val as { val: string }).val, /^the handler is still waiting after all its work ran/);
    }
    const one = await runOne(h, 1);
    assert.equal((one.err as { tag: string }).tag, 'fatal');
    assert.match((one.err as { val: string }).val, /^the handler is still waiting after all its work ran/);
  });
}

// Warm instances: the host may call `run` again, for the next job, on the
// instance the last job used. Module-level state persists (the handler's
// and the SDK's), so these tests run several jobs through one `run` (as
// `handler()` makes it, over one host per job) and check that nothing of
// the SDK's per-job state leaks into the next job.
import assert from 'node:assert/strict';
import { test as nodeTest } from 'node:test';
import { FatalError, type Context } from '../src/index';
import { makeRun, type HandlerFn } from '../src/handler';
import { createHost, type Host } from '../src/host';
import { rawImports } from '../src/raw';
import { pendingJobs } from '../src/sync-promise';
import { fake, rawJob, resetFake } from './fake/state';
import { ENGINE, test } from './harness';

/** A host over the fakes that records every call made through it. */
interface RecordingHost extends Host {
  readonly label: string;
  readonly calls: string[];
}

function recordingHost(label: string): RecordingHost {
  const inner = createHost(rawImports, ENGINE) as unknown as Record<string, unknown>;
  const calls: string[] = [];
  const host: Record<string, unknown> = { engine: inner.engine, label, calls };
  for (const [name, f] of Object.entries(inner)) {
    if (typeof f !== 'function') continue;
    host[name] = (...args: unknown[]) => {
      calls.push([name, ...args.filter((a) => typeof a === 'string')].join(' '));
      return (f as (...a: unknown[]) => unknown)(...args);
    };
  }
  return host as unknown as RecordingHost;
}

/**
 * One instance: a single `run` export, called once per job with a host of
 * its own (`hosts[0]` for job `job-1`, ...). Between jobs the fake's
 * host-side state (steps, logs) is reset, as a new job's would be.
 */
function instance(fn: HandlerFn<unknown, unknown>) {
  const hosts: RecordingHost[] = [];
  const run = makeRun(fn, {}, () => {
    const h = recordingHost(`host-${hosts.length + 1}`);
    hosts.push(h);
    return h;
  });
  let jobs = 0;
  return {
    hosts,
    /** Runs the next job; its result text or job-error variant. */
    async job(data: unknown = {}): Promise<{ ok?: string; err?: unknown }> {
      jobs++;
      fake.steps = new Map();
      fake.stepCalls = [];
      fake.logs = [];
      try {
        const result = run(rawJob({ id: `job-${jobs}`, data: JSON.stringify(data) }));
        if (ENGINE === 'quickjs') assert.equal(typeof result, 'string', 'QuickJS runs return synchronously');
        return { ok: await result };
      } catch (e) {
        return { err: e };
      }
    },
  };
}

const ENDED = /^this job \(job-1\) has ended; ctx cannot be used after the handler returned \(ctx\.[a-zA-Z.]+: /;
const isEnded = (e: unknown) => e instanceof FatalError && ENDED.test(e.message);

test('warm: the second job counts step, sleep and wait occurrences from 1 again', async () => {
  const probe = instance(async (_d, ctx) => {
    const out: number[] = [];
    for (let i = 0; i < 2; i++) out.push(await ctx.step.run('repeat', () => i));
    await ctx.step.sleep('nap', 0);
    await ctx.step.sleep('nap', 0);
    return { out, token: await ctx.step.waitToken('approval') };
  });
  const expected = [
    'stepLookup repeat', 'stepRecord repeat 0',
    'stepLookup repeat#2', 'stepRecord repeat#2 1',
    'sleepUntil nap', 'sleepUntil nap#2',
    'waitToken approval',
  ];
  assert.deepEqual(await probe.job(), { ok: '{"out":[0,1],"token":"wt_fake_approval"}' });
  assert.deepEqual(probe.hosts[0].calls, expected);
  assert.deepEqual(await probe.job(), { ok: '{"out":[0,1],"token":"wt_fake_approval"}' });
  assert.deepEqual(probe.hosts[1].calls, expected, 'job 2 uses `repeat`, not `repeat#3`');
  assert.deepEqual(probe.hosts[0].calls, expected, 'job 2 made no call through job 1\'s host');
});

test('warm: console is installed once and writes to the current job\'s host', async () => {
  let kept: ((...args: unknown[]) => void) | undefined;
  const consoles: unknown[] = [];
  const probe = instance((_d, ctx) => {
    consoles.push(globalThis.console, console.log);
    kept ??= console.log; // a reference kept from job 1
    console.log('console', ctx.job.id);
    kept('kept', ctx.job.id);
    ctx.log.info(`ctx ${ctx.job.id}`);
  });
  for (let i = 0; i < 3; i++) await probe.job();
  assert.equal(consoles[2], consoles[0], 'the same console in every job, not one wrapper per job');
  assert.equal(consoles[4], consoles[0]);
  assert.equal(consoles[3], consoles[1], 'the same console.log in every job');
  assert.equal(consoles[5], consoles[1]);
  probe.hosts.forEach((host, i) => {
    const id = `job-${i + 1}`;
    assert.deepEqual(host.calls, [`log info console ${id}`, `log info kept ${id}`, `log info ctx ${id}`], host.label);
  });
});

test('warm: a ctx kept from job 1 throws in job 2 and after, and reaches neither host', async () => {
  let kept: Context | undefined;
  const probe = instance(async (_d, ctx) => {
    if (kept === undefined) {
      kept = ctx;
      return 'kept';
    }
    const old = kept;
    const errors: string[] = [];
    const attempt = async (f: () => unknown) => {
      try {
        await f();
        errors.push('worked');
      } catch (e) {
        errors.push(e instanceof FatalError ? e.message : `not a FatalError: ${String(e)}`);
      }
    };
    await attempt(() => old.log.info('stale'));
    await attempt(() => old.kv.get('k'));
    await attempt(() => old.kv.set('k', 'v'));
    await attempt(() => old.step.run('s', () => 1));
    await attempt(() => old.step.sleep('z', 0));
    await attempt(() => old.step.waitToken('w'));
    await attempt(() => old.progress(5));
    await attempt(() => old.progress({ n: 1n }));
    await attempt(() => old.config.get('A'));
    await attempt(() => old.children());
    await attempt(() => old.secret('S'));
    await attempt(() => old.fetch('https://example.com/'));
    ctx.log.info('job 2 itself');
    return errors;
  });
  assert.deepEqual(await probe.job(), { ok: '"kept"' });
  const job1Calls = [...probe.hosts[0].calls];
  const r = await probe.job();
  const errors = JSON.parse(r.ok!) as string[];
  assert.equal(errors.length, 12);
  for (const message of errors) assert.match(message, ENDED);
  assert.match(errors[0], /\(ctx\.log: /);
  assert.match(errors[1], /\(ctx\.kv\.get: /);
  assert.match(errors[11], /\(ctx\.fetch: /);
  assert.deepEqual(probe.hosts[0].calls, job1Calls, 'no call reached job 1\'s host');
  assert.deepEqual(probe.hosts[1].calls, ['log info job 2 itself'], 'no stale call reached job 2\'s host');
  assert.equal(kept!.job.id, 'job-1', 'ctx.job stays readable');
  // After job 2, outside any job: still refused.
  assert.throws(() => kept!.log.info('later'), isEnded);
});

test('warm: a promise job 1 left pending that settles in job 2 cannot act through its ctx', async () => {
  let release: (() => void) | undefined;
  const late: string[] = [];
  const probe = instance(async (_d, ctx) => {
    if (release === undefined) {
      const gate = new Promise<void>((resolve) => (release = resolve));
      // Not awaited: still pending when this job returns.
      void gate.then(() => {
        try {
          ctx.kv.set('late', ctx.job.id);
          late.push('worked');
        } catch (e) {
          late.push((e as Error).message);
        }
      });
      return 'left a promise';
    }
    release();
    for (let i = 0; i < 3; i++) await null;
    return late;
  });
  assert.deepEqual(await probe.job(), { ok: '"left a promise"' });
  const r = await probe.job();
  assert.equal(late.length, 1);
  assert.match(late[0], ENDED);
  assert.match(late[0], /\(ctx\.kv\.set: /);
  assert.ok(!fake.kv.has('late'), 'the stale kv.set reached no host');
  assert.deepEqual(probe.hosts.map((h) => h.calls), [[], []]);
  assert.deepEqual(JSON.parse(r.ok!), late);
});

test('warm: a ctx used after its job ended reaches no host even outside any job', async () => {
  let kept: Context | undefined;
  const probe = instance((_d, ctx) => {
    kept = ctx;
  });
  await probe.job();
  assert.throws(() => kept!.kv.get('k'), isEnded);
  assert.deepEqual(probe.hosts[0].calls, []);
});

if (ENGINE === 'starlingmonkey') {
  test('warm: timers a job left pending are cleared when it ends and never fire in a later job', async () => {
    const fired: string[] = [];
    const left: ReturnType<typeof setInterval>[] = [];
    const probe = instance(async (data, ctx) => {
      const id = ctx.job.id;
      if ((data as { mode?: string }).mode === 'leave') {
        setTimeout(() => {
          fired.push(`timeout of ${id}`);
          console.log(`timeout of ${id}`); // would land in the running job's log
        }, 5);
        left.push(setInterval(() => fired.push(`interval of ${id}`), 5));
        const cleared = setTimeout(() => fired.push(`cleared timeout of ${id}`), 5);
        clearTimeout(cleared);
        return 'left timers';
      }
      // This job's own timers work as ever.
      await new Promise((resolve) => setTimeout(resolve, 40));
      const ticks = await new Promise<number>((resolve) => {
        let n = 0;
        const t = setInterval(() => {
          if (++n === 3) {
            clearInterval(t);
            resolve(n);
          }
        }, 5);
      });
      return { ticks, fired: [...fired] };
    });
    try {
      assert.deepEqual(await probe.job({ mode: 'leave' }), { ok: '"left timers"' });
      assert.deepEqual(await probe.job(), { ok: '{"ticks":3,"fired":[]}' });
      await new Promise((resolve) => setTimeout(resolve, 30)); // outside any job
      assert.deepEqual(fired, []);
      assert.deepEqual(probe.hosts.map((h) => h.calls), [[], []]);
    } finally {
      left.forEach((t) => clearInterval(t)); // (a failure must not leave the test process running)
    }
  });
}

if (ENGINE === 'quickjs') {
  // Synchronous (QuickJS runs return their result at once) and outside any
  // drain, as the host calls `run`.
  nodeTest('[quickjs] warm: what a job left queued is dropped when its run returns', () => {
    resetFake();
    const ran: string[] = [];
    let jobs = 0;
    const run = makeRun(
      (_d, ctx) => {
        // Not awaited: its later steps are still queued when the result settles.
        void (async () => {
          for (let i = 0; i < 5; i++) await null;
          ran.push(ctx.job.id);
        })();
        return ctx.job.id;
      },
      {},
      () => createHost(rawImports, ENGINE),
    );
    for (const id of ['job-1', 'job-2']) {
      jobs++;
      assert.equal(run(rawJob({ id })), JSON.stringify(id));
      assert.equal(pendingJobs(), 0, `job ${jobs} left nothing queued for the next job`);
    }
    assert.deepEqual(ran, [], 'the leftover chain never ran in a later job');
  });
}

// Refusals that say why: a request the host refused or cut off (its
// `http-refusals`, here the fake's `refuse`) fails the job fatally with the
// host's reason — through `ctx.fetch`, the global `fetch` and the body
// methods of its responses — while any other failure stays retryable.
import assert from 'node:assert/strict';
import { FatalError, RetryableError, handler, readJson, type Context, type HttpRefusal } from '../src/index';
import { makeRun } from '../src/handler';
import { createHost } from '../src/host';
import { rawImports } from '../src/raw';
import { fake, rawJob, refuse } from './fake/state';
import { caught, ENGINE, test } from './harness';

type Run = (job: ReturnType<typeof rawJob>) => string | Promise<string>;

async function run(h: Run, data: unknown = {}, id = 'job-1'): Promise<{ ok?: string; err?: unknown }> {
  try {
    return { ok: await h(rawJob({ id, data: JSON.stringify(data) })) };
  } catch (e) {
    return { err: e };
  }
}

const g = globalThis as { fetch?: unknown };

/** Runs `fn` with `stub` as the engine's `fetch` (the SDK wraps it when a job starts). */
async function withFetch<T>(stub: (input: unknown, init?: unknown) => Promise<Response>, fn: () => Promise<T>): Promise<T> {
  const saved = g.fetch;
  g.fetch = stub;
  try {
    return await fn();
  } finally {
    g.fetch = saved;
  }
}

/** What StarlingMonkey rejects with for any failed request. */
const networkError = () => new TypeError('NetworkError when attempting to fetch resource.');

/** A `fetch` that the host refuses: it records the refusal, then the request fails. */
function refusing(kind: string, reason: string, url?: string) {
  return async (input: unknown) => {
    refuse(url ?? String(input).replace(/[?#].*$/, ''), kind, reason);
    throw networkError();
  };
}

/** A response whose body the host cuts off while it is read. */
function cutOff(kind: string, reason: string, url = 'https://api.example.com/big'): Response {
  const res = new Response(
    new ReadableStream({
      pull(controller) {
        refuse(url, kind, reason);
        controller.error(new TypeError('terminated'));
      },
    }),
  );
  Object.defineProperty(res, 'url', { value: url });
  return res;
}

const EGRESS = "api.example.com:443 is not in this queue's egress list";
const refusalOf = (e: unknown) => (e as { refusal?: HttpRefusal }).refusal;

if (ENGINE === 'starlingmonkey') {
  test('ctx.fetch: a refused request is a FatalError carrying the host\'s reason', async () => {
    let thrown: unknown;
    const r = await withFetch(refusing('egress-rule', EGRESS), () =>
      run(
        handler(async (_d, ctx) => {
          thrown = await caught(() => ctx.fetch('https://api.example.com/v1/x?key=1'));
          throw thrown;
        }),
      ),
    );
    assert.deepEqual(r, { err: { tag: 'fatal', val: `HTTP request refused: ${EGRESS}` } });
    assert.ok(thrown instanceof FatalError);
    assert.deepEqual(refusalOf(thrown), { kind: 'egress-rule', url: 'https://api.example.com/v1/x', reason: EGRESS });
    assert.ok((thrown as Error).cause instanceof TypeError, 'the engine\'s error is the cause');
  });

  test('ctx.fetch maps by itself when the handler replaced the global fetch during the job', async () => {
    const r = await withFetch(async () => new Response('unused'), () =>
      run(handler(async (_d, ctx) => {
        g.fetch = refusing('address', 'db.internal resolves to 10.0.0.5, which this host refuses to reach (private)');
        return ctx.fetch('https://db.internal/');
      })),
    );
    assert.deepEqual(r, { err: { tag: 'fatal', val: 'HTTP request refused: db.internal resolves to 10.0.0.5, which this host refuses to reach (private)' } });
    assert.equal(fake.httpRefusals.length, 1);
  });

  test('global fetch: plain `await fetch(url)` in a handler maps the same way', async () => {
    const reason = 'this run already made its 2 allowed HTTP requests (limit maxHttpRequests)';
    const r = await withFetch(refusing('too-many-requests', reason), () =>
      run(handler(async () => (await fetch('https://api.example.com/v1/x')).status)),
    );
    assert.deepEqual(r, { err: { tag: 'fatal', val: `HTTP request refused: ${reason}` } });
  });

  test('every kind maps, also for a URL object or a Request', async () => {
    const kinds = ['egress-rule', 'operator', 'address', 'scheme', 'too-many-requests', 'request-too-large', 'response-too-large', 'timeout'];
    const seen: unknown[] = [];
    await withFetch(async (input) => {
      const url = input instanceof Request ? input.url : String(input);
      refuse(url, kinds[seen.length], `reason ${seen.length}`);
      throw networkError();
    }, () =>
      run(
        handler(async (_d, ctx) => {
          for (let i = 0; i < kinds.length; i++) {
            const target = `https://h${i}.example.com/p`;
            const input = i % 3 === 0 ? target : i % 3 === 1 ? new URL(target) : new Request(target);
            seen.push(refusalOf(await caught(() => (i % 2 ? ctx.fetch(input) : fetch(input)))));
          }
        }),
      ),
    );
    assert.deepEqual(seen, kinds.map((kind, i) => ({ kind, url: `https://h${i}.example.com/p`, reason: `reason ${i}` })));
  });

  test('a network error with no new refusal stays what it was (retryable)', async () => {
    const r1 = await withFetch(async () => { throw networkError(); }, () =>
      run(handler(async (_d, ctx) => ctx.fetch('https://api.example.com/'))),
    );
    assert.deepEqual(r1, { err: { tag: 'retry', val: 'HTTP transport: NetworkError when attempting to fetch resource.' } });
    let thrown: unknown;
    const r2 = await withFetch(async () => { throw networkError(); }, () =>
      run(handler(async () => {
        thrown = await caught(() => fetch('https://api.example.com/'));
        throw thrown;
      })),
    );
    assert.deepEqual(r2, { err: { tag: 'retry', val: 'NetworkError when attempting to fetch resource.' } });
    assert.ok(thrown instanceof TypeError, 'the global fetch rejects with the engine\'s own error');
  });

  test('a refusal is used once: a later failure in the same job is not blamed on it', async () => {
    let calls = 0;
    const outcomes: unknown[] = [];
    const r = await withFetch(async (input) => {
      if (calls++ === 0) refuse(String(input), 'egress-rule', EGRESS);
      throw networkError();
    }, () =>
      run(handler(async (_d, ctx) => {
        for (const f of [() => fetch('https://api.example.com/a'), () => fetch('https://api.example.com/a'), () => ctx.fetch('https://api.example.com/a')]) {
          const e = await caught(f);
          outcomes.push(e instanceof FatalError ? `fatal: ${e.message}` : e instanceof RetryableError ? `retry: ${e.message}` : `other: ${(e as Error).message}`);
        }
        return outcomes;
      })),
    );
    assert.ok(r.ok, String(r.err));
    assert.deepEqual(outcomes, [
      `fatal: HTTP request refused: ${EGRESS}`,
      'other: NetworkError when attempting to fetch resource.',
      'retry: HTTP transport: NetworkError when attempting to fetch resource.',
    ]);
  });

  test('the newest new refusal for the request\'s URL wins; else the newest new one (a redirect)', async () => {
    const messages: string[] = [];
    await withFetch(async () => { throw networkError(); }, () =>
      run(handler(async () => {
        refuse('https://a.example.com/x', 'egress-rule', 'a, older');
        refuse('https://a.example.com/x', 'operator', 'a, newer');
        refuse('https://b.example.com:8443/y', 'address', 'b');
        const next = async (url: string) => messages.push((await caught(() => fetch(url)) as Error).message);
        await next('https://a.example.com/x?page=2#top'); // a's newest, though b's is newer
        await next('https://b.example.com:8443/y'); // b's: still new
        refuse('https://redirected.example.com/', 'egress-rule', 'the redirect\'s hop');
        await next('https://c.example.com/'); // none for c: the newest new one
        await next('https://a.example.com/x'); // a's older one counts as used
      })),
    );
    assert.deepEqual(messages, [
      'HTTP request refused: a, newer',
      'HTTP request refused: b',
      'HTTP request refused: the redirect\'s hop',
      'NetworkError when attempting to fetch resource.',
    ]);
  });

  test('a cap during a body read: res.text(), json(), arrayBuffer(), readJson fail with the refusal', async () => {
    const cap = 'the response body went over maxHttpResponseBytes (65536 bytes)';
    const slow = 'no response within httpTimeoutMs (10000 ms)';
    const messages: unknown[] = [];
    let ctxRes = 0;
    const r = await withFetch(async () => (ctxRes++ % 2 ? cutOff('timeout', slow) : cutOff('response-too-large', cap)), () =>
      run(handler(async (_d, ctx) => {
        const reads: (() => Promise<unknown>)[] = [
          async () => (await fetch('https://api.example.com/big')).text(),
          async () => (await fetch('https://api.example.com/big')).json(),
          async () => (await ctx.fetch('https://api.example.com/big')).arrayBuffer(),
          async () => readJson(await ctx.fetch('https://api.example.com/big')),
          async () => (await fetch('https://api.example.com/big')).clone().text(),
        ];
        for (const read of reads) {
          const e = await caught(read);
          messages.push(e instanceof FatalError ? [e.message, refusalOf(e)?.kind] : `not fatal: ${String(e)}`);
        }
        throw await caught(reads[0]);
      })),
    );
    assert.deepEqual(messages, [
      [`HTTP request refused: ${cap}`, 'response-too-large'],
      [`HTTP request refused: ${slow}`, 'timeout'],
      [`HTTP request refused: ${cap}`, 'response-too-large'],
      [`HTTP request refused: ${slow}`, 'timeout'],
      [`HTTP request refused: ${cap}`, 'response-too-large'],
    ]);
    assert.deepEqual(r, { err: { tag: 'fatal', val: `HTTP request refused: ${slow}` } });
  });

  test('a body read that fails with no new refusal, or a response the SDK did not fetch, reads as ever', async () => {
    const r = await withFetch(async () => new Response('not json'), () =>
      run(handler(async () => {
        const parsed = await caught(async () => (await fetch('https://api.example.com/')).json());
        assert.ok(parsed instanceof SyntaxError, String(parsed));
        refuse('https://api.example.com/', 'egress-rule', EGRESS);
        const own = await caught(() => cutOff('timeout', 'never used').text());
        assert.ok(own instanceof TypeError, 'a Response made by the handler is not mapped');
        return 'ok';
      })),
    );
    assert.deepEqual(r, { ok: '"ok"' });
  });

  test('warm: a later job counts its refusals from 1 again and never reuses an earlier job\'s', async () => {
    const runOne = makeRun(
      async (data, ctx: Context) => {
        const { refuseIt, catchIt } = data as { refuseIt: boolean; catchIt?: boolean };
        if (refuseIt) refuse('https://a.example.com/', 'egress-rule', `refused in ${ctx.job.id}`);
        const sent = ctx.fetch('https://a.example.com/').then(() => 'sent');
        return catchIt ? sent.catch((e: Error) => `caught: ${e.message}`) : sent;
      },
      {},
      () => createHost(rawImports, ENGINE),
    );
    await withFetch(async () => { throw networkError(); }, async () => {
      // Job 1 uses its refusal (seq 1) and completes, so its instance is reused.
      const first = await run(runOne, { refuseIt: true, catchIt: true }, 'job-1');
      assert.deepEqual(first, { ok: '"caught: HTTP request refused: refused in job-1"' });
      // The host keeps refusals per job: job 2's list starts empty, its seq from 1.
      fake.httpRefusals = [];
      const second = await run(runOne, { refuseIt: true }, 'job-2');
      assert.deepEqual(second, { err: { tag: 'fatal', val: 'HTTP request refused: refused in job-2' } });
      assert.equal(fake.httpRefusals[0].seq, 1, 'seq 1 again, and job 2 did not count it as used by job 1');
      fake.httpRefusals = [];
      const third = await run(runOne, { refuseIt: false }, 'job-3');
      assert.deepEqual(third, { err: { tag: 'retry', val: 'HTTP transport: NetworkError when attempting to fetch resource.' } });
    });
  });

  test('outside a job the global fetch passes errors through, and between jobs it is not mapped', async () => {
    let leftover: (() => Promise<unknown>) | undefined;
    await withFetch(refusing('egress-rule', EGRESS), async () => {
      await run(handler(async () => {
        leftover = () => fetch('https://api.example.com/late');
      }));
      const e = await caught(() => leftover!());
      assert.ok(e instanceof TypeError, `not mapped outside a job: ${String(e)}`);
      assert.equal(fake.httpRefusals.length, 1, 'the host refused it');
    });
  });

  test('a fetch a job started that fails after the job ended keeps the engine\'s error', async () => {
    let fail: ((e: unknown) => void) | undefined;
    let pending: Promise<unknown> | undefined;
    await withFetch(() => new Promise<Response>((_resolve, reject) => (fail = reject)), async () => {
      await run(handler(async () => {
        pending = fetch('https://api.example.com/slow').catch((e) => e);
      }));
      refuse('https://api.example.com/slow', 'timeout', 'late');
      fail!(networkError());
      const e = await pending;
      assert.ok(e instanceof TypeError, `the ended job's refusals are not read: ${String(e)}`);
    });
  });
} else {
  test('QuickJS: the SDK leaves the global fetch alone (there is none in a component)', async () => {
    const before = g.fetch;
    await run(handler(() => 1));
    assert.equal(g.fetch, before);
  });
}

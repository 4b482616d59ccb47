// A browser follows one job live with a read token, in Debian's headless
// Chromium driven by playwright-core, against the shop tests/tests/
// read_tokens.rs builds: `make run`'s gateway serving the example page
// (host/scripts/example-app/index.html) as the shop's backend, and an
// Airlock API that allows the shop's origin (`--cors-origin`). Run by that
// test with:
//
//   SHOP_URL API_URL ADMIN_TOKEN OTHER_REF CHROMIUM
//
// OTHER_REF is another producer's job, delayed. Each step prints
// `ok - <step>` or throws, and the script exits non-zero.
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const SHOP = env('SHOP_URL').replace(/\/$/, '');
const API = env('API_URL').replace(/\/$/, '');
const ADMIN = env('ADMIN_TOKEN');
const OTHER = env('OTHER_REF');
const T = 30_000;

const browser = await chromium.launch({
  executablePath: env('CHROMIUM'),
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});

/** What the shop page shows, for a failed step's report. */
let shown = null;

async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    console.log(`not ok - ${name}`);
    if (shown) console.log(`# the page showed: ${await shown().catch((e) => e.message)}`);
    throw e;
  }
  console.log(`ok - ${name}`);
}

/** The stream of `ref` opened in the page with `token`: `opened` or `refused`. */
const openStream = (page, ref, token) =>
  page.evaluate(
    ({ API, ref, token }) =>
      new Promise((resolve) => {
        const source = new EventSource(`${API}/v1/jobs/${encodeURIComponent(ref)}/events?token=${token}`);
        source.addEventListener('state', () => {
          source.close();
          resolve('opened');
        });
        source.addEventListener('error', () => {
          if (source.readyState === 2) resolve('refused');
        });
      }),
    { API, ref, token },
  );

try {
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(T);
  const problems = [];
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
  page.on('console', (m) => problems.push(`console ${m.type()}: ${m.text()}`));
  shown = () =>
    page.evaluate(
      () =>
        `status "${document.querySelector('[data-testid="status"]').textContent}", ` +
        `progress seen "${document.querySelector('[data-testid="progress"]').dataset.seen}", ` +
        `log "${document.querySelector('[data-testid="log"]').innerText}"`,
    ).then((text) => `${text}; ${problems.join('; ')}`);

  await step('1. the shop page pays and shows the payment live: progress, log lines, the end', async () => {
    await page.goto(`${SHOP}/app/`);
    await page.getByTestId('pay').click();
    // The ledger answers a second late: the bar stands at 50 while the
    // job still runs — seen live, not after the fact. (The job may start
    // before the page subscribes: the stream's first event, the job's
    // state, carries the progress made so far.)
    await page.waitForFunction(
      () =>
        document.querySelector('[data-testid="progress"]').value === 50 &&
        document.querySelector('[data-testid="status"]').textContent !== 'completed',
    );
    await page.locator('[data-testid="status"]', { hasText: 'completed' }).waitFor();
    const seen = (await page.getByTestId('progress').getAttribute('data-seen')).split(',').map(Number);
    assert.ok(seen.includes(50) && seen.at(-1) === 100, `progress as it came: ${seen}`);
    assert.deepEqual(seen, [...seen].sort((a, b) => a - b), `progress in order: ${seen}`);
    assert.match(await page.getByTestId('log').innerText(), /processing transaction shop_\w+ for 12\.5 EUR/);
    assert.equal(await page.getByTestId('status').getAttribute('data-closed'), 'finished');
    assert.deepEqual(problems, []);
  });

  const { ref, token, apiUrl } = await page.evaluate(() => window.lastPayment);
  assert.equal(apiUrl, API);
  assert.match(token, /^jrt_\d+_[0-9a-f]{64}$/);

  await step('2. the read token opens its own job again, and no other job', async () => {
    assert.equal(await openStream(page, ref, token), 'opened');
    assert.equal(await openStream(page, OTHER, token), 'refused');
  });

  await step('3. no other route takes it: not in the query, and not as a bearer token from a page', async () => {
    const answers = await page.evaluate(
      async ({ API, ref, token }) => {
        const path = `${API}/v1/jobs/${encodeURIComponent(ref)}`;
        const query = (await fetch(`${path}?token=${token}`)).status;
        let bearer;
        try {
          bearer = (await fetch(path, { headers: { authorization: `Bearer ${token}` } })).status;
        } catch {
          // CORS allows no Authorization header cross-origin.
          bearer = 'blocked';
        }
        return { query, bearer };
      },
      { API, ref, token },
    );
    assert.deepEqual(answers, { query: 401, bearer: 'blocked' });
  });

  await step('4. a page of an origin the operator did not allow cannot open the stream', async () => {
    const stranger = await (await browser.newContext()).newPage();
    await stranger.goto(`${SHOP.replace('127.0.0.1', 'localhost')}/app/`);
    assert.equal(await openStream(stranger, ref, token), 'refused');
  });

  await step('5. the stream stops when its token expires, and the token opens nothing after', async () => {
    // Made now, through the API, for another producer's job that waits a
    // minute: two seconds to live.
    const r = await fetch(`${API}/v1/jobs/${encodeURIComponent(OTHER)}/read-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ expiresInSeconds: 2 }),
    });
    assert.equal(r.status, 201);
    const expiring = await r.json();
    const followed = await page.evaluate(
      async ({ API, OTHER, token }) => {
        const { subscribe } = await import('./airlock-client.mjs');
        const started = Date.now();
        const types = [];
        return new Promise((resolve) =>
          subscribe(OTHER, token, (event) => types.push(event.type), {
            baseUrl: API,
            onClose: (reason) => resolve({ reason, types, ms: Date.now() - started }),
          }),
        );
      },
      { API, OTHER, token: expiring.token },
    );
    assert.equal(followed.reason, 'refused', JSON.stringify(followed));
    assert.deepEqual(followed.types, ['state'], JSON.stringify(followed));
    assert.ok(Date.now() >= expiring.expiresAt, 'it ended at its expiry, not before');
    assert.equal(await openStream(page, OTHER, expiring.token), 'refused');
  });
  console.log('# read tokens: all steps passed');
} finally {
  await browser.close();
}

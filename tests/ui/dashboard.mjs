// The dashboard end to end in a real browser (Debian's headless Chromium,
// driven by playwright-core), against the fleet tests/tests/dashboard.rs
// builds. Run by that test with:
//
//   AIRLOCK_URL ADMIN_TOKEN PRODUCER_TOKEN (name `web`) OTHER_PRODUCER_TOKEN
//   (name `other`) READER_TOKEN SCREENSHOT_DIR CHROMIUM
//
// Jobs are enqueued (and tokens completed, events sent) through the API:
// that is setup. Every assertion about the dashboard is made on what the
// page shows. Each step prints `ok - <step>` or throws, and the script exits
// non-zero on the first step that fails.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const BASE = env('AIRLOCK_URL').replace(/\/$/, '');
const UI = `${BASE}/ui/`;
const ADMIN = env('ADMIN_TOKEN');
const CENTS = env('CENTS_DIGEST');
const WEB = env('PRODUCER_TOKEN');
const OTHER = env('OTHER_PRODUCER_TOKEN');
const READER = env('READER_TOKEN');
const SHOTS = env('SCREENSHOT_DIR');
const CHROMIUM = env('CHROMIUM');
/** The mock gateway: the refund example's approval service among others. */
const GATEWAY = env('GATEWAY_URL').replace(/\/$/, '');

/** Generous: CI runs on 2 cores. */
const T = 30_000;
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const RUN = Date.now().toString(36);

// ---------------------------------------------------------------- setup API

async function call(method, path, token, body) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(BASE + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  return { status: response.status, body: json };
}

async function must(method, path, token, body) {
  const r = await call(method, path, token, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function enqueue(queue, token, data) {
  const accepted = await must('POST', `/v1/queues/${queue}/jobs`, token, { data });
  return accepted.ref;
}

const job = (ref) => must('GET', `/v1/jobs/${ref}`, ADMIN);

/** Polls the API (setup only) until `ok(job)`. */
async function until(ref, ok, what) {
  const deadline = Date.now() + T;
  let last;
  while (Date.now() < deadline) {
    last = await job(ref);
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${ref} never ${what}: ${JSON.stringify(last)}`);
}

// ------------------------------------------------------------------ browser

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-quic',
    '--disable-component-update',
    '--disable-sync',
  ],
});

/**
 * A page in a context of its own (its own sessionStorage), with everything
 * that goes wrong on it recorded: console errors, uncaught exceptions,
 * failed requests and error statuses, and every request's URL.
 */
async function openPage(viewport = DESKTOP) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(T);
  const seen = { requests: [], problems: [] };
  page.on('request', (r) => seen.requests.push({ url: r.url(), headers: r.headers() }));
  page.on('console', (m) => {
    if (m.type() === 'error') seen.problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => seen.problems.push(`uncaught: ${e.message}`));
  page.on('requestfailed', (r) => {
    const error = r.failure()?.errorText ?? '';
    // A live stream the app closes when it leaves a job's page.
    if (error.includes('ERR_ABORTED') && /\/v1\/jobs\/[^/]+\/events$/.test(new URL(r.url()).pathname)) return;
    seen.problems.push(`request failed: ${r.method()} ${r.url()} ${error}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) seen.problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return { page, context, seen };
}

async function login(page, token) {
  await page.goto(UI);
  await page.getByTestId('login-token').fill(token);
  await page.getByTestId('login-submit').click();
  await page.getByTestId('whoami').waitFor();
}

/** Goes to a route and waits for its view's first answer. */
async function show(page, route, view) {
  await page.goto(`${UI}#/${route}`);
  await page.locator(`[data-testid="view-${view}"][data-ready="true"]`).waitFor();
}

const byText = (page, testid, text) => page.locator(`[data-testid="${testid}"]`, { hasText: text });

const digits = (s) => Number(String(s).replace(/[^0-9]/g, ''));

let passed = 0;
async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    console.log(`not ok - ${name}`);
    // What the admin's page showed then, beside the views' screenshots.
    await A.screenshot({ path: join(SHOTS, 'failed-step.png'), fullPage: true }).catch(() => {});
    throw e;
  }
  passed++;
  console.log(`ok - ${name}`);
}

// What the cleanup undoes.
const keyedJobs = [];
const pausedByUs = new Set();

await mkdir(SHOTS, { recursive: true });
const admin = await openPage();
const A = admin.page;
const refs = {};

try {
  await step('1. log in: nothing is fetched before, a bad token is refused, then the admin is in', async () => {
    await A.goto(UI);
    await A.getByTestId('login').waitFor();
    await A.waitForLoadState('networkidle');
    const api = () => admin.seen.requests.filter((r) => new URL(r.url).pathname.startsWith('/v1/'));
    assert.deepEqual(api(), [], 'no /v1 request before log-in');
    assert.equal(await A.getByTestId('nav-fleet').count(), 0, 'no view is shown before log-in');

    await A.getByTestId('login-token').fill('not-a-token-of-this-fleet');
    await A.getByTestId('login-submit').click();
    const refused = await call('GET', '/v1/me', 'not-a-token-of-this-fleet');
    assert.equal(refused.status, 401);
    await byText(A, 'login-error', refused.body.error.message).waitFor();
    assert.deepEqual(
      api().map((r) => new URL(r.url).pathname),
      ['/v1/me'],
      'the only request on submit is GET /v1/me',
    );

    await A.getByTestId('login-token').fill(ADMIN);
    await A.getByTestId('login-submit').click();
    await byText(A, 'whoami', /ops\s*\(admin\)/).waitFor();
    await A.locator('[data-testid="view-fleet"][data-ready="true"]').waitFor();
    for (const r of admin.seen.requests) {
      assert.ok(!r.url.includes(ADMIN), `the token is never in a URL: ${r.url}`);
    }
    const calls = api().filter((r) => new URL(r.url).pathname !== '/v1/me');
    assert.ok(calls.length > 0, 'the fleet view reads the API once logged in');
    for (const r of calls) assert.equal(r.headers.authorization, `Bearer ${ADMIN}`, `bearer header on ${r.url}`);

    // Log out, and the token is gone from the tab.
    await A.getByTestId('logout').click();
    await A.getByTestId('login').waitFor();
    assert.equal(await A.evaluate(() => sessionStorage.length), 0, 'log-out forgets the token');
    await login(A, ADMIN);
  });

  await step('2. a payment job goes waiting → active → completed, with its progress, on its page', async () => {
    await must('POST', '/v1/queues/payments/pause', ADMIN);
    pausedByUs.add('payments');
    const ref = await enqueue('payments', WEB, { transactionId: 'tx_1', amount: 42.5, currency: 'EUR' });
    refs.payment = ref;
    await show(A, `jobs/${ref}`, 'job');
    await byText(A, 'job-state', /^waiting$/).waitFor();
    await byText(A, 'job-waiting-message', /paused/).waitFor();
    // Record every state the badge shows from now on.
    await A.evaluate(() => {
      const seen = (window.__states = []);
      const read = () => {
        const text = document.querySelector('[data-testid="job-state"]')?.textContent?.trim();
        if (text && seen[seen.length - 1] !== text) seen.push(text);
      };
      read();
      new MutationObserver(read).observe(document.body, { subtree: true, childList: true, characterData: true });
    });

    // Resume from the Queues view, in another tab.
    const ops = await openPage();
    try {
      await login(ops.page, ADMIN);
      await show(ops.page, 'queues', 'queues');
      const row = ops.page.locator('[data-testid="queue-row"][data-queue="payments"]');
      await row.getByTestId('queue-paused').waitFor();
      await row.getByTestId('resume-queue').click();
      await row.getByTestId('queue-running').waitFor();
      pausedByUs.delete('payments');
      assert.deepEqual(ops.seen.problems, []);
    } finally {
      await ops.context.close();
    }

    await byText(A, 'job-state', /^active$/).waitFor();
    await byText(A, 'job-state', /^completed$/).waitFor();
    await A.locator('[data-testid="job-progress"][data-value="100"]', { hasText: '100%' }).waitFor();
    await byText(A, 'job-returnvalue', 'led_tx_1').waitFor();
    const states = await A.evaluate(() => window.__states);
    assert.deepEqual(states, ['waiting', 'active', 'completed'], `the states the page showed: ${states}`);
  });

  await step('3. a hostile job fails as fuel_exhausted, with its fuel figure', async () => {
    const ref = await enqueue('hostile', WEB, { spin: true });
    refs.hostile = ref;
    await show(A, `jobs/${ref}`, 'job');
    await byText(A, 'job-state', /^failed$/).waitFor();
    await byText(A, 'job-failure-kind', /^fuel_exhausted$/).waitFor();
    const reason = await byText(A, 'job-failed-reason', /^fuel_exhausted: .*\d/).textContent();
    const api = await until(ref, (j) => j.metrics.fuelUsed != null, 'recorded its fuel');
    assert.equal(reason.trim(), api.failedReason, 'the page shows the sandbox’s own words');
    assert.match(reason, /50000000/, 'the reason names the fuel budget');
    // Measurements land a moment after the finish: the page picks them up.
    await byText(A, 'metric-fuel', /\d/).waitFor();
    await A.waitForFunction(
      (want) => Number(document.querySelector('[data-testid="metric-fuel"]').textContent.replace(/\D/g, '')) === want,
      api.metrics.fuelUsed,
    );
    assert.equal(api.metrics.fuelUsed, 50_000_000);
    await A.locator('[data-testid="run-row"][data-end="fuel_exhausted"]').first().waitFor();
  });

  await step('4. retrying the failed job from its page runs it again: it fails again, one more attempt', async () => {
    const before = await job(refs.hostile);
    assert.equal(before.attemptsMade, 1);
    await A.getByTestId('job-retry').click();
    await byText(A, 'job-attempts', /^2 made/).waitFor();
    await byText(A, 'job-state', /^failed$/).waitFor();
    await byText(A, 'job-failure-kind', /^fuel_exhausted$/).waitFor();
    await A.locator('[data-testid="run-row"][data-end="fuel_exhausted"]').nth(1).waitFor();
    assert.equal(await A.locator('[data-testid="run-row"]').count(), 2, 'two runs in the table');
    assert.equal(await A.locator('[data-testid="wf-run"][data-end="fuel_exhausted"]').count(), 2, 'two runs drawn');
    // Each run shows its own reason, the first one's too.
    const reasons = A.locator('[data-testid="run-row"] [data-testid="run-reason"]');
    await reasons.nth(1).waitFor();
    for (const text of await reasons.allTextContents()) assert.match(text, /fuel/, text);
    const after = await job(refs.hostile);
    assert.equal(after.attemptsMade, 2);
    assert.equal(after.state, 'failed');
  });

  await step('5. pausing a queue from the Queues view asks first, then the queue is paused', async () => {
    await show(A, 'queues', 'queues');
    const row = A.locator('[data-testid="queue-row"][data-queue="hostile"]');
    await row.getByTestId('queue-running').waitFor();
    // Going back from the dialog changes nothing.
    await row.getByTestId('pause-queue').click();
    await A.getByTestId('confirm-dialog').waitFor();
    await A.getByTestId('confirm-cancel').click();
    await A.getByTestId('confirm-dialog').waitFor({ state: 'detached' });
    assert.equal((await must('GET', '/v1/queues/hostile', ADMIN)).counts.paused, false);
    // Confirming pauses it.
    await row.getByTestId('pause-queue').click();
    await byText(A, 'confirm-dialog', 'Pause queue hostile?').waitFor();
    await A.getByTestId('confirm-ok').click();
    pausedByUs.add('hostile');
    await row.getByTestId('queue-paused').waitFor();
    assert.equal((await must('GET', '/v1/queues/hostile', ADMIN)).counts.paused, true, 'the API says paused');
    // And back.
    await row.getByTestId('resume-queue').click();
    await row.getByTestId('queue-running').waitFor();
    assert.equal((await must('GET', '/v1/queues/hostile', ADMIN)).counts.paused, false);
    pausedByUs.delete('hostile');
  });

  const customer = `cust-${RUN}`;
  await step('6. a job held back by its key’s limit says why it waits', async () => {
    const first = await enqueue('keyed', WEB, { customerId: customer, n: 1 });
    keyedJobs.push(first);
    await until(first, (j) => j.state === 'active', 'started');
    const second = await enqueue('keyed', WEB, { customerId: customer, n: 2 });
    keyedJobs.push(second);
    refs.keyedFirst = first;
    refs.keyedSecond = second;
    await show(A, `jobs/${second}`, 'job');
    const words = byText(A, 'job-waiting-message', /is at its limit/);
    await words.waitFor();
    const shown = (await words.textContent()).trim();
    const api = await job(second);
    assert.equal(api.waiting.kind, 'key_limit');
    // The count of jobs ahead may move; the reason itself is the API's.
    assert.equal(shown.split(';')[0], api.waiting.message.split(';')[0], 'the words of GET /v1/jobs/{ref}');
    assert.ok(shown.includes(`"${customer}"`) && shown.includes('1/1 running'), shown);
    await A.locator('[data-testid="job-waiting"][data-kind="key_limit"]').waitFor();
    // The queue's page counts the key's jobs, where the host serves them.
    const keys = await call('GET', '/v1/queues/keyed/keys', ADMIN);
    if (keys.status === 200) {
      await show(A, 'queues/keyed', 'queue');
      const row = A.locator(`[data-testid="key-row"][data-key='${JSON.stringify(customer)}']`);
      await row.waitFor();
      assert.match(await row.textContent(), /1 \/ 1/);
    } else {
      console.log(`# GET /v1/queues/keyed/keys answered ${keys.status}: per-key counts not checked`);
    }
  });

  await step('7. a producer token sees only its own jobs, and another producer’s job is not found', async () => {
    const theirs = await enqueue('keyed', OTHER, { customerId: customer, n: 3 });
    keyedJobs.push(theirs);
    const theirPayment = await enqueue('payments', OTHER, { transactionId: 'tx_other', amount: 7, currency: 'EUR' });
    await until(theirPayment, (j) => j.state === 'completed', 'completed');
    // Both held back by the key's limit settle in its line (BullMQ-delayed).
    const mine = await until(refs.keyedSecond, (j) => j.state === 'delayed', 'joined its key’s line');
    const other = await until(theirs, (j) => j.state === 'delayed', 'joined its key’s line');

    const web = await openPage();
    try {
      const P = web.page;
      await login(P, WEB);
      await byText(P, 'whoami', /web\s*\(producer\)/).waitFor();
      assert.equal(await P.getByTestId('nav-fleet').count(), 0, 'no fleet view for a producer');
      const rows = (page) => page.locator('[data-testid="job-row"]').evaluateAll((els) => els.map((e) => e.dataset.ref));

      await show(P, 'jobs?queue=payments&state=completed', 'jobs');
      await P.locator(`[data-testid="job-row"][data-ref="${refs.payment}"]`).waitFor();
      const listed = await rows(P);
      assert.ok(!listed.includes(theirPayment), `another producer's payment is not listed: ${listed}`);
      assert.ok(listed.length > 0 && listed.every((r) => r.startsWith('payments:')));

      await show(P, `jobs?queue=keyed&state=active`, 'jobs');
      await P.locator(`[data-testid="job-row"][data-ref="${refs.keyedFirst}"]`).waitFor();
      // The search box narrows the list to the key; the producer's own
      // held-back job is there, the other producer's is not.
      await show(P, `jobs?queue=keyed&state=${mine.state}`, 'jobs');
      await P.getByTestId('job-search').fill(customer);
      await P.waitForURL(new RegExp(`[?&]q=${customer}`));
      await P.waitForFunction(
        (want) =>
          JSON.stringify([...document.querySelectorAll('[data-testid="job-row"]')].map((e) => e.dataset.ref)) ===
          JSON.stringify(want),
        [refs.keyedSecond],
      ).catch(async () => {
        throw new Error(`the producer's list of its key is ${JSON.stringify(await rows(P))}, not [${refs.keyedSecond}]`);
      });
      // The admin sees the other producer's job in the same list.
      await show(A, `jobs?queue=keyed&state=${other.state}&q=${customer}`, 'jobs');
      await A.locator(`[data-testid="job-row"][data-ref="${theirs}"]`).waitFor();
      await A.locator(`[data-testid="job-row"][data-ref="${refs.keyedSecond}"]`).waitFor();

      // Its own job offers the actions a producer may take; no queue action.
      await show(P, `jobs/${refs.keyedSecond}`, 'job');
      await P.getByTestId('job-cancel').waitFor();
      await show(P, 'queues', 'queues');
      assert.equal(await P.getByTestId('pause-queue').count(), 0, 'a producer cannot pause queues');

      await P.goto(`${UI}#/jobs/${theirPayment}`);
      await byText(P, 'not-found', /not found/).waitFor();
      assert.equal(await P.getByTestId('job-state').count(), 0, 'nothing of the job is shown');
    } finally {
      await web.context.close();
    }
  });

  await step('8. a refund job that parked on its token and its event shows runs that ended `waited`; its approval token is nowhere on the page', async () => {
    const refundId = `r-${RUN}`;
    const ref = await enqueue('refunds', WEB, { refundId, orderId: `o-${RUN}`, amount: 25 });
    refs.refund = ref;
    const parked = await until(ref, (j) => j.state === 'delayed' && j.waiting?.kind === 'token', 'parked on its approval token');
    // The token (a credential: whoever holds it decides) went to the
    // approval service, the manager's inbox, and nowhere a reader looks.
    const inbox = await (await fetch(`${GATEWAY}/v1/approvals`)).json();
    const asked = inbox.approvals.filter((a) => a.refundId === refundId);
    assert.equal(asked.length, 1, `one approval request: ${JSON.stringify(inbox)}`);
    const token = asked[0].token;
    refs.refundToken = token;
    assert.match(token, /^wt_/);
    assert.deepEqual(parked.progress, { stage: 'awaiting-approval' });
    // The delayed list says what it waits for, not just `delayed`.
    assert.equal(parked.parked, 'token');
    await show(A, 'jobs?queue=refunds&state=delayed', 'jobs');
    await A.locator(`[data-testid="job-row"][data-ref="${ref}"]`, { hasText: 'waiting for a token' }).waitFor();
    await show(A, `jobs/${ref}`, 'job');
    await A.locator('[data-testid="wf-run"][data-end="waited"]').first().waitFor();
    await A.locator('[data-testid="job-waiting"][data-kind="token"]').waitFor();
    await A.locator('[data-testid="wait-row"][data-outcome="pending"]').waitFor();
    await A.locator('[data-testid="wf-steps"] [data-step="ask-approval"]').waitFor();
    assert.ok(!(await A.content()).includes(token), 'the approval token is not on the job page');

    const done = await call('POST', `/v1/tokens/${token}/complete`, null, {
      approved: true,
      by: 'dashboard test',
    });
    assert.ok(done.status < 300, JSON.stringify(done));
    await A.locator('[data-testid="job-waiting"][data-kind="event"]').waitFor();
    await A.locator('[data-testid="wf-run"][data-end="waited"]').nth(1).waitFor();
    await must('POST', '/v1/events', WEB, { name: 'refund.settled', id: `settled-${RUN}`, data: { refundId } });

    await byText(A, 'job-state', /^completed$/).waitFor();
    await A.locator('[data-testid="run-row"][data-end="completed"]').waitFor();
    const ends = await A.locator('[data-testid="run-row"]').evaluateAll((els) => els.map((e) => e.dataset.end));
    assert.deepEqual(ends, ['waited', 'waited', 'completed'], `the runs' ends: ${ends}`);
    const drawn = await A.locator('[data-testid="wf-run"]').evaluateAll((els) => els.map((e) => e.dataset.end));
    assert.deepEqual(drawn, ['waited', 'waited', 'completed'], `the waterfall's runs: ${drawn}`);
    assert.equal(await byText(A, 'wf-gap', 'parked in a durable wait').count(), 2, 'both gaps say why');
    const parkedOn = await A.getByTestId('run-parked-on').allTextContents();
    assert.deepEqual(parkedOn.map((t) => t.trim()), ['on approval', 'on settlement'], 'each parked run names its wait');
    await A.getByTestId('wf-finished').waitFor();
    await A.locator('[data-testid="wf-steps"] [data-step="open-refund"]').waitFor();
    await A.locator('[data-testid="wf-steps"] [data-step="issue-refund"]').waitFor();
    assert.equal(await A.locator('[data-testid="wait-row"][data-outcome="came"]').count(), 2, 'both waits came');
    assert.ok((await A.getByTestId('job-returnvalue').textContent()).includes(`rf_${refundId}`));
  });

  await step('9. every view renders without an error, at 1280×800 and, without horizontal scroll, at 390×844', async () => {
    // Something for the schedules view to show.
    await must('PUT', '/v1/queues/payments/schedules/nightly-ledger-check', ADMIN, {
      pattern: '0 3 * * *',
      tz: 'Europe/Paris',
      data: { transactionId: 'tx_nightly', amount: 1, currency: 'EUR' },
    });
    const keys = await call('GET', '/v1/queues/keyed/keys', ADMIN);
    const views = [
      ['fleet', 'fleet', 'fleet'],
      ['queues', 'queues', 'queues'],
      ['queue', keys.status === 200 ? 'queues/keyed' : 'queues/payments', 'queue'],
      ['jobs', 'jobs?queue=payments&state=completed', 'jobs'],
      ['job', `jobs/${refs.refund}`, 'job'],
      ['handlers', 'handlers', 'handlers'],
      ['handler', 'handlers/refund-request', 'handler'],
      ['schedules', 'schedules', 'schedules'],
      ['events', 'events', 'events'],
    ];
    const viewChecks = {
      fleet: () => A.locator('[data-testid="host-row"]').first().waitFor(),
      jobs: () => A.locator('[data-testid="job-row"]').first().waitFor(),
      job: () => A.getByTestId('waterfall').waitFor(),
      schedules: () => A.locator('[data-testid="schedule-row"][data-schedule="nightly-ledger-check"]').waitFor(),
      events: () => A.locator('[data-testid="event-row"][data-event="refund.settled"]').first().waitFor(),
    };
    for (const [name, route, view] of views) {
      await A.setViewportSize(DESKTOP);
      admin.seen.problems.length = 0;
      await show(A, route, view);
      await viewChecks[name]?.();
      await A.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
      await A.setViewportSize(PHONE);
      await A.waitForFunction(
        () => innerWidth === 390 && document.documentElement.scrollWidth <= innerWidth,
        null,
        { timeout: T },
      ).catch(async () => {
        const w = await A.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
        throw new Error(`${name}: the page scrolls sideways at 390 px (scrollWidth ${w[0]} > ${w[1]})`);
      });
      await A.screenshot({ path: join(SHOTS, `${name}-phone.png`), fullPage: true });
      assert.deepEqual(admin.seen.problems, [], `${name} (#/${route}) rendered with problems`);
    }
    await A.setViewportSize(DESKTOP);
  });

  await step('10. a reader token is offered no action', async () => {
    const reader = await openPage();
    try {
      const R = reader.page;
      await login(R, READER);
      await R.locator('[data-testid="view-fleet"][data-ready="true"]').waitFor();
      await R.locator('[data-testid="host-row"]').first().waitFor();
      assert.equal(await R.getByTestId('drain-host').count(), 0);
      await show(R, 'queues', 'queues');
      await R.locator('[data-testid="queue-row"]').first().waitFor();
      assert.equal(await R.locator('[data-testid="pause-queue"], [data-testid="resume-queue"]').count(), 0);
      await show(R, `jobs/${refs.hostile}`, 'job');
      await R.getByTestId('job-state').waitFor();
      assert.equal(await R.locator('[data-testid^="job-retry"], [data-testid^="job-remove"]').count(), 0);
      await show(R, 'schedules', 'schedules');
      await R.locator('[data-testid="schedule-row"]').first().waitFor();
      assert.equal(await R.getByTestId('trigger-schedule').count(), 0);
      assert.deepEqual(reader.seen.problems, []);
    } finally {
      await reader.context.close();
    }
  });
  await step('11. a reload while Redis is down keeps the login, and the page comes back by itself', async () => {
    const outage = await openPage();
    try {
      const O = outage.page;
      await login(O, ADMIN);
      // What the API answers every request while Redis is down (api/guard.rs).
      const down = (route) =>
        route.fulfill({
          status: 503,
          contentType: 'application/json',
          body: JSON.stringify({
            error: {
              code: 'unavailable',
              message: 'Redis is unreachable: the request was not run, so nothing was changed; retry later',
            },
          }),
        });
      await O.route('**/v1/me', down);
      await O.reload();
      await byText(O, 'session-check', 'could not be checked yet').waitFor();
      assert.ok(await O.evaluate(() => sessionStorage.getItem('airlock.token')), 'the token was dropped on a 503');
      await O.unroute('**/v1/me', down);
      await O.getByTestId('whoami').waitFor();
      assert.equal(await O.getByTestId('login-token').count(), 0);
    } finally {
      await outage.context.close();
    }
  });
  await step('12. a message’s backticked names show as code, without the backticks', async () => {
    await show(A, 'handlers/no-such-handler', 'handler');
    const shown = A.locator('[data-testid="not-found"] code', { hasText: /^no-such-handler$/ });
    await shown.waitFor();
    const message = (await A.getByTestId('not-found').textContent()).trim();
    assert.ok(!message.includes('`'), message);
    const api = await call('GET', '/v1/handlers/no-such-handler', ADMIN);
    assert.equal(api.status, 404);
    assert.equal(message, api.body.error.message.replaceAll('`', ''));
  });
  await step('13. a job that failed part-way shows its progress bar as failed', async () => {
    const ref = await enqueue('payments', WEB, { transactionId: 'tx_zero', amount: 0 });
    await until(ref, (j) => j.state === 'failed', 'failed');
    await show(A, `jobs/${ref}`, 'job');
    await A.locator('[data-testid="job-progress"][data-value="10"][data-failed="true"]').waitFor();
    assert.equal(await A.locator('[data-testid="job-progress"] .progress-fill.failed').count(), 1);
  });
  await step('14. a flow parent failed by its child links to the child and shows the child’s reason', async () => {
    const flow = await must('POST', '/v1/flows', WEB, {
      name: 'settle',
      queue: 'payments',
      data: { transactionId: 'tx_flow', amount: 5 },
      children: [{ name: 'spin', queue: 'hostile', data: {} }],
    });
    const child = flow.children[0].ref;
    await until(flow.ref, (j) => j.state === 'failed', 'failed');
    await show(A, `jobs/${flow.ref}`, 'job');
    const link = A.getByTestId('failed-child');
    await link.waitFor();
    assert.equal((await link.textContent()).trim(), child);
    assert.equal(await link.getAttribute('href'), `#/jobs/${child}`);
    await byText(A, 'failed-child-reason', /fuel_exhausted/).waitFor();
    await A.locator(`[data-testid="child-row"][data-state="failed"]`).waitFor();
  });
  await step('15. a delayed job cancelled before it ran says it never ran, its delay drawn as a delay', async () => {
    const r = await call('POST', '/v1/queues/payments/jobs', WEB, {
      data: { transactionId: 'tx_later', amount: 3 },
      opts: { delay: 3_600_000 },
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const ref = r.body.ref;
    const cancelled = await call('POST', `/v1/jobs/${ref}/cancel`, WEB, {});
    assert.equal(cancelled.status, 202, JSON.stringify(cancelled.body));
    await until(ref, (j) => j.state === 'failed', 'failed');
    await show(A, `jobs/${ref}`, 'job');
    await byText(A, 'job-last-started', 'never ran').waitFor();
    assert.ok(!(await A.getByTestId('job-finished').textContent()).includes('after its last start'));
    await byText(A, 'wf-delayed', /^delayed · .* of 1 h$/).waitFor();
    assert.equal(await A.getByTestId('wf-queued').count(), 0, 'no queue time: it was never ready');
    assert.equal(await A.getByTestId('wf-run').count(), 0);
    await byText(A, 'wf-finished', 'failed without running').waitFor();
  });

  await step('16. failed jobs: reasons in the list, a failure-kind filter, retry and remove in bulk after asking', async () => {
    const ref = refs.hostile;
    const id = ref.slice(ref.indexOf(':') + 1);
    const row = () => A.locator(`[data-testid="job-row"][data-ref="${ref}"]`);
    await show(A, 'jobs?queue=hostile&state=failed', 'jobs');
    // The row says why, in the sandbox's words, clipped.
    const reason = await row().getByTestId('job-reason').textContent();
    assert.match(reason, /^fuel_exhausted: .*fuel/, reason);
    // Another kind: nothing; its own kind: the job.
    await A.getByTestId('kind-filter').selectOption('trap');
    await byText(A, 'jobs-empty', 'No failed job of kind trap.').waitFor();
    assert.match(A.url(), /kind=trap/);
    await A.getByTestId('kind-filter').selectOption('fuel_exhausted');
    await row().waitFor();
    const listed = await A.locator('[data-testid="job-row"]').count();
    // Retrying the filtered jobs asks first; going back changes nothing.
    await A.getByTestId('retry-failed').click();
    await byText(A, 'confirm-dialog', 'Retry the failed jobs of kind fuel_exhausted of hostile?').waitFor();
    await A.getByTestId('confirm-cancel').click();
    assert.equal((await job(ref)).attemptsMade, 2);
    await A.getByTestId('retry-failed').click();
    await A.getByTestId('confirm-ok').click();
    await byText(A, 'bulk-done', `${listed} job${listed === 1 ? '' : 's'} retried.`).waitFor();
    // It ran again and failed again: a third attempt.
    await until(ref, (j) => j.state === 'failed' && j.attemptsMade === 3, 'failed on a third attempt');
    // Removing failed jobs asks first, then the list is empty.
    await show(A, 'jobs?queue=hostile&state=failed', 'jobs');
    await row().waitFor();
    await A.getByTestId('clean-failed').click();
    await byText(A, 'confirm-dialog', 'Remove the failed jobs of hostile?').waitFor();
    await A.getByTestId('confirm-ok').click();
    await byText(A, 'bulk-done', /jobs? removed\.$/).waitFor();
    await A.getByTestId('jobs-empty').waitFor();
    const gone = await call('GET', `/v1/jobs/hostile:${id}`, ADMIN);
    assert.equal(gone.status, 404, 'the failed job was removed');
  });

  await step('17. running a completed job again asks first (a failed job’s retry, step 4, does not)', async () => {
    const ref = await enqueue('payments', WEB, { transactionId: `tx_again_${RUN}`, amount: 3, currency: 'EUR' });
    const done = await until(ref, (j) => j.state === 'completed', 'completed');
    await show(A, `jobs/${ref}`, 'job');
    await byText(A, 'job-state', /^completed$/).waitFor();
    // Going back from the dialog changes nothing.
    await A.getByTestId('job-retry').click();
    await byText(A, 'confirm-dialog', `Run completed job ${ref} again?`).waitFor();
    await byText(A, 'confirm-dialog', /durable steps are kept/).waitFor();
    await A.getByTestId('confirm-cancel').click();
    await A.getByTestId('confirm-dialog').waitFor({ state: 'detached' });
    const kept = await job(ref);
    assert.equal(kept.state, 'completed');
    assert.equal(kept.finishedOn, done.finishedOn, 'not run again');
    // Confirming runs it again.
    await A.getByTestId('job-retry').click();
    await A.getByTestId('confirm-ok').click();
    await until(ref, (j) => j.state === 'completed' && j.finishedOn > done.finishedOn, 'completed a second time');
    await A.locator('[data-testid="run-row"]').nth(1).waitFor();
  });

  await step('18. on a phone the state tabs stay on one line and a wide table keeps its key column in view', async () => {
    await A.setViewportSize(PHONE);
    try {
      await show(A, 'jobs?queue=payments&state=completed', 'jobs');
      await A.locator('[data-testid="job-row"]').first().waitFor();
      // The tabs: one line, the open one scrolled into view.
      const tabs = await A.evaluate(() => {
        const nav = document.querySelector('nav.tabs');
        const all = [...nav.querySelectorAll('.tab')];
        const box = nav.getBoundingClientRect();
        const open = nav.querySelector('.tab.active').getBoundingClientRect();
        return {
          tops: new Set(all.map((t) => Math.round(t.getBoundingClientRect().top))).size,
          navHeight: box.height,
          tabHeight: all[0].getBoundingClientRect().height,
          openInView: open.left >= box.left - 1 && open.right <= box.right + 1,
        };
      });
      assert.equal(tabs.tops, 1, 'every tab on one line');
      assert.ok(tabs.navHeight < 1.5 * tabs.tabHeight, `the tabs take one line (${tabs.navHeight} px)`);
      assert.ok(tabs.openInView, 'the open tab is in view');
      // The table is wider than the screen: it says so, and scrolls in its box.
      const table = A.getByTestId('jobs-table');
      await A.locator('[data-testid="jobs-table"][data-overflow="more"]').waitFor();
      await A.getByTestId('scroll-hint').waitFor();
      const link = A.locator('[data-testid="job-row"]').first().getByTestId('job-link');
      const before = await link.boundingBox();
      await table.evaluate((el) => el.scrollTo({ left: el.scrollWidth }));
      await A.locator('[data-testid="jobs-table"][data-overflow="end"]').waitFor();
      await A.getByTestId('scroll-hint').waitFor({ state: 'detached' });
      // Scrolled to its last column, the job's id is still where it was.
      const after = await link.boundingBox();
      assert.ok(Math.abs(after.x - before.x) <= 1, `the job column stays put (${before.x} -> ${after.x})`);
      assert.ok(after.x >= 0 && after.x + Math.min(after.width, 100) <= PHONE.width, 'and on the screen');
      const last = await A.locator('[data-testid="job-row"]').first().locator('td').last().boundingBox();
      assert.ok(last.x + last.width <= PHONE.width + 1, 'the last column scrolled into view');
      await A.screenshot({ path: join(SHOTS, 'jobs-phone-scrolled.png') });
      // At desktop width the same table fits: no hint.
      await A.setViewportSize(DESKTOP);
      await A.locator('[data-testid="jobs-table"][data-overflow="none"]').waitFor();
      assert.equal(await A.getByTestId('scroll-hint').count(), 0);
    } finally {
      await A.setViewportSize(DESKTOP);
    }
  });

  await step('19. one time format: lists, job pages and charts write a time the same way, in the zone the top bar names', async () => {
    const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
    // What the page should print for `ms`, computed in the browser's own zone.
    const expected = (ms) =>
      A.evaluate(
        ([ms, months]) => {
          const d = new Date(ms);
          const p = (n) => String(n).padStart(2, '0');
          const year = d.getFullYear() === new Date().getFullYear() ? '' : ` ${d.getFullYear()}`;
          return `${d.getDate()} ${months[d.getMonth()]}${year} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
        },
        [ms, MONTHS],
      );
    const offset = await A.evaluate(() => -new Date().getTimezoneOffset());
    const zone =
      offset === 0
        ? 'UTC'
        : `UTC${offset > 0 ? '+' : '−'}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
    const api = await job(refs.payment);
    // The jobs list.
    await show(A, 'jobs?queue=payments&state=completed', 'jobs');
    await byText(A, 'time-zone', `times in ${zone}`).waitFor();
    const row = A.locator(`[data-testid="job-row"][data-ref="${refs.payment}"]`);
    await row.waitFor();
    const listed = (await row.locator('time').first().textContent()).trim();
    assert.equal(listed, await expected(api.timestamp), 'the list gives the day, not only the time');
    assert.match(listed, /^\d{1,2} [A-Z][a-z]{2}( \d{4})? \d{2}:\d{2}:\d{2}$/);
    assert.match(await row.locator('time').first().getAttribute('title'), new RegExp(`${zone.replace('+', '\\+')} \\(`));
    // The job page's waterfall scale, the same way.
    await show(A, `jobs/${refs.payment}`, 'job');
    await A.getByTestId('waterfall').waitFor();
    const scale = await A.locator('.wf-scale span').first().textContent();
    assert.equal(scale.trim(), await expected(api.timestamp));
    // The fleet's charts: their span in the same words (the axis is drawn with the same function).
    await show(A, 'fleet', 'fleet');
    const label = await A.getByTestId('throughput-chart').getAttribute('aria-label');
    assert.match(label, /^per minute, \d{1,2} [A-Z][a-z]{2}( \d{4})? \d{2}:\d{2}:\d{2} to \d{1,2} [A-Z][a-z]{2}( \d{4})? \d{2}:\d{2}:\d{2} \(UTC/);
    assert.ok(label.endsWith(`(${zone})`), label);
  });

  await step('20. a tab’s count is read with the rows under it: each new job shows in both at once', async () => {
    await must('POST', '/v1/queues/payments/pause', ADMIN);
    pausedByUs.add('payments');
    await show(A, 'jobs?queue=payments&state=waiting', 'jobs');
    const seen = () =>
      A.evaluate(() => ({
        rows: document.querySelectorAll('[data-testid="job-row"]').length,
        count: Number(
          document.querySelector('[data-testid="state-tab"][data-state="waiting"] .count')?.textContent.replace(/\D/g, '') ?? -1,
        ),
      }));
    const start = await seen();
    for (let i = 1; i <= 3; i++) {
      await enqueue('payments', WEB, { transactionId: `tx_count_${RUN}_${i}`, amount: 1, currency: 'EUR' });
      // The moment the row appears, the count above it says so too.
      await A.waitForFunction(
        (want) => document.querySelectorAll('[data-testid="job-row"]').length >= want,
        start.rows + i,
        { timeout: T },
      );
      const now = await seen();
      assert.equal(now.count - start.count, now.rows - start.rows, `after job ${i}: the count moved with the rows`);
    }
    await must('POST', '/v1/queues/payments/resume', ADMIN);
    pausedByUs.delete('payments');
  });

  await step('21. the events view links the jobs an event resumed, and says when an event did nothing', async () => {
    await must('POST', '/v1/events', WEB, { name: 'nobody.listens', id: `idle-${RUN}`, data: {} });
    await show(A, 'events', 'events');
    const settled = A.locator(`[data-testid="event-row"][data-id="settled-${RUN}"]`);
    await settled.waitFor();
    // The settlement event ended the refund job's wait: a link to it.
    const link = settled.getByTestId('event-resumed');
    await byText(settled, 'event-resumed', refs.refund).waitFor();
    assert.equal(await settled.getByTestId('event-no-jobs').count(), 0);
    const idle = A.locator(`[data-testid="event-row"][data-id="idle-${RUN}"]`);
    await idle.getByTestId('event-no-jobs').waitFor();
    await link.click();
    await A.locator('[data-testid="view-job"][data-ready="true"]').waitFor();
    assert.ok(decodeURIComponent(A.url()).endsWith(`#/jobs/${refs.refund}`), A.url());
  });
  await step('22. a producer token is shown no whole-queue counts over its own rows; the admin sees them', async () => {
    const web = await openPage();
    try {
      const P = web.page;
      await login(P, WEB);
      await show(P, 'queues', 'queues');
      const row = P.locator('[data-testid="queue-row"][data-queue="payments"]');
      await row.waitFor();
      assert.equal(await row.getByTestId('not-counted').count(), 5, 'five count cells say they are not shown');
      assert.ok((await row.getByTestId('not-counted').first().getAttribute('title')).includes('producer token'));
      await show(P, 'queues/payments', 'queue');
      await P.getByTestId('not-counted').waitFor();
      assert.equal(await P.getByTestId('queue-counts').count(), 0, 'no count tiles');
      await show(P, 'jobs?queue=payments&state=completed', 'jobs');
      await P.locator(`[data-testid="job-row"][data-ref="${refs.payment}"]`).waitFor();
      assert.equal(await P.locator('[data-testid="state-tab"] .count').count(), 0, 'no counts on the tabs');
      const view = await call('GET', '/v1/queues/payments', WEB);
      assert.equal(view.body.counts, null, JSON.stringify(view.body));
    } finally {
      await web.context.close();
    }
    await show(A, 'queues', 'queues');
    const row = A.locator('[data-testid="queue-row"][data-queue="payments"]');
    await row.waitFor();
    assert.equal(await row.getByTestId('not-counted').count(), 0);
    await show(A, 'jobs?queue=payments&state=completed', 'jobs');
    await A.locator('[data-testid="state-tab"][data-state="completed"] .count').waitFor();
  });
  await step('23. a search across every queue finds a job by a text in its data, and a producer only its own', async () => {
    // The payment of step 2 (on `payments`) and the refund of step 8 (on
    // `refunds`) both hold RUN-specific data; the refund id is unique.
    const refundId = `r-${RUN}`;
    await show(A, 'search', 'search');
    await A.getByTestId('search-input').fill(refundId);
    await A.getByTestId('search-submit').click();
    await A.waitForURL(new RegExp(`[?&]q=${refundId}`));
    const row = A.locator(`[data-testid="search-row"][data-ref="${refs.refund}"]`);
    await row.waitFor();
    assert.equal(await A.locator('[data-testid="search-row"]').count(), 1, 'only the refund holds its id');
    await byText(A, 'search-scope', /newest 100 of each state of each queue/).waitFor();
    // A text in two queues' jobs: the payment's transaction id is on
    // `payments` only, the word `amount` on both.
    await show(A, 'search?q=amount', 'search');
    await A.locator('[data-testid="search-row"][data-ref^="payments:"]').first().waitFor();
    const queues = await A.locator('[data-testid="search-row"]').evaluateAll((els) =>
      [...new Set(els.map((e) => e.dataset.ref.split(':')[0]))].sort(),
    );
    assert.ok(queues.includes('payments') && queues.includes('refunds'), `queues found: ${queues}`);
    await show(A, `search?q=${refundId}`, 'search');
    await row.getByTestId('search-link').click();
    await A.locator('[data-testid="view-job"][data-ready="true"]').waitFor();
    assert.ok(decodeURIComponent(A.url()).endsWith(`#/jobs/${refs.refund}`), A.url());
    // The other producer finds none of WEB's jobs.
    const theirs = await call('GET', `/v1/jobs?q=${refundId}`, OTHER);
    assert.equal(theirs.status, 200);
    assert.deepEqual(theirs.body.jobs, [], JSON.stringify(theirs.body));
    const mine = await call('GET', `/v1/jobs?q=${refundId}`, WEB);
    assert.deepEqual(mine.body.jobs.map((j) => `${j.queue}:${j.id}`), [refs.refund]);
    const bad = await call('GET', '/v1/jobs?q=', ADMIN);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'q');
  });
  await step('24. a queue and a handler show their throughput and latency percentiles over a chosen window', async () => {
    const stats = await must('GET', '/v1/stats?queue=payments&minutes=60', READER);
    assert.ok(stats.latency.run.count > 0 && stats.latency.wait.count > 0, JSON.stringify(stats.latency));
    assert.ok(stats.minutes.every((m) => Object.keys(m.runs).every((k) => !k.includes(':'))), 'no bucket in runs');
    // Both filters at once: the queue if that handler runs it, else nothing.
    const both = await must('GET', '/v1/stats?queue=payments&handler=payment-webhook', READER);
    assert.ok(both.latency.run.count >= stats.latency.run.count && both.latency.run.count > 0);
    const neither = await must('GET', '/v1/stats?queue=payments&handler=noop', READER);
    assert.equal(neither.latency.run.count, 0);
    const bad = await call('GET', '/v1/stats?handler=', READER);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'handler');

    await show(A, 'queues/payments', 'queue');
    const card = A.getByTestId('latency');
    await card.waitFor();
    const runs = Number(await card.getByTestId('latency-throughput').getAttribute('data-runs'));
    assert.ok(runs > 0, `runs in the last hour: ${runs}`);
    await card.locator('[data-testid="latency-end"][data-end="completed"]').waitFor();
    // The card and the API agree on the counts. Runs of earlier steps may
    // still be landing (the tallies are added once a second), so both are
    // read again until they meet.
    const deadline = Date.now() + T;
    for (;;) {
      const now = await must('GET', '/v1/stats?queue=payments&minutes=60', READER);
      const shown = [
        await card.getByTestId('latency-wait').getAttribute('data-count'),
        await card.getByTestId('latency-run').getAttribute('data-count'),
      ];
      const want = [String(now.latency.wait.count), String(now.latency.run.count)];
      if (shown[0] === want[0] && shown[1] === want[1]) break;
      assert.ok(Date.now() < deadline, `the card shows ${shown}, the API says ${want}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    for (const row of ['latency-wait', 'latency-run']) {
      assert.match(await card.getByTestId(row).locator('[data-p="50"]').textContent(), /^(≤ \d+(\.\d+)? (ms|s|min|h)|> 1 h)$/);
    }
    await card.locator('[data-testid="latency-window"][data-minutes="15"]').click();
    await card.locator('[data-testid="latency-window"][data-minutes="15"][aria-pressed="true"]').waitFor();
    await byText(card, 'latency-throughput', /in the last 15 min/).waitFor();

    await show(A, 'handlers/payment-webhook', 'handler');
    const handlerRuns = Number(
      await A.getByTestId('latency').getByTestId('latency-throughput').getAttribute('data-runs'),
    );
    assert.ok(handlerRuns >= runs, `the handler's runs ${handlerRuns} include the queue's ${runs}`);
  });
  await step('25. a recorded job shows its transcript, and a replay against the version that sends cents shows the changed request', async () => {
    await show(A, `jobs/${refs.payment}`, 'job');
    const transcript = A.getByTestId('job-transcript');
    await transcript.waitFor();
    const request = transcript.locator('[data-testid="transcript-call"][data-call="http"]');
    await request.waitFor();
    assert.match(await request.textContent(), /POST http:\/\/127\.0\.0\.1:\d+\/v1\/ledger.*201/);
    await transcript.locator('[data-testid="transcript-call"][data-call="config"]', { hasText: 'LEDGER_URL' }).waitFor();
    // The current version replays the same; the one that sends cents, a
    // changed request with both bodies.
    const version = transcript.getByTestId('replay-version');
    const current = await version.inputValue();
    assert.notEqual(current, CENTS);
    await transcript.getByTestId('replay-run').click();
    await transcript.locator('[data-testid="replay-report"][data-verdict="same"]').waitFor();
    await version.selectOption(CENTS);
    await transcript.getByTestId('replay-run').click();
    await transcript.locator('[data-testid="replay-report"][data-verdict="different"]').waitFor();
    const changed = await transcript.getByTestId('replay-changed').textContent();
    assert.match(changed, /"amount":42\.5/, changed);
    assert.match(changed, /"amount":4250/, changed);
    // The refund's transcript names its wait token; the token is nowhere.
    await show(A, `jobs/${refs.refund}`, 'job');
    await A.getByTestId('job-transcript').waitFor();
    const page = await A.content();
    assert.ok(page.includes('[wait-token:approval]'), 'the token is named in the transcript');
    assert.ok(!page.includes(refs.refundToken), 'the token itself is not on the page');
    // A reader sees the transcript, and is offered no replay.
    const reader = await openPage();
    try {
      await login(reader.page, READER);
      await show(reader.page, `jobs/${refs.payment}`, 'job');
      await reader.page.getByTestId('job-transcript').waitFor();
      assert.equal(await reader.page.getByTestId('replay').count(), 0);
    } finally {
      await reader.context.close();
    }
  });
  await step('26. a canary shows both versions side by side; promote moves this queue only, and the card’s rollback removes a canary', async () => {
    // A second queue of the payment handler, its canary the version that
    // sends cents, half of its new jobs.
    await must('PUT', '/v1/queues/canaried', ADMIN, {
      handler: 'payment-webhook',
      egress: [GATEWAY],
      config: { LEDGER_URL: GATEWAY },
    });
    await must('PUT', '/v1/queues/canaried/canary', ADMIN, { digest: CENTS, percent: 50 });
    const jobs = [];
    for (let i = 0; i < 16; i++) {
      jobs.push(await enqueue('canaried', WEB, { transactionId: `canary_${RUN}_${i}`, amount: 1 }));
    }
    for (const ref of jobs) await until(ref, (j) => j.state === 'completed', 'completed');
    const ran = new Set((await Promise.all(jobs.map(job))).map((j) => j.handlerDigest));
    assert.equal(ran.size, 2, `both versions ran: ${[...ran]}`);
    await show(A, 'queues/canaried', 'queue');
    const card = A.getByTestId('canary');
    await card.waitFor();
    // Both versions, side by side, each with its runs (tallied once a second).
    for (const digest of ran) {
      await card.locator(`[data-testid="canary-version"][data-digest="${digest}"]:not([data-runs="0"])`).waitFor({ timeout: T });
    }
    await card.locator(`[data-testid="canary-version"][data-digest="${CENTS}"]`, { hasText: 'candidate' }).waitFor();
    // Promote on this queue: asked first; then the card goes and the queue
    // names its own version, while the other queue of the handler stays.
    await card.getByTestId('promote-canary').click();
    await byText(A, 'confirm-dialog', 'Promote the candidate on canaried?').waitFor();
    await A.getByTestId('confirm-ok').click();
    await card.waitFor({ state: 'detached' });
    await A.locator(`[data-testid="queue-version"] [data-pinned="${CENTS}"]`).waitFor();
    assert.equal((await must('GET', '/v1/queues/payments', ADMIN)).version ?? null, null, 'payments did not move');
    // A canary again, removed from the card: the queue keeps its version.
    const current = (await must('GET', '/v1/handlers/payment-webhook', ADMIN)).current.digest;
    await must('PUT', '/v1/queues/canaried/canary', ADMIN, { digest: current, percent: 10 });
    await card.waitFor();
    await card.getByTestId('rollback-canary').click();
    await byText(A, 'confirm-dialog', 'Remove the canary of canaried?').waitFor();
    await A.getByTestId('confirm-ok').click();
    await card.waitFor({ state: 'detached' });
    const after = await must('GET', '/v1/queues/canaried', ADMIN);
    assert.equal(after.canary ?? null, null);
    assert.equal(after.version, CENTS);
  });
  await step('27. a job of a batch names its batch and lists the jobs it ran with, each linked, with its state', async () => {
    const refs = [];
    for (const outcome of ['ok', 'ok', 'fatal']) refs.push(await enqueue('rows', WEB, { outcome }));
    for (const ref of refs) await until(ref, (j) => ['completed', 'failed'].includes(j.state), 'finished');
    const ran = await until(refs[0], (j) => j.batch != null, 'recorded its batch');
    assert.equal(ran.batch.size, 3, JSON.stringify(ran.batch));
    await show(A, `jobs/${refs[0]}`, 'job');
    await byText(A, 'job-batch', ran.batch.id).waitFor();
    await byText(A, 'job-batch', '3 jobs').waitFor();
    const rows = A.locator('[data-testid="job-batch-jobs"] [data-testid="batch-row"]');
    await A.locator('[data-testid="batch-row"][data-state="failed"]').waitFor();
    assert.equal(await rows.count(), 3);
    assert.equal(await A.locator('[data-testid="batch-row"][data-state="completed"]').count(), 2);
    for (const ref of refs) {
      assert.equal(await A.locator(`[data-testid="batch-row"] a[href="#/jobs/${ref}"]`).count(), 1, ref);
    }
    await byText(A, 'batch-row', '(this job)').waitFor();
    // The batch's one transcript, with this job's own end and each job's.
    const run = A.locator('[data-testid="job-transcript"] [data-testid="transcript-run"]').last();
    await run.locator('summary', { hasText: 'in a batch of 3 jobs' }).waitFor();
    const ends = run.locator('[data-testid="transcript-batch-job"]');
    assert.equal(await ends.count(), 3);
    assert.equal(await run.locator('[data-testid="transcript-batch-job"][data-end="failed"]').count(), 1);
    await byText(A, 'transcript-batch-job', `${refs[0]} (this job)`).waitFor();
  });
  await step('28. the audit log lists the test\'s binds by the admin, sealed, and filters by action', async () => {
    await show(A, 'audit', 'audit');
    await A.locator('[data-testid="audit-entry"][data-action="queue.bind"]').first().waitFor();
    await A.locator('[data-testid="audit-entry"][data-action="handler.deploy"]').first().waitFor();
    assert.equal(await A.locator('[data-testid="audit-entry"][data-sealed="false"]').count(), 0);
    await byText(A, 'audit-entry', 'ops').first().waitFor();
    await A.fill('[data-testid="audit-action"]', 'queue.bind');
    await A.click('[data-testid="audit-apply"]');
    await A.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid="audit-entry"]')];
      return rows.length > 0 && rows.every((r) => r.dataset.action === 'queue.bind');
    });
    assert.ok((await A.locator('[data-testid="audit-entry"]').count()) > 0);
    assert.equal(await A.locator('[data-testid="audit-gaps"]').count(), 0);
  });
  await step('29. a scoped deployer sees and acts on its team\'s queues and handlers only', async () => {
    const issued = await must('POST', '/v1/api-tokens', ADMIN, {
      name: `team-pay-${RUN}`,
      role: 'deployer',
      scope: { queues: ['payments*'], handlers: ['payment*'] },
    });
    const scoped = await openPage();
    try {
      const S = scoped.page;
      await login(S, issued.token);
      await byText(S, 'whoami', /\(deployer\)/).waitFor();
      await byText(S, 'scope', 'queues payments* · handlers payment*').waitFor();
      assert.equal(await S.getByTestId('nav-fleet').count(), 0, 'no fleet view for a scoped token');
      assert.equal(await S.getByTestId('nav-audit').count(), 0, 'no audit log for a deployer');
      await show(S, 'queues', 'queues');
      const queues = await S.locator('[data-testid="queue-row"]').evaluateAll((els) => els.map((e) => e.dataset.queue));
      assert.deepEqual(queues, ['payments'], 'only its team\'s queues are listed');
      await show(S, 'handlers', 'handlers');
      const handlers = await S.locator('[data-testid="handler-row"]').evaluateAll((els) => els.map((e) => e.dataset.handler));
      assert.deepEqual(handlers, ['payment-webhook'], 'only its team\'s handlers are listed');
      // Another team's queue is not there at all.
      await S.goto(`${UI}#/queues/refunds`);
      await S.getByTestId('not-found').waitFor();
      // Its own it acts on: pause and resume.
      await show(S, 'queues', 'queues');
      const row = S.locator('[data-testid="queue-row"][data-queue="payments"]');
      await row.getByTestId('pause-queue').click();
      await S.getByTestId('confirm-ok').click();
      pausedByUs.add('payments');
      await row.getByTestId('queue-paused').waitFor();
      assert.equal((await must('GET', '/v1/queues/payments', ADMIN)).counts.paused, true, 'the API says paused');
      await row.getByTestId('resume-queue').click();
      await row.getByTestId('queue-running').waitFor();
      pausedByUs.delete('payments');
    } finally {
      await scoped.context.close();
    }
  });
  console.log(`# dashboard: all ${passed} steps passed`);
} finally {
  // Let the host stop: the keyed guests spin until cancelled.
  for (const ref of [...keyedJobs].reverse()) {
    const r = await call('POST', `/v1/jobs/${ref}/cancel`, ADMIN, { reason: 'dashboard test cleanup' });
    if (r.status !== 202 && r.status !== 409) console.log(`# cleanup: cancel ${ref} answered ${r.status}`);
  }
  for (const queue of pausedByUs) await call('POST', `/v1/queues/${queue}/resume`, ADMIN);
  await call('DELETE', '/v1/queues/payments/schedules/nightly-ledger-check', ADMIN);
  await browser.close();
}

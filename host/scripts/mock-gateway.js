#!/usr/bin/env node
// A local stand-in for the services the examples call, started by
// `make run` (no dependencies beyond Node itself):
//
//   POST /v1/messages   a mail gateway: needs `Authorization: Bearer $MOCK_GATEWAY_KEY`,
//                       answers 202 {"id": "msg_..."}; 401 without the key
//   POST /v1/ledger     a ledger: answers 201 {"id": "led_<transactionId>"},
//                       the same id again for a repeated Idempotency-Key
//   POST /v1/ledger/bulk  {"entries": [{transactionId, amount, currency}]}: many
//                       entries in one request (the bulk-insert example's batches),
//                       each kept once by its transaction id; answers 201
//                       {"ids": ["led_<transactionId>", ...]} in order
//   GET  /v1/ledger     {"posts": N, "bulkPosts": B, "entries": [{id, amount, currency}]}:
//                       how many POSTs the ledger got (B of them bulk), and what it holds
//   POST /v1/approvals  an approval service (the refund example asks it for a
//                       manager's decision): keeps {refundId, orderId, amount,
//                       token} and answers 201 {"id": "apr_<refundId>"}; the same
//                       token again is kept once
//   GET  /v1/approvals  the manager's inbox: {"approvals": [...]}, newest last,
//                       each with its token (a real service would mail a link)
//   GET  /healthz       "ok"
//
// And a small shop, the example of a web app that shows a job live:
//
//   GET  /app/          a checkout page (host/scripts/example-app/index.html)
//                       that pays through Airlock and shows the payment's
//                       progress bar and log lines as they happen
//   GET  /app/airlock-client.mjs  the TypeScript SDK's browser client
//                       (guest-sdk/js/lib/client.mjs), which the page imports
//   POST /app/payments  {amount, currency}: the shop's backend enqueues a
//                       payment on Airlock's `payments` queue with its own
//                       token (AIRLOCK_APP_TOKEN, on AIRLOCK_URL), asks for a
//                       read token for that job alone, and answers 201
//                       {ref, token, expiresAt, apiUrl}: the page gets the
//                       read token, never the shop's token
//
// Listens on MOCK_GATEWAY_LISTEN (default 127.0.0.1:8090) and prints one line
// per request (never the key itself). MOCK_GATEWAY_LEDGER_DELAY_MS (default
// 0) makes the ledger answer that much later, as a slow service would.
'use strict';
const http = require('node:http');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const [host, port] = (process.env.MOCK_GATEWAY_LISTEN || '127.0.0.1:8090').split(':');
const key = process.env.MOCK_GATEWAY_KEY || '';
const ledger = new Map();
const entries = [];
let ledgerPosts = 0;
let bulkPosts = 0;
const approvals = [];
const ledgerDelayMs = Number(process.env.MOCK_GATEWAY_LEDGER_DELAY_MS || 0);

const airlockUrl = (process.env.AIRLOCK_URL || '').replace(/\/+$/, '');
const appToken = process.env.AIRLOCK_APP_TOKEN || '';
const page = path.join(__dirname, 'example-app', 'index.html');
const client = path.join(__dirname, '..', '..', 'guest-sdk', 'js', 'lib', 'client.mjs');

function file(res, file, type) {
  fs.readFile(file, (err, bytes) => {
    if (err) return reply(res, 404, { error: `cannot read ${file}` });
    res.writeHead(200, { 'content-type': type });
    res.end(bytes);
  });
}

/** Airlock's API with the shop's token: the answer's status and JSON. */
async function airlock(method, route, body) {
  const r = await fetch(airlockUrl + route, {
    method,
    headers: { authorization: `Bearer ${appToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

/** The shop's backend: a payment enqueued, and a read token for its job. */
async function pay(res, body) {
  if (!airlockUrl || !appToken) {
    return reply(res, 503, { error: 'the shop needs AIRLOCK_URL and AIRLOCK_APP_TOKEN (make run sets them)' });
  }
  const amount = Number(body.amount);
  const data = { transactionId: `shop_${crypto.randomUUID().slice(0, 8)}`, amount, currency: body.currency || 'EUR' };
  const added = await airlock('POST', '/v1/queues/payments/jobs', { data });
  if (added.status !== 202) return reply(res, 502, { error: `Airlock refused the payment: ${JSON.stringify(added.body)}` });
  const ref = added.body.ref;
  const read = await airlock('POST', `/v1/jobs/${encodeURIComponent(ref)}/read-token`, { expiresInSeconds: 600 });
  if (read.status !== 201) return reply(res, 502, { error: `Airlock gave no read token: ${JSON.stringify(read.body)}` });
  console.log(`shop: payment ${ref} of ${amount} ${data.currency}; a read token for it until ${read.body.expiresAt}`);
  reply(res, 201, { ref, token: read.body.token, expiresAt: read.body.expiresAt, apiUrl: airlockUrl });
}

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body = {};
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    } catch {
      return reply(res, 400, { error: 'body is not JSON' });
    }
    if (req.method === 'GET' && req.url === '/healthz') {
      res.end('ok');
    } else if (req.method === 'GET' && (req.url === '/app/' || req.url === '/app')) {
      file(res, page, 'text/html; charset=utf-8');
    } else if (req.method === 'GET' && req.url === '/app/airlock-client.mjs') {
      file(res, client, 'text/javascript; charset=utf-8');
    } else if (req.method === 'POST' && req.url === '/app/payments') {
      pay(res, body).catch((e) => reply(res, 502, { error: `Airlock unreachable: ${e.message}` }));
    } else if (req.method === 'POST' && req.url === '/v1/messages') {
      if (!key || req.headers.authorization !== `Bearer ${key}`) {
        console.log(`mail: refused (bad or missing API key) to=${body.to}`);
        return reply(res, 401, { error: 'invalid API key' });
      }
      const id = `msg_${crypto.randomUUID().slice(0, 8)}`;
      console.log(`mail: accepted ${id} to=${body.to}`);
      reply(res, 202, { id });
    } else if (req.method === 'POST' && req.url === '/v1/ledger') {
      const idem = req.headers['idempotency-key'] || crypto.randomUUID();
      ledgerPosts += 1;
      if (!ledger.has(idem)) {
        ledger.set(idem, `led_${body.transactionId}`);
        entries.push({ id: ledger.get(idem), amount: body.amount, currency: body.currency });
      }
      console.log(`ledger: ${ledger.get(idem)} amount=${body.amount} ${body.currency || ''}`);
      setTimeout(() => reply(res, 201, { id: ledger.get(idem) }), ledgerDelayMs);
    } else if (req.method === 'POST' && req.url === '/v1/ledger/bulk') {
      // Many entries in one request, each kept once by its transaction id
      // (the Idempotency-Key the payment example sends for one).
      if (!Array.isArray(body.entries)) return reply(res, 400, { error: '`entries` must be an array' });
      ledgerPosts += 1;
      bulkPosts += 1;
      const ids = body.entries.map((entry) => {
        const idem = String(entry.transactionId);
        if (!ledger.has(idem)) {
          ledger.set(idem, `led_${entry.transactionId}`);
          entries.push({ id: ledger.get(idem), amount: entry.amount, currency: entry.currency });
        }
        return ledger.get(idem);
      });
      console.log(`ledger: bulk of ${ids.length}`);
      setTimeout(() => reply(res, 201, { ids }), ledgerDelayMs);
    } else if (req.method === 'GET' && req.url === '/v1/ledger') {
      reply(res, 200, { posts: ledgerPosts, bulkPosts, entries });
    } else if (req.method === 'POST' && req.url === '/v1/approvals') {
      const { refundId, orderId, amount, token } = body;
      if (typeof refundId !== 'string' || typeof token !== 'string') {
        return reply(res, 400, { error: 'refundId and token must be strings' });
      }
      if (!approvals.some((a) => a.token === token)) approvals.push({ refundId, orderId, amount, token });
      console.log(`approvals: refund ${refundId} of ${amount} awaits a decision`);
      reply(res, 201, { id: `apr_${refundId}` });
    } else if (req.method === 'GET' && req.url === '/v1/approvals') {
      reply(res, 200, { approvals });
    } else {
      reply(res, 404, { error: `no route ${req.method} ${req.url}` });
    }
  });
});
server.listen(Number(port), host, () => console.log(`mock gateway on http://${host}:${port}`));

// Transactional e-mail delivery with an idempotency key, as an Airlock
// handler (TypeScript port of jobs/email-delivery).
//
// Input, as our users' BullMQ producer sends it:
// `{ "to": "a@example.com", "templateId": "welcome", "payload": {...},
// "idempotencyKey": "welcome-42" }` — or a plain mail with a `subject`
// instead of a template (one of the two is required; `idempotencyKey`
// defaults to the job id). The first run with a key "sends" the mail and
// remembers the key for 24 hours in the handler's KV store; any later run
// with the same key returns `skipped_duplicate` without sending again — the
// pattern that makes at-least-once delivery safe for side effects. It also
// serves event subscriptions: a job whose data is an Airlock event
// (`user.signed_up`) mails the event's data.
//
// Sending: when the queue binding's config sets `GATEWAY_URL`, the mail is
// POSTed to `{GATEWAY_URL}/v1/messages` with the binding's secret
// `MAIL_API_KEY` as a bearer token (the handler holds only its
// placeholder; the host puts the key in) and the gateway's id becomes the
// message id. Without `GATEWAY_URL` the send is simulated (logged), as in
// local runs with no gateway.
import { FatalError, ensureOk, eventPayload, handler, invalidData, readJson, type Context } from '@airlock/sdk';

const REMEMBER_FOR = '24h';

interface Email {
  to: string;
  subject?: string;
  templateId?: string;
  /** The template's variables. */
  payload?: unknown;
  idempotencyKey?: string;
}

interface Delivery {
  status: 'sent' | 'skipped_duplicate';
  idempotencyKey: string;
  messageId?: string;
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidData('expected a string', field);
  return value;
}

function decode(data: unknown): Email {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw invalidData('expected an object');
  const v = data as Record<string, unknown>;
  if (v.to === undefined) throw invalidData('missing field `to`');
  if (typeof v.to !== 'string') throw invalidData('expected a string', 'to');
  return {
    to: v.to,
    subject: optionalString(v.subject, 'subject'),
    templateId: optionalString(v.templateId, 'templateId'),
    payload: v.payload === null ? undefined : v.payload,
    idempotencyKey: optionalString(v.idempotencyKey, 'idempotencyKey'),
  };
}

export default handler<unknown, Delivery>(async (input, ctx) => {
  // The event's data for an event, the value itself otherwise.
  const email = decode(eventPayload(input));
  if (!email.to.includes('@')) {
    throw new FatalError(`invalid recipient address \`${email.to}\``);
  }
  let what: string;
  if (email.templateId !== undefined) what = `template \`${email.templateId}\``;
  else if (email.subject !== undefined) what = `"${email.subject}"`;
  else throw new FatalError('an e-mail needs a `templateId` or a `subject`');

  const key = email.idempotencyKey ?? ctx.job.id;
  const kvKey = `email-sent:${key}`;
  if (ctx.kv.get(kvKey) !== undefined) {
    ctx.log.info(`e-mail ${key} already sent, skipping`);
    ctx.progress(100);
    return { status: 'skipped_duplicate', idempotencyKey: key };
  }
  ctx.progress(50);
  const gateway = ctx.config.get('GATEWAY_URL');
  const messageId = gateway !== undefined ? await send(ctx, gateway, email, key) : `msg_${key}`;
  const p = email.payload;
  const variables = p !== null && typeof p === 'object' && !Array.isArray(p) ? Object.keys(p).length : 0;
  ctx.log.info(`sent ${what} to ${email.to} (${variables} template variables) as ${messageId}`);
  // Remember only after sending: a crash before this line resends (at
  // least once), never silently drops the mail.
  ctx.kv.set(kvKey, messageId, { ttl: REMEMBER_FOR });
  ctx.progress(100);
  return { status: 'sent', idempotencyKey: key, messageId };
});

/** POSTs the mail to the gateway; its id for the message. */
async function send(ctx: Context, gateway: string, email: Email, key: string): Promise<string> {
  const apiKey = ctx.secret('MAIL_API_KEY');
  const response = await ctx.fetch(`${gateway.replace(/\/+$/, '')}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`, // the host substitutes the value
      'idempotency-key': key,
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      to: email.to,
      subject: email.subject ?? null,
      templateId: email.templateId ?? null,
      payload: email.payload ?? null,
    }),
    timeoutMs: 10_000,
  });
  const accepted = await readJson<{ id?: unknown }>(await ensureOk(response));
  if (typeof accepted.id !== 'string') throw new FatalError('response body: missing field `id`');
  return accepted.id;
}

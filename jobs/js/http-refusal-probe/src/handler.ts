// Test probe for refused HTTP requests (the TypeScript twin of
// jobs/python/http-refusal-probe): it fetches `url` — through `ctx.fetch`
// or the global `fetch` the SDK wraps — and, with `read`, reads the body as
// text. It catches nothing: a request the host refuses or cuts off fails
// the job with the SDK's error (fatal, `HTTP request refused: <the host's
// reason>`), any other failure with the engine's or the SDK's retryable one.
//
// Data: {"url": string, "via"?: "ctx" | "global" (default "ctx"), "read"?: boolean,
// "body"?: string (then the request is a POST of that text)};
// the result is {"status": <HTTP status>, "bytes": <UTF-8 bytes of the body read; 0 without read>}.
import { handler, invalidData } from '@airlock/sdk';

interface Input {
  url: string;
  via: 'ctx' | 'global';
  read: boolean;
  body?: string;
}

interface Output {
  status: number;
  bytes: number;
}

function decode(data: unknown): Input {
  const input = (data ?? {}) as { url?: unknown; via?: unknown; read?: unknown; body?: unknown };
  if (typeof input.url !== 'string') throw invalidData('missing field `url` (a string)');
  const via = input.via ?? 'ctx';
  if (via !== 'ctx' && via !== 'global') throw invalidData('`via` is "ctx" or "global"', 'via');
  if (input.read !== undefined && typeof input.read !== 'boolean') throw invalidData('`read` is a boolean', 'read');
  if (input.body !== undefined && typeof input.body !== 'string') throw invalidData('`body` is a string', 'body');
  return { url: input.url, via, read: input.read === true, body: input.body };
}

export default handler<Input, Output>(async (input, ctx) => {
  const init = input.body === undefined ? undefined : { method: 'POST', body: input.body };
  const res = input.via === 'global' ? await fetch(input.url, init) : await ctx.fetch(input.url, init);
  const bytes = input.read ? new TextEncoder().encode(await res.text()).length : 0;
  return { status: res.status, bytes };
}, { decode });

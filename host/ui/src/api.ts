// The dashboard's only way in: the public /v1 API, with the token the user
// logged in with as a bearer header (never in a URL).
import { fetchEventSource, type EventSourceMessage } from '@microsoft/fetch-event-source';
import type {
  Me, HostList, Stats, QueueList, QueueView, QueueKeys, JobPage, SearchResult, JobDetails, Timeline,
  HandlerList, HandlerDetails, ScheduleList, SecretList, RecentEvents, Triggered, ListState,
  ActionResult, CancelAccepted, CancelBody, Cleaned, Retried, Transcripts, ReplayReport, Promotion, Rollback,
  AuditListing,
} from './types';

const TOKEN_KEY = 'airlock.token';

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

let token: string | null = storedToken();
let onUnauthorized: (message: string) => void = () => {};

export function setToken(value: string | null): void {
  token = value;
  if (value === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, value);
}

/** Called when the API no longer accepts the token (401). */
export function whenUnauthorized(handler: (message: string) => void): void {
  onUnauthorized = handler;
}

/** An error the API answered (`{"error": {code, message, field}}`) or a network failure. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string | null,
  ) {
    super(message);
  }
  get notFound(): boolean {
    return this.status === 404;
  }
}

async function errorFrom(response: Response): Promise<ApiError> {
  let code = `http_${response.status}`;
  let message = `${response.status} ${response.statusText}`;
  let field: string | null | undefined;
  try {
    const body = await response.json();
    if (body && body.error) {
      code = body.error.code ?? code;
      message = body.error.message ?? message;
      field = body.error.field;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message, field);
}

function headers(withBody: boolean, given?: string): Record<string, string> {
  const h: Record<string, string> = { accept: 'application/json' };
  const t = given ?? token;
  if (t) h.authorization = `Bearer ${t}`;
  if (withBody) h['content-type'] = 'application/json';
  return h;
}

async function request<T>(method: string, path: string, body?: unknown, given?: string): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers: headers(body !== undefined, given),
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, 'network', `the host did not answer (${(e as Error).message})`);
  }
  if (!response.ok) {
    const err = await errorFrom(response);
    if (response.status === 401 && given === undefined) onUnauthorized(err.message);
    throw err;
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

const enc = encodeURIComponent;

function query(params: Record<string, string | number | undefined | null>): string {
  const parts = Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${enc(k)}=${enc(String(v))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

/** Splits `queue:id` for the path: the queue part is safe, the id is encoded. */
function jobPath(ref: string): string {
  const i = ref.indexOf(':');
  return `/v1/jobs/${enc(ref.slice(0, i))}:${enc(ref.slice(i + 1))}`;
}

export const api = {
  /** Checks a token before it is kept (no 401 handler: it is not ours yet). */
  meWith: (t: string) => request<Me>('GET', '/v1/me', undefined, t),
  me: () => request<Me>('GET', '/v1/me'),
  hosts: () => request<HostList>('GET', '/v1/hosts'),
  audit: (filter: { who?: string; action?: string; target?: string }) =>
    request<AuditListing>('GET', `/v1/audit${query({ ...filter, limit: 200 })}`),
  drainHost: (id: string) => request<HostList>('POST', `/v1/hosts/${enc(id)}/drain`),
  resumeHost: (id: string) => request<HostList>('POST', `/v1/hosts/${enc(id)}/resume`),
  stats: (minutes: number, scope: { queue?: string; handler?: string } = {}) =>
    request<Stats>('GET', `/v1/stats${query({ minutes, queue: scope.queue, handler: scope.handler })}`),
  queues: () => request<QueueList>('GET', '/v1/queues'),
  queue: (q: string) => request<QueueView>('GET', `/v1/queues/${enc(q)}`),
  pauseQueue: (q: string) => request<QueueView>('POST', `/v1/queues/${enc(q)}/pause`),
  resumeQueue: (q: string) => request<QueueView>('POST', `/v1/queues/${enc(q)}/resume`),
  promoteQueue: (q: string) => request<Promotion>('POST', `/v1/queues/${enc(q)}/promote`, {}),
  rollbackQueue: (q: string) => request<Rollback>('POST', `/v1/queues/${enc(q)}/rollback`, {}),
  keys: (q: string) => request<QueueKeys>('GET', `/v1/queues/${enc(q)}/keys`),
  secrets: (q: string) => request<SecretList>('GET', `/v1/queues/${enc(q)}/secrets`),
  jobs: (q: string, state: ListState, start: number, limit: number, search?: string, failureKind?: string) =>
    request<JobPage>('GET', `/v1/queues/${enc(q)}/jobs${query({ state, start, limit, q: search, failureKind })}`),
  search: (text: string) => request<SearchResult>('GET', `/v1/jobs${query({ q: text })}`),
  retryFailed: (q: string, failureKind?: string) =>
    request<Retried>('POST', `/v1/queues/${enc(q)}/retry`, failureKind ? { failureKind } : {}),
  clean: (q: string, state: ListState) =>
    request<Cleaned>('POST', `/v1/queues/${enc(q)}/clean`, { confirm: q, state }),
  job: (ref: string) => request<JobDetails>('GET', jobPath(ref)),
  timeline: (ref: string) => request<Timeline>('GET', `${jobPath(ref)}/timeline`),
  transcript: (ref: string) => request<Transcripts>('GET', `${jobPath(ref)}/transcript`),
  replay: (ref: string, digest: string) => request<ReplayReport>('POST', `${jobPath(ref)}/replay`, { digest }),
  retry: (ref: string) => request<ActionResult>('POST', `${jobPath(ref)}/retry`),
  promote: (ref: string) => request<ActionResult>('POST', `${jobPath(ref)}/promote`),
  cancel: (ref: string, reason: string) => {
    const body: CancelBody = reason.trim() ? { reason: reason.trim() } : {};
    return request<CancelAccepted>('POST', `${jobPath(ref)}/cancel`, body);
  },
  remove: (ref: string) => request<void>('DELETE', jobPath(ref)),
  handlers: () => request<HandlerList>('GET', '/v1/handlers'),
  handler: (name: string) => request<HandlerDetails>('GET', `/v1/handlers/${enc(name)}`),
  schedules: (q: string) => request<ScheduleList>('GET', `/v1/queues/${enc(q)}/schedules`),
  trigger: (q: string, id: string) =>
    request<Triggered>('POST', `/v1/queues/${enc(q)}/schedules/${enc(id)}/trigger`),
  events: (limit: number) => request<RecentEvents>('GET', `/v1/events${query({ limit })}`),
};

class Fatal extends Error {}

/**
 * Follows a job's Server-Sent Events (`GET /v1/jobs/{ref}/events`): a `state`
 * event first (the job now), then BullMQ's events for it, ending after
 * `completed` or `failed`. Reconnects (with Last-Event-ID) while `keepOpen()`
 * says the job has not finished; stops on `signal`.
 */
export function followJob(
  ref: string,
  signal: AbortSignal,
  onEvent: (event: EventSourceMessage) => void,
  keepOpen: () => boolean,
  onFatal: (err: ApiError) => void,
): void {
  fetchEventSource(`${jobPath(ref)}/events`, {
    signal,
    headers: headers(false),
    openWhenHidden: true,
    credentials: 'omit',
    async onopen(response) {
      if (response.ok && (response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return;
      const err = await errorFrom(response);
      if (response.status === 401) onUnauthorized(err.message);
      if (response.status >= 400 && response.status < 500) throw new Fatal(err.message, { cause: err });
      throw err;
    },
    onmessage: onEvent,
    onclose() {
      if (keepOpen()) throw new Error('stream ended early');
    },
    onerror(err) {
      if (err instanceof Fatal) throw err;
      return 2000;
    },
  }).catch((err) => {
    if (err instanceof Fatal && err.cause instanceof ApiError) onFatal(err.cause);
  });
}

// The browser side of Airlock: follow one job live with a read token.
//
// A web app's backend asks the API for a read token for the job it just
// enqueued (`POST /v1/jobs/{ref}/read-token`, with its own token) and
// hands it to the page; the page calls `subscribe`, which opens the job's
// event stream (`GET /v1/jobs/{ref}/events?token=…`) with the browser's
// `EventSource`. The API answers it cross-origin only for the origins the
// operator allowed (`airlock serve --cors-origin`). No dependencies: the
// file is served to browsers as it is.

/** The job stream's event names (`state` first, then BullMQ's and `log`). */
export const JOB_EVENTS = Object.freeze([
  'state',
  'waiting',
  'active',
  'progress',
  'log',
  'delayed',
  'waiting-children',
  'stalled',
  'retries-exhausted',
  'removed',
  'completed',
  'failed',
]);

const TERMINAL = new Set(['completed', 'failed']);

/**
 * Follows job `jobRef` (`<queue>:<id>`) with read token `token`: calls
 * `onEvent({type, data, id})` for each of its events (`data` parsed from
 * JSON), and `options.onClose(reason)` once when it stops following:
 * `'finished'` after `completed` or `failed`, `'refused'` when the API
 * refuses the stream (the token expired, or is another job's),
 * `'unsubscribed'` when the returned function is called.
 * `options.baseUrl` is the API's (default: the page's own origin).
 */
export function subscribe(jobRef, token, onEvent, options = {}) {
  const base = (options.baseUrl ?? '').replace(/\/+$/, '');
  const url = `${base}/v1/jobs/${encodeURIComponent(jobRef)}/events?token=${encodeURIComponent(token)}`;
  const Source = options.EventSource ?? globalThis.EventSource;
  const source = new Source(url);
  let open = true;
  const stop = (reason) => {
    if (!open) return;
    open = false;
    source.close();
    options.onClose?.(reason);
  };
  for (const type of JOB_EVENTS) {
    source.addEventListener(type, (message) => {
      if (!open) return;
      let data = message.data;
      try {
        data = JSON.parse(message.data);
      } catch {
        // Not JSON: passed on as the text it is.
      }
      onEvent({ type, data, id: message.lastEventId || undefined });
      if (TERMINAL.has(type)) stop('finished');
    });
  }
  // An EventSource reconnects by itself after a dropped connection; it
  // gives up (CLOSED) only when the API answers with an error status.
  source.addEventListener('error', () => {
    if (source.readyState === 2) stop('refused');
  });
  return () => stop('unsubscribed');
}

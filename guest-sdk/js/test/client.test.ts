import assert from 'node:assert/strict';
import { subscribe, type CloseReason, type JobEvent } from '../lib/client.mjs';
import { test } from './harness';

/** An EventSource that the test drives: `emit` delivers an event. */
class FakeSource {
  static last: FakeSource;
  readonly url: string;
  readyState = 1;
  closed = false;
  private listeners = new Map<string, ((event: { data: string; lastEventId: string }) => void)[]>();
  constructor(url: string) {
    this.url = url;
    FakeSource.last = this;
  }
  addEventListener(type: string, listener: (event: { data: string; lastEventId: string }) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  close(): void {
    this.closed = true;
    this.readyState = 2;
  }
  emit(type: string, data: string, lastEventId = ''): void {
    for (const listener of this.listeners.get(type) ?? []) listener({ data, lastEventId });
  }
}

function follow(ref = 'payments:42') {
  const events: JobEvent[] = [];
  const closes: CloseReason[] = [];
  const stop = subscribe(ref, 'jrt_1_ab', (e) => events.push(e), {
    baseUrl: 'http://127.0.0.1:8080/',
    EventSource: FakeSource,
    onClose: (reason) => closes.push(reason),
  });
  return { events, closes, stop, source: FakeSource.last };
}

test('subscribe opens the job stream with the token and passes its events on until the end', () => {
  const { events, closes, source } = follow();
  assert.equal(source.url, 'http://127.0.0.1:8080/v1/jobs/payments%3A42/events?token=jrt_1_ab');
  source.emit('state', '{"state":"waiting"}');
  source.emit('progress', '{"jobId":"42","data":50}', '1-0');
  source.emit('log', '{"index":0,"line":"charging"}');
  source.emit('completed', '{"jobId":"42","returnvalue":"ok"}', '2-0');
  source.emit('progress', '{"jobId":"42","data":99}', '3-0');
  assert.deepEqual(
    events.map((e) => [e.type, e.id]),
    [
      ['state', undefined],
      ['progress', '1-0'],
      ['log', undefined],
      ['completed', '2-0'],
    ],
  );
  assert.deepEqual(events[2].data, { index: 0, line: 'charging' });
  assert.ok(source.closed, 'closed after the end');
  assert.deepEqual(closes, ['finished']);
});

test('a refused stream closes once; unsubscribing closes it', () => {
  const refused = follow();
  // A dropped connection: the EventSource reconnects by itself.
  refused.source.readyState = 0;
  refused.source.emit('error', '');
  assert.deepEqual(refused.closes, []);
  // An error status (the token expired): it gives up.
  refused.source.readyState = 2;
  refused.source.emit('error', '');
  refused.source.emit('error', '');
  assert.deepEqual(refused.closes, ['refused']);

  const left = follow('q:a b');
  assert.ok(left.source.url.includes('/v1/jobs/q%3Aa%20b/events'));
  left.stop();
  left.stop();
  assert.ok(left.source.closed);
  assert.deepEqual(left.closes, ['unsubscribed']);
  left.source.emit('state', 'not json');
  assert.deepEqual(left.events, []);
});

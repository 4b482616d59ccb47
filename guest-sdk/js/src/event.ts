// Event-triggered jobs: a queue subscribed to events (`POST /v1/events`)
// gets jobs whose data is the event, `{name, data, id, ts}`; a durable wait
// (`ctx.step.waitForEvent`) receives one in the same form.

/** The data of a job delivered for an Airlock event. */
export interface AirlockEvent<T = unknown> {
  /** The event name, e.g. `user.signed_up`. */
  name: string;
  /** The event's payload. */
  data: T;
  /** The event id. */
  id: string;
  /** When it was sent, in milliseconds since the Unix epoch. */
  ts: number;
}

/** Whether `value` is an Airlock event (`name` and `id` strings, `ts` a non-negative integer, a `data` key). */
export function isEvent(value: unknown): value is AirlockEvent {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.name === 'string' &&
    typeof v.id === 'string' &&
    typeof v.ts === 'number' &&
    Number.isInteger(v.ts) &&
    v.ts >= 0 &&
    'data' in v
  );
}

/**
 * The event's `data` when `value` is an Airlock event, else `value` itself:
 * lets one handler serve direct jobs and event subscriptions alike (the
 * Rust SDK's `event_payload`).
 */
export function eventPayload<T = unknown>(value: unknown): T {
  return (isEvent(value) ? value.data : value) as T;
}

/**
 * An event a durable wait (`ctx.step.waitForEvent`) received: what `POST /v1/events`
 * was sent, in the same form an event-triggered job's data has (the Rust
 * SDK's `Event`).
 */
export type Event<T = unknown> = AirlockEvent<T>;

/** The event a wait received, from the host's JSON text; throws a message on anything else. */
export function parseEvent<T = unknown>(text: string): Event<T> {
  const value: unknown = JSON.parse(text);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('expected an object');
  const v = value as Record<string, unknown>;
  if (typeof v.name !== 'string') throw new Error('expected a string at `name`');
  if (typeof v.id !== 'string') throw new Error('expected a string at `id`');
  if (typeof v.ts !== 'number' || !Number.isInteger(v.ts) || v.ts < 0) {
    throw new Error('expected a non-negative integer at `ts`');
  }
  // `data` may be absent: it is then `null`, as in the Rust SDK.
  return { name: v.name, data: (v.data ?? null) as T, id: v.id, ts: v.ts };
}

// Event-triggered jobs: a queue subscribed to events (`POST /v1/events`)
// gets jobs whose data is the event, `{name, data, id, ts}`.

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

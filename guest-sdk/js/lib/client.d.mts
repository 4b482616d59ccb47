/** One event of a job's stream. */
export interface JobEvent {
  /** `state` (the job as it is when the stream opens), `progress`, `log` (`{index, line}`), `completed`, `failed`, … */
  type: string;
  /** The event's data, parsed from JSON. */
  data: unknown;
  /** The stream entry's id (BullMQ's events; not `state` and `log`). */
  id?: string;
}
/** Why `subscribe` stopped following. */
export type CloseReason = 'finished' | 'refused' | 'unsubscribed';
/** What `subscribe` takes beside the job, the token and the callback. */
export interface SubscribeOptions {
  /** The API's base URL (default: the page's own origin). */
  baseUrl?: string;
  /** Called once when following stops. */
  onClose?: (reason: CloseReason) => void;
  /** The EventSource class (default: the browser's). */
  EventSource?: new (url: string) => {
    addEventListener(type: string, listener: (event: { data: string; lastEventId: string }) => void): void;
    close(): void;
    readonly readyState: number;
  };
}
/** The job stream's event names. */
export declare const JOB_EVENTS: readonly string[];
/**
 * Follows one job with a read token (`POST /v1/jobs/{ref}/read-token`);
 * returns a function that stops following.
 */
export declare function subscribe(
  jobRef: string,
  token: string,
  onEvent: (event: JobEvent) => void,
  options?: SubscribeOptions,
): () => void;

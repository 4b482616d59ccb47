// Shapes of the /v1 API (from /openapi.json). Optional where the server may
// leave a field out or where a newer host adds it.

export type Role = 'admin' | 'producer' | 'reader' | 'cron';
export interface Me { name: string; role: Role }

export interface HostInfo {
  id: string;
  address?: string | null;
  version: string;
  queues: string[];
  running: number;
  capacity: number;
  startedAt: number;
  heartbeatAt: number;
  state: 'running' | 'draining' | 'drained';
  generation?: number | null;
  /** The memory limits of the guests it may run at once add up to at most this. */
  memoryBudgetBytes?: number | null;
  /** The part of the budget its running guests hold (their memory limits). */
  memoryHeldBytes?: number | null;
}
export interface HostList { hosts: HostInfo[] }

export interface MinuteStats { at: number; runs: Record<string, number> }
export interface Stats { minutes: MinuteStats[] }

export interface Limits {
  fuel?: number | null;
  memoryBytes: number;
  timeoutMs: number;
  maxOutputBytes: number;
  maxLogBytes: number;
  maxLogLines: number;
  maxSteps: number;
  maxStepBytes: number;
  maxHttpRequests: number;
  maxHttpRequestBytes: number;
  maxHttpResponseBytes: number;
  httpTimeoutMs: number;
}
export interface KeyConcurrency { key: string; limit: number }
export interface KeyRate { key: string; limit: number; periodMs: number; burst?: number | null }
export interface Singleton { key: string; mode: 'skip' | 'cancel' }
export interface Debounce { key: string; periodMs: number; maxWaitMs?: number | null }
export interface CancelOn { event: string; match: string; eventMatch?: string | null }
export type EgressRule = string | { url: string; methods?: string[] | null; pathPrefix?: string | null };
export type Retention = boolean | number | { age?: number | null; count?: number | null };
export interface DefaultJobOptions {
  delay?: number | null;
  priority?: number | null;
  lifo?: boolean | null;
  attempts?: number | null;
  backoff?: { type: 'fixed' | 'exponential'; delay: number } | null;
  removeOnComplete?: Retention | null;
  removeOnFail?: Retention | null;
}
export interface Binding {
  queue: string;
  handler: string;
  limits: Limits;
  concurrency: number;
  defaultJobOptions: DefaultJobOptions;
  events?: string[];
  globalConcurrency?: number | null;
  rateLimit?: { max: number; durationMs: number } | null;
  config?: Record<string, string>;
  egress?: EgressRule[];
  finishTimeoutMs?: number | null;
  cancelOn?: CancelOn[];
  keyConcurrency?: KeyConcurrency | null;
  keyThrottle?: KeyRate | null;
  keyRateLimit?: KeyRate | null;
  debounce?: Debounce | null;
  singleton?: Singleton | null;
}
export interface QueueCounts {
  waiting: number;
  active: number;
  delayed: number;
  prioritized: number;
  waitingChildren: number;
  completed: number;
  failed: number;
  paused: boolean;
}
export interface QueueView extends Binding { counts: QueueCounts }
export interface QueueList { queues: QueueView[] }
export interface KeyJobs { value: unknown; running: number; queued: number }
export interface QueueKeys { key: string; limit: number; keys: KeyJobs[]; scanned: number }

export interface SecretView {
  name: string;
  allow: string[];
  reveal: boolean;
  inBody: boolean;
  updatedAtMs: number;
  readable: boolean;
}
export interface SecretList { secrets: SecretView[] }

export type JobState =
  | 'waiting' | 'prioritized' | 'delayed' | 'waiting-children' | 'active' | 'completed' | 'failed' | 'unknown';
export type ListState = Exclude<JobState, 'unknown'>;
export const LIST_STATES: ListState[] = [
  'waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed',
];

export interface RunMetrics {
  fuelUsed?: number | null;
  peakMemoryBytes?: number | null;
  wallTimeMs?: number | null;
  httpRequests?: number | null;
  httpRefused?: number | null;
  httpBytesOut?: number | null;
  httpBytesIn?: number | null;
}
export interface JobSnapshot {
  id: string;
  queue: string;
  name: string;
  state: JobState;
  data: unknown;
  opts: Record<string, unknown> | null;
  progress: unknown;
  returnvalue?: unknown;
  failedReason?: string | null;
  failureKind?: string | null;
  attemptsMade: number;
  attemptsStarted: number;
  stalledCount: number;
  timestamp: number;
  processedOn?: number | null;
  finishedOn?: number | null;
  delay: number;
  priority: number;
  handlerDigest?: string | null;
  processedByHost?: string | null;
  producer?: string | null;
  worker?: string | null;
  metrics: RunMetrics;
  steps: string[];
  parentKey?: string | null;
}
export type WaitKind =
  | 'key_limit' | 'throttled' | 'sleeping' | 'event' | 'token' | 'delayed' | 'children' | 'paused' | 'no_host'
  | 'capacity_full' | 'ready';
export interface WaitReason {
  kind: WaitKind;
  message: string;
  until?: number | null;
  key?: unknown;
  running?: number | null;
  limit?: number | null;
  ahead?: number | null;
}
export interface JobDetails extends JobSnapshot {
  logs: string[];
  logCount: number;
  waiting?: WaitReason | null;
}
export interface JobPage { jobs: JobSnapshot[]; next?: number | null }

export interface RunEntry {
  run: number;
  startedAt: number;
  wallTimeMs: number;
  fuelUsed?: number | null;
  peakMemoryBytes: number;
  httpRequests: number;
  httpRefused: number;
  httpBytesOut: number;
  httpBytesIn: number;
  host: string;
  end: string;
}
export interface StepEntry { id: string; result: unknown; at?: number | null }
export interface SleepEntry { id: string; until: number }
export interface WaitEntry { id: string; waitsFor: string; deadline: number; outcome: string; value?: unknown }
export interface ChildEntry { ref: string; state: string; outcome?: string | null }
export interface Timeline {
  runs: RunEntry[];
  steps: StepEntry[];
  sleeps: SleepEntry[];
  waits: WaitEntry[];
  children: ChildEntry[];
}

export interface HandlerSummary {
  name: string;
  digest: string;
  version?: string | null;
  size: number;
  uploadedAt: number;
  versions: number;
}
export interface HandlerList { handlers: HandlerSummary[] }
export interface HandlerVersion { digest: string; version?: string | null; size: number; uploadedAt: number }
export interface ComponentInfo {
  digest: string;
  size: number;
  imports: string[];
  exports: string[];
  /** What the component's `producers` sections say built it (its own claim). */
  builtWith?: string[];
}
export interface HandlerDetails {
  name: string;
  current: HandlerVersion;
  versions: HandlerVersion[];
  component: ComponentInfo;
}

export interface ScheduleView {
  id: string;
  queue: string;
  name: string;
  pattern?: string | null;
  every?: number | null;
  tz?: string | null;
  nextRunAt?: number | null;
  iterations: number;
  limit?: number | null;
  data: unknown;
}
export interface ScheduleList { schedules: ScheduleView[] }
export interface Triggered { ref: string; coalesced: boolean }

export interface RecentEvent {
  id: string;
  name: string;
  ts: number;
  producer?: string | null;
  data: unknown;
  jobs: string[];
}
export interface RecentEvents { events: RecentEvent[] }

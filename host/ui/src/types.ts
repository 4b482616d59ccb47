// Shapes of the /v1 API: the types generated from the host's OpenAPI document
// (src/api-types.ts, from openapi.json by `npm run types`), under the names
// the views import. Change the API, not these: see host/ui/README.md.
import type { components } from './api-types';

type Schemas = components['schemas'];

export type Me = Schemas['Me'];
export type AuditListing = Schemas['AuditListing'];
export type AuditEntry = Schemas['ListedEntry'];

export type HostState = Schemas['HostState'];
export type HostInfo = Schemas['HostInfo'];
export type HostList = Schemas['HostList'];

export type MinuteStats = Schemas['MinuteStats'];
export type Stats = Schemas['Stats'];
export type Percentiles = Schemas['Percentiles'];

export type Limits = Schemas['Limits'];
export type KeyConcurrency = Schemas['KeyConcurrency'];
export type KeyRate = Schemas['KeyRate'];
export type Singleton = Schemas['Singleton'];
export type Debounce = Schemas['Debounce'];
export type CancelOn = Schemas['CancelOn'];
export type EgressRule = Schemas['EgressRuleDoc'];
export type Retention = Schemas['Retention'];
export type DefaultJobOptions = Schemas['DefaultJobOptions'];
export type Binding = Schemas['Binding'];
export type QueueCounts = Schemas['QueueCounts'];
export type QueueView = Schemas['QueueView'];
export type Promotion = Schemas['Promotion'];
export type Rollback = Schemas['Rollback'];
export type VersionStats = Schemas['VersionStats'];
export type QueueList = Schemas['QueueList'];
export type KeyJobs = Schemas['KeyJobs'];
export type QueueKeys = Schemas['QueueKeys'];

export type SecretView = Schemas['SecretView'];
export type SecretList = Schemas['SecretList'];

export type JobState = Schemas['JobState'];
export type ListState = Schemas['ListState'];
/** The order the views offer the list states in (a UI choice: the document's enum has its own). */
export const LIST_STATES: ListState[] = [
  'waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed',
];

export type RunMetrics = Schemas['RunMetrics'];
export type JobSnapshot = Schemas['JobSnapshot'];
export type WaitKind = Schemas['WaitKind'];
export type WaitReason = Schemas['WaitReason'];
export type JobDetails = Schemas['JobDetails'];
export type JobPage = Schemas['JobPage'];
export type SearchResult = Schemas['SearchResult'];
export type ActionResult = Schemas['ActionResult'];
export type Retried = Schemas['Retried'];
export type Cleaned = Schemas['Cleaned'];
/** The failure kinds (the host's closed vocabulary, `FailureKind::ALL`), for filters. */
export const FAILURE_KINDS = [
  'fuel_exhausted', 'memory_limit', 'timeout', 'stack_overflow', 'memory_fault', 'trap', 'guest_retry',
  'guest_fatal', 'invalid_output', 'output_too_large', 'instantiation', 'capacity', 'host_unavailable',
  'cancelled', 'timed_out', 'rate_limited', 'skipped',
] as const;
export type CancelBody = Schemas['CancelBody'];
export type CancelAccepted = Schemas['CancelAccepted'];

export type RunEntry = Schemas['RunEntry'];
export type StepEntry = Schemas['StepEntry'];
export type SleepEntry = Schemas['SleepEntry'];
export type WaitEntry = Schemas['WaitEntry'];
export type ChildEntry = Schemas['ChildEntry'];
export type Timeline = Schemas['Timeline'];
export type Transcripts = Schemas['Transcripts'];
export type RunTranscript = Schemas['RunTranscript'];
export type TranscriptCall = Schemas['Call'];
export type ReplayReport = Schemas['Report'];

export type HandlerSummary = Schemas['HandlerSummary'];
export type HandlerList = Schemas['HandlerList'];
export type HandlerVersion = Schemas['HandlerVersion'];
export type ComponentInfo = Schemas['ComponentInfo'];
export type HandlerDetails = Schemas['HandlerDetails'];

export type ScheduleView = Schemas['ScheduleView'];
export type ScheduleList = Schemas['ScheduleList'];
export type Triggered = Schemas['Triggered'];

export type RecentEvent = Schemas['RecentEvent'];
export type RecentEventJobs = Schemas['RecentEventJobs'];
export type RecentEvents = Schemas['RecentEvents'];

/**
 * The attempts a job's options allow, when they say: the document gives
 * `JobSnapshot.opts` as any JSON (BullMQ's options as stored).
 */
export function attemptsAllowed(job: JobSnapshot): number | null {
  const opts = job.opts;
  if (typeof opts !== 'object' || opts === null || !('attempts' in opts)) return null;
  return typeof opts.attempts === 'number' ? opts.attempts : null;
}

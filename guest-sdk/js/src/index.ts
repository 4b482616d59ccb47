// @airlock/sdk — write Airlock job handlers in TypeScript/JavaScript.
//
//   import { handler, FatalError } from '@airlock/sdk';
//   export default handler<Order, Receipt>(async (order, ctx) => { ... });
//
// Build with `airlock-build src/handler.ts -o handler.wasm`; a batch handler
// (`export default batchHandler<Row, Saved>(async (jobs, ctx) => ...)`) with
// `airlock-build src/handler.ts -o handler.wasm --batch`.

export { handler, isHandler, encodeOutput, decodeInput } from './handler';
export type { Handler, HandlerFn, HandlerOptions } from './handler';
export { batchHandler, isBatchHandler } from './batch';
export type { BatchHandler, BatchHandlerFn, BatchJob, BatchOutcome } from './batch';
export { Context } from './context';
export type {
  ChildResult,
  Config,
  EventMatch,
  FetchInit,
  Json,
  Jsonified,
  JobRef,
  Kv,
  KvSetOptions,
  Logger,
  Steps,
  WaitForEventOptions,
  WaitForTokenOptions,
} from './context';
export type { JobInfo, Engine, LogLevel } from './host';
export { ENGINE } from './host';
export {
  FatalError,
  UnrecoverableError,
  RetryableError,
  HostError,
  invalidData,
  toJobError,
} from './errors';
export type { HostErrorKind, JobErrorVariant } from './errors';
export { parseDuration } from './duration';
export type { Duration } from './duration';
export { eventPayload, isEvent } from './event';
export type { AirlockEvent, Event } from './event';
export { ensureOk, readJson, isRetryableStatus, parseRetryAfter, retryAfterFrom, DEFAULT_RETRY_AFTER_MS } from './http';
export type { EnsureOkOptions, HttpStatusFailure } from './http';
export { InvokeError, RetryAfterError, MAX_LATER_MS } from './work';
export type { ChildEnd, ChildFailure, InvokeManyOptions, InvokeOptions, NewJob, NewJobOptions } from './work';
export type { HttpRefusal, HttpRefusalError, HttpRefusalFailure, HttpRefusalKind } from './fetch';

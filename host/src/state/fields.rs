//! The `airlock.*` fields Airlock keeps in a BullMQ job hash (see
//! [`super::meta`] for who writes each).

/// sha256 of the handler the job runs; retries, resumptions and
/// recoveries run the same code so durable steps replay against it.
pub const DIGEST: &str = "airlock.digest";
/// Per-job limits (JSON `LimitsOverride`).
pub const LIMITS: &str = "airlock.limits";
/// The trace a job's runs continue: JSON of W3C `traceparent` and
/// `tracestate`, as BullMQ's telemetry writes its `tm` option
/// (`crate::traces`). Untrusted like everything in the hash.
pub const TRACE: &str = "airlock.trace";
/// The last run's measurements, packed (`state::runs::LastRun`): wall
/// time, peak memory, fuel and, for a run that tried a request, its HTTP
/// counts.
pub const LAST_RUN: &str = "airlock.lastRun";

/// The fields hosts before [`LAST_RUN`] wrote the last run's measurements
/// in, one each; read from jobs they measured.
pub mod legacy {
    /// Fuel used by the last run.
    pub const FUEL: &str = "airlock.fuelUsed";
    /// Peak memory of the last run, bytes.
    pub const MEMORY: &str = "airlock.peakMemoryBytes";
    /// Wall time of the last run, ms.
    pub const WALL_MS: &str = "airlock.wallTimeMs";
    /// HTTP requests the last run sent (written only by runs that made or
    /// tried one).
    pub const HTTP_REQUESTS: &str = "airlock.httpRequests";
    /// HTTP requests of the last run refused before sending.
    pub const HTTP_REFUSED: &str = "airlock.httpRefused";
    /// Request body bytes the last run sent.
    pub const HTTP_BYTES_OUT: &str = "airlock.httpBytesOut";
    /// Response body bytes the last run read.
    pub const HTTP_BYTES_IN: &str = "airlock.httpBytesIn";
}
/// Name of the API token that enqueued the job (producers read only
/// their own jobs).
pub const PRODUCER: &str = "airlock.producer";
/// Airlock's seal on the producer (`SecretsKey::producer_seal`): what
/// lets a host share a warm instance between one producer's jobs.
pub const PRODUCER_SEAL: &str = "airlock.producerSeal";
/// Prefix of a durable step record: `airlock.step:<step id>`.
pub const STEP_PREFIX: &str = "airlock.step:";
/// Prefix of a durable sleep record: `airlock.sleep:<sleep id>` (wake-up ms).
pub const SLEEP_PREFIX: &str = "airlock.sleep:";
/// Prefix of a durable wait record: `airlock.wait:<wait id>` (JSON
/// `state::waits::WaitRecord`).
pub const WAIT_PREFIX: &str = "airlock.wait:";
/// Prefix of a durable wait's outcome: `airlock.waited:<wait id>` (JSON
/// `{"came": value}` or `{"timedOut": true}`).
pub const WAITED_PREFIX: &str = "airlock.waited:";
/// Prefix of a wait's completion token: `airlock.token:<wait id>`.
pub const TOKEN_PREFIX: &str = "airlock.token:";
/// Prefix of one run's measurements: `airlock.run:<n>` (JSON
/// `RunEntry`), the job's run history.
pub const RUN_PREFIX: &str = "airlock.run:";
/// Prefix of one run's transcript: `airlock.transcript:<n>` (JSON
/// `sandbox::transcript::Transcript`), for bindings that record them.
pub const TRANSCRIPT_PREFIX: &str = "airlock.transcript:";
/// Prefix of when a durable step was recorded: `airlock.stepAt:<id>`
/// (ms since the epoch).
pub const STEP_AT_PREFIX: &str = "airlock.stepAt:";

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
/// The batch of the job's latest run in a batch (a queue bound with
/// `batch`): `<batch id> <jobs in it>`. After such a run, `airlock.lastRun`
/// holds the job's share of the batch's measurements (`state::runs`).
pub const BATCH: &str = "airlock.batch";

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
/// An invoke of the job (`context.invoke`), by its step id: JSON
/// `{"deadline": ms|null, "timedOut": [indexes]}`, the deadline written by
/// the run that first reaches it, the children that timed out for it
/// written once, past the deadline (`worker::starts`).
pub const INVOKE_PREFIX: &str = "airlock.invoke:";
/// How many times the job asked to run again later
/// (`context.retry-after`), counted before each park.
pub const RETRY_AFTERS: &str = "airlock.retryAfters";
/// Set once the job's failure for good was announced through its
/// binding's `onFailure` (`worker::on_failure`).
pub const FAILURE_ANNOUNCED: &str = "airlock.failureAnnounced";
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field above, and every prefix.
    const FIELDS: [&str; 13] = [
        DIGEST,
        LIMITS,
        TRACE,
        LAST_RUN,
        legacy::FUEL,
        legacy::MEMORY,
        legacy::WALL_MS,
        legacy::HTTP_REQUESTS,
        legacy::HTTP_REFUSED,
        legacy::HTTP_BYTES_OUT,
        legacy::HTTP_BYTES_IN,
        PRODUCER,
        PRODUCER_SEAL,
    ];
    const PREFIXES: [&str; 8] = [
        STEP_PREFIX,
        SLEEP_PREFIX,
        WAIT_PREFIX,
        WAITED_PREFIX,
        TOKEN_PREFIX,
        RUN_PREFIX,
        TRANSCRIPT_PREFIX,
        STEP_AT_PREFIX,
    ];

    /// The files under `host/src` whose name ends with `extension`, by
    /// path and text.
    fn sources(extension: &str) -> Vec<(String, String)> {
        fn walk(dir: &std::path::Path, extension: &str, found: &mut Vec<(String, String)>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, extension, found);
                } else if path.extension().is_some_and(|e| e == extension) {
                    let text = std::fs::read_to_string(&path).unwrap();
                    found.push((path.display().to_string(), text));
                }
            }
        }
        let mut found = Vec::new();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        walk(&root, extension, &mut found);
        found
    }

    /// The Lua scripts (`state/lua/`, `queue/lua/`), by path and text.
    fn scripts() -> Vec<(String, String)> {
        sources("lua")
    }

    /// A script spells the fields it touches as text: each `airlock.*`
    /// name in one must be a field named here, so a renamed field cannot
    /// leave a script writing the old name.
    #[test]
    fn the_scripts_spell_only_fields_named_here() {
        let scripts = scripts();
        assert!(scripts.len() >= 20, "found only {} scripts", scripts.len());
        let mut unknown = Vec::new();
        for (path, text) in &scripts {
            for quoted in text.split(['\'', '"']).skip(1).step_by(2) {
                let known =
                    FIELDS.contains(&quoted) || PREFIXES.iter().any(|p| quoted.starts_with(p));
                if quoted.starts_with("airlock.") && !known {
                    unknown.push(format!("{path}: '{quoted}'"));
                }
            }
        }
        assert!(
            unknown.is_empty(),
            "fields not in state/fields.rs: {unknown:?}"
        );
    }

    /// And every script is one the host loads (`include_str!` of its
    /// file, from any source file).
    #[test]
    fn every_script_is_loaded() {
        let rust = sources("rs");
        for (path, _) in scripts() {
            let name = std::path::Path::new(&path)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            let loaded = format!("lua/{name}\")");
            assert!(
                rust.iter().any(|(_, text)| text.contains(&loaded)),
                "{path} is loaded by no script"
            );
        }
    }
}

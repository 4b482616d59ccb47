//! A run's history entry (`airlock.run:<n>`, [`RunEntry`]): its shape, the
//! bound on the failure reason it keeps, and the entry of a completed first
//! run, read back from the fields the job hash holds anyway (see the module
//! docs of [`super`]).

use std::collections::HashMap;

use super::{LastRun, RunEnd};
use crate::state::fields;

/// One run of a job as its history keeps it (`airlock.run:<n>`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEntry {
    /// Which run (1 for the first; retries, wake-ups and recoveries count).
    pub run: u32,
    /// The attempt it belonged to: 1 for the first, one more after each
    /// failure that was retried (a wake-up after a durable sleep and a
    /// recovery after a crash are runs of the same attempt). Absent in
    /// entries older hosts wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// When it started, ms since the epoch.
    pub started_at: u64,
    /// Its wall time, ms.
    pub wall_time_ms: f64,
    /// Fuel it used, when metered.
    pub fuel_used: Option<u64>,
    /// Its peak linear memory, bytes.
    pub peak_memory_bytes: u64,
    /// HTTP requests it sent.
    pub http_requests: u64,
    /// HTTP requests refused before sending.
    pub http_refused: u64,
    /// Request body bytes sent.
    pub http_bytes_out: u64,
    /// Response body bytes read.
    pub http_bytes_in: u64,
    /// The host that ran it.
    pub host: String,
    /// How it ended: `completed`, a failure kind, `slept` or `waited`.
    pub end: String,
    /// Why a failed run failed (the message of its failure; the kind is
    /// `end`), cut to 1,000 characters (`MAX_RUN_REASON`): a job that completed
    /// on a later attempt keeps each earlier attempt's reason here, where
    /// BullMQ's `failedReason` holds only the last one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1000)]
    pub reason: Option<String>,
    /// The id of the durable sleep or wait a run that `slept` or `waited`
    /// parked on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked_on: Option<String>,
}

/// Most characters of a run's failure reason kept in its history entry
/// (and returned from one: entries are read from Redis, so any length can
/// be found there).
pub const MAX_RUN_REASON: usize = 1000;

/// `reason` cut to [`MAX_RUN_REASON`] characters, the last of them `…`
/// when it was longer.
pub fn bounded_reason(reason: &str) -> String {
    if reason.chars().count() <= MAX_RUN_REASON {
        return reason.to_string();
    }
    let cut = reason
        .char_indices()
        .nth(MAX_RUN_REASON - 1)
        .map_or(reason.len(), |(at, _)| at);
    format!("{}…", &reason[..cut])
}

/// The history entry of a job's first run when that run completed the job:
/// the recorder writes no `airlock.run:1` for it (see the module docs of
/// `state::runs`), so it is read back from the job's last-run measurements
/// and BullMQ's own fields — `processedOn` (when the run was taken), `pb`
/// (the host). Only for a job BullMQ finished as completed after exactly
/// one run (`ats` 1) that has no `airlock.run:1` and whose measurements
/// were recorded.
pub fn completed_first_run(fields: &HashMap<String, String>) -> Option<RunEntry> {
    let get = |name: &str| fields.get(name).map(String::as_str);
    if fields.contains_key(&format!("{}1", fields::RUN_PREFIX))
        || get("ats") != Some("1")
        || !fields.contains_key("returnvalue")
        || !fields.contains_key("finishedOn")
    {
        return None;
    }
    let last = LastRun::of(fields)?;
    let http = last.http.unwrap_or_default();
    Some(RunEntry {
        run: 1,
        attempt: Some(1),
        started_at: get("processedOn")?.parse().ok()?,
        wall_time_ms: last.wall_time_ms,
        fuel_used: last.fuel_used,
        peak_memory_bytes: last.peak_memory_bytes,
        http_requests: http.requests,
        http_refused: http.refused,
        http_bytes_out: http.bytes_out,
        http_bytes_in: http.bytes_in,
        host: get("pb").unwrap_or_default().to_string(),
        end: RunEnd::Completed.as_str().to_string(),
        reason: None,
        parked_on: None,
    })
}

#[cfg(test)]
mod tests {
    use super::{MAX_RUN_REASON, bounded_reason};

    #[test]
    fn a_reason_is_kept_whole_up_to_its_bound_and_cut_past_it() {
        let exact = "é".repeat(MAX_RUN_REASON);
        assert_eq!(bounded_reason(&exact), exact);
        let cut = bounded_reason(&"é".repeat(MAX_RUN_REASON + 5));
        assert_eq!(cut.chars().count(), MAX_RUN_REASON);
        assert!(cut.ends_with("é…"), "{cut}");
        assert_eq!(bounded_reason("boom"), "boom");
    }
}

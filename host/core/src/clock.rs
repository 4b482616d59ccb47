//! Wall-clock time as Airlock stores it everywhere: whole milliseconds since
//! the Unix epoch (BullMQ's timestamps, wake-up times, heartbeats).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch; 0 for a clock set before 1970.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

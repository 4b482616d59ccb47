//! Wall-clock time as Airlock stores it everywhere: whole milliseconds since
//! the Unix epoch (BullMQ's timestamps, wake-up times, leases, heartbeats).
//!
//! Code whose behaviour is a matter of time — leases that expire, rates
//! that refill, bursts that end, per-minute tallies — reads the time
//! through a [`Clock`], so a test can hold time still and move it on by
//! hand ([`PausedClock`]) instead of sleeping through a lease. Everything
//! else calls [`now_ms`].

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch; 0 for a clock set before 1970.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Where a component reads the time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// A clock shared by the components that read it.
pub type SharedClock = Arc<dyn Clock>;

/// The machine's wall clock ([`now_ms`]): what every host runs on.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        now_ms()
    }
}

impl SystemClock {
    /// The system clock, shared.
    pub fn shared() -> SharedClock {
        Arc::new(SystemClock)
    }
}

/// A clock that stands still until it is moved: for tests where timing is
/// the subject. It starts at the wall clock's time, so what it stamps into
/// Redis (lease scores, grant times) sits beside real timestamps.
#[derive(Debug)]
pub struct PausedClock {
    now: AtomicU64,
}

impl PausedClock {
    /// A clock stopped at the wall clock's current time.
    pub fn now() -> Arc<PausedClock> {
        Self::at(now_ms())
    }

    /// A clock stopped at `ms`.
    pub fn at(ms: u64) -> Arc<PausedClock> {
        Arc::new(PausedClock {
            now: AtomicU64::new(ms),
        })
    }

    /// Moves the clock `ms` on.
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for PausedClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paused_clock_moves_only_when_told() {
        let clock = PausedClock::at(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(clock.now_ms(), 1_000);
        clock.advance(250);
        assert_eq!(clock.now_ms(), 1_250);
    }

    #[test]
    fn the_system_clock_is_the_wall_clock() {
        let before = now_ms();
        let read = SystemClock.now_ms();
        assert!(read >= before && read <= now_ms());
    }
}

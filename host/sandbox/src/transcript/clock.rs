//! The guest's wall clock ([`RunClock`]): real, noted into the transcript,
//! or replayed from one. Apart because the WASI context holds it for the
//! instance's whole life, while its mode changes per job.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::TranscriptRecorder;

/// A run's wall clock (`wasi:clocks/wall-clock`), as the sandbox gives it
/// to a guest: the real one, noted into the run's transcript when it
/// records one, or — in a replay — the recorded run's readings in order,
/// then the real clock once they run out. One per instance; the mode is
/// set per job ([`ClockMode`]).
#[derive(Clone, Default)]
pub struct RunClock {
    mode: Arc<Mutex<ClockMode>>,
}

/// What a [`RunClock`] answers with.
#[derive(Default)]
pub enum ClockMode {
    /// The real clock.
    #[default]
    Real,
    /// The real clock, each reading noted in the transcript.
    Recording(Arc<TranscriptRecorder>),
    /// A recorded run's readings (ns), in order, then the real clock.
    Replaying(std::collections::VecDeque<u64>),
}

impl RunClock {
    /// Sets what the clock answers with for the job starting now.
    pub fn set(&self, mode: ClockMode) {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }
}

fn real_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl wasmtime_wasi::HostWallClock for RunClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let mut mode = self.mode.lock().unwrap_or_else(|p| p.into_inner());
        let ns = match &mut *mode {
            ClockMode::Real => real_ns(),
            ClockMode::Recording(recorder) => {
                let ns = real_ns();
                recorder.note_clock(ns);
                ns
            }
            ClockMode::Replaying(readings) => readings.pop_front().unwrap_or_else(real_ns),
        };
        Duration::from_nanos(ns)
    }
}

//! The one way a test waits for something to become true: poll a check
//! until it holds, and fail naming what never happened. Use it instead of
//! a fixed sleep (which is either too short on a busy machine or wastes
//! time on a quiet one) and instead of a hand-written deadline loop.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long [`eventually`] waits: generous, since it only costs time when
/// the test is failing anyway.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// How often a check is polled.
const POLL: Duration = Duration::from_millis(25);

/// Polls `check` until it answers `Some`, for at most `within`; returns the
/// value, or fails the test saying `what` never happened.
pub async fn eventually_some<T, F, Fut>(what: &str, within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Polls `check` until it holds, for at most [`PATIENCE`].
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_some(what, PATIENCE, || {
        let check = check();
        async move { check.await.then_some(()) }
    })
    .await
}

/// [`eventually_some`] for a test that is not async (the CLI tests, which
/// run the binary and wait for it): polls `check` on this thread.
pub fn eventually_blocking<T>(
    what: &str,
    within: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

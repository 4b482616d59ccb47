//! Two small pieces of async plumbing the worker and flow control share:
//! retrying a Redis operation through a reconnect, and a task that ends
//! with the value holding it.

use std::time::Duration;

use crate::error::QueueError;

/// Aborts a task when dropped: a run's timer, a lease renewal or a pump
/// ends with whatever owns it.
pub struct AbortOnDrop(pub tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs a Redis operation, retrying for up to 10 s (50 ms, doubling to
/// 1 s, between tries): right after a Redis restart the first commands on
/// a reconnecting connection fail, and a job should not pay for that.
pub async fn retrying<T, F, Fut>(what: &str, op: F) -> Result<T, QueueError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, QueueError>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut delay = Duration::from_millis(50);
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!(error = %e, "could not {what}; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(1));
            }
            Err(e) => return Err(e),
        }
    }
}

//! Small pieces of async plumbing the host shares: a group commit's
//! batch ([`take_queued`]), the delays between tries ([`Backoff`]),
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

/// A group commit's batch: `first` (just received), then what else is
/// queued on `rx` already, up to `most` in all, appended to `batch` in
/// the order sent. What came while the previous batch was being written
/// goes in the next one, together.
pub fn take_queued<T>(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<T>,
    first: T,
    most: usize,
    batch: &mut Vec<T>,
) {
    batch.push(first);
    let mut taken = 1;
    while taken < most {
        match rx.try_recv() {
            Ok(item) => batch.push(item),
            Err(_) => break,
        }
        taken += 1;
    }
}

/// The delays between tries of something that may fail for a while: the
/// first, then doubling up to a most.
pub struct Backoff {
    next: Duration,
    most: Duration,
}

impl Backoff {
    pub fn new(first: Duration, most: Duration) -> Backoff {
        Backoff { next: first, most }
    }

    /// Sleeps for the next delay.
    pub async fn wait(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(self.most);
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
    retrying_for(what, Duration::from_secs(10), op).await
}

/// [`retrying`], for up to `patience`: the last try starts before it
/// ends.
pub async fn retrying_for<T, F, Fut>(what: &str, patience: Duration, op: F) -> Result<T, QueueError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, QueueError>>,
{
    let deadline = tokio::time::Instant::now() + patience;
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!(error = %e, "could not {what}; retrying");
                backoff.wait().await;
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_takes_what_is_queued_up_to_its_most_in_order() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 1..=5 {
            tx.send(i).unwrap();
        }
        let first = rx.try_recv().unwrap();
        let mut batch = Vec::new();
        take_queued(&mut rx, first, 3, &mut batch);
        assert_eq!(batch, [1, 2, 3]);
        let (first, mut rest) = (rx.try_recv().unwrap(), Vec::new());
        take_queued(&mut rx, first, 3, &mut rest);
        assert_eq!(rest, [4, 5], "the rest, without waiting for more");
    }
}

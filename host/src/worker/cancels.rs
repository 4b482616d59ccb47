//! This host's side of cancellation: which jobs run here, and the task
//! that follows the fleet's cancel stream (written by
//! [`crate::queue::cancel`]) and stops them.
//!
//! Every run registers its [`StopHandle`] under its job (`queue`, `id`)
//! before it waits for room or loads its component, and unregisters when it
//! ends. The listener reads the stream with a blocking `XREAD` on a
//! connection of its own and, for each request naming a run of this host,
//! reads the job's mark (BullMQ's `defa` field): the mark is what says a
//! job is cancelled, the stream only rings the bell. With the mark there,
//! the run is stopped — its guest dropped at its next epoch tick
//! (`sandbox::stop`) — and fails as `cancelled`, which is never retried.
//! Without it (the job was retried since, which clears the mark) the
//! request is stale and the run goes on.
//!
//! A run can start just after its request was read — the worker fetched the
//! job before the API marked it, and registered it after the listener
//! looked. So the listener also remembers the requests of the last
//! [`RECENT`] (at most [`MAX_RECENT`] of them); a run registering for a job
//! in that memory is told so, and checks the mark itself
//! ([`Registration::check_mark`]). Registration and delivery take the same
//! lock, so one of the two always sees the other.
//!
//! The listener starts at the stream's newest entry and keeps its position
//! across reconnects, so a Redis blip loses no request; requests older than
//! its start need no delivery — the job's mark fails it when it is taken.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::AsyncCommands;
use redis::streams::{StreamRangeReply, StreamReadOptions, StreamReadReply};
use tokio::sync::watch;

use crate::queue::QueueService;
use crate::sandbox::{Failure, FailureKind, StopHandle};
use crate::state::cancels::CancelRequest;
use crate::store::Store;
use airlock_core::clock::now_ms;

/// How long a request is remembered for runs that register after it.
pub const RECENT: Duration = Duration::from_secs(60);

/// Most requests remembered at once.
pub const MAX_RECENT: usize = 10_000;

/// How long one blocking read waits for a request.
const BLOCK: Duration = Duration::from_secs(2);

type JobId = (String, String);

#[derive(Default)]
struct Inner {
    /// Runs on this host, by job. A job runs at most once per host at a
    /// time (BullMQ's lock), so one handle per job.
    running: HashMap<JobId, StopHandle>,
    /// Requests heard lately: when, by job.
    recent: HashMap<JobId, u64>,
    /// `recent`'s keys, oldest first.
    order: VecDeque<(u64, JobId)>,
    /// Set while the host is fenced (its heartbeat lost): every run is
    /// stopped with this, also one registering meanwhile.
    fenced: Option<Failure>,
}

/// The runs of this host that a cancel can stop.
#[derive(Default)]
pub struct Cancels {
    inner: Mutex<Inner>,
}

/// A run's registration; dropping it unregisters the run.
pub struct Registration {
    cancels: Arc<Cancels>,
    job: JobId,
    handle: StopHandle,
    /// A request for this job was heard lately.
    recent: bool,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.cancels.lock().running.remove(&self.job);
    }
}

impl Registration {
    /// When a request for this job was heard lately, reads the job's mark
    /// (`job_key`'s `defa`) and stops the run if it is there.
    pub async fn check_mark(&self, queues: &QueueService, job_key: &str) {
        if self.recent {
            stop_if_marked(queues, job_key, &self.handle).await;
        }
    }
}

impl Cancels {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers the run of job `queue:id`, stopped by `handle`.
    pub fn register(self: &Arc<Self>, queue: &str, id: &str, handle: StopHandle) -> Registration {
        let job = (queue.to_string(), id.to_string());
        let mut inner = self.lock();
        let recent = inner.recent.contains_key(&job);
        if let Some(failure) = &inner.fenced {
            handle.stop(failure.clone());
        }
        inner.running.insert(job.clone(), handle.clone());
        Registration {
            cancels: self.clone(),
            job,
            handle,
            recent,
        }
    }

    /// Delivers one request: remembers it for a run that registers later,
    /// and answers the handle of the run it names if that runs here.
    pub fn deliver(&self, request: &CancelRequest) -> Option<StopHandle> {
        let job = (request.queue.clone(), request.id.clone());
        let now = now_ms();
        let mut inner = self.lock();
        let cutoff = now.saturating_sub(RECENT.as_millis() as u64);
        while let Some((at, _)) = inner.order.front() {
            if *at >= cutoff && inner.order.len() < MAX_RECENT {
                break;
            }
            let (at, old) = inner.order.pop_front().expect("front exists");
            if inner.recent.get(&old) == Some(&at) {
                inner.recent.remove(&old);
            }
        }
        inner.recent.insert(job.clone(), now);
        inner.order.push_back((now, job.clone()));
        inner.running.get(&job).cloned()
    }

    /// Fences this host (it lost its fleet heartbeat: see
    /// `super::membership`): stops every run with `failure`, and every run
    /// that registers until [`Cancels::unfence`]. Answers how many ran.
    pub fn fence(&self, failure: &Failure) -> usize {
        let mut inner = self.lock();
        inner.fenced = Some(failure.clone());
        for handle in inner.running.values() {
            handle.stop(failure.clone());
        }
        inner.running.len()
    }

    /// Lets runs go on again (the heartbeat counts again).
    pub fn unfence(&self) {
        self.lock().fenced = None;
    }

    /// Jobs running here now.
    pub fn running(&self) -> usize {
        self.lock().running.len()
    }
}

/// Stops `handle`'s run when the job at `job_key` carries the cancel mark,
/// with the mark's text as the reason. True when it did.
async fn stop_if_marked(queues: &QueueService, job_key: &str, handle: &StopHandle) -> bool {
    match queues
        .state()
        .meta
        .get(job_key, crate::queue::cancel::MARK_FIELD)
        .await
    {
        Ok(Some(text)) => {
            let reason = text.strip_prefix("cancelled: ").unwrap_or(&text);
            handle.stop(Failure::new(FailureKind::Cancelled, reason));
            true
        }
        Ok(None) => false,
        Err(e) => {
            tracing::warn!(job_key, error = %e, "cancel: could not read the job's mark");
            false
        }
    }
}

/// Follows the fleet's cancel stream until `shutdown` turns true.
pub fn listen(
    cancels: Arc<Cancels>,
    queues: Arc<QueueService>,
    mut shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let store = queues.store().clone();
        let key = store.keys().cancels();
        let mut position: Option<String> = None;
        let mut conn = None;
        while !*shutdown.borrow() {
            // Where to read from: the newest entry when the listener starts.
            let after = match &position {
                Some(p) => p.clone(),
                None => match newest(&store, &key).await {
                    Ok(id) => {
                        position = Some(id.clone());
                        id
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cancel stream: reading its end; will retry");
                        pause(&mut shutdown).await;
                        continue;
                    }
                },
            };
            if conn.is_none() {
                match store.bullmq_connection().dedicated_any_connection().await {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        tracing::warn!(error = %e, "cancel stream: connecting; will retry");
                        pause(&mut shutdown).await;
                        continue;
                    }
                }
            }
            let c = conn.as_mut().expect("connected above");
            let opts = StreamReadOptions::default()
                .block(BLOCK.as_millis() as usize)
                .count(100);
            let (keys, ids) = ([&key], [&after]);
            let read = c.xread_options::<_, _, Option<StreamReadReply>>(&keys, &ids, &opts);
            // The blocking connection has no response timeout: a watchdog
            // replaces a half-open one.
            let reply = tokio::select! {
                r = tokio::time::timeout(BLOCK + Duration::from_secs(1), read) => r,
                _ = shutdown.changed() => continue,
            };
            match reply {
                Ok(Ok(Some(reply))) => {
                    for entry in reply.keys.into_iter().flat_map(|k| k.ids) {
                        position = Some(entry.id.clone());
                        match CancelRequest::from_fields(&entry.map) {
                            Some(request) => {
                                if let Some(handle) = cancels.deliver(&request) {
                                    let job_key = queues.job_key(&request.queue, &request.id);
                                    if stop_if_marked(&queues, &job_key, &handle).await {
                                        tracing::info!(
                                            queue = %request.queue,
                                            id = %request.id,
                                            "running job cancelled"
                                        );
                                    }
                                }
                            }
                            None => {
                                tracing::debug!(entry = %entry.id, "cancel stream: skipped a malformed entry")
                            }
                        }
                    }
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "cancel stream: read failed; reconnecting");
                    conn = None;
                    pause(&mut shutdown).await;
                }
                Err(_) => conn = None,
            }
        }
    })
}

/// The id of the stream's newest entry, `0-0` when it is empty.
async fn newest(store: &Store, key: &str) -> Result<String, redis::RedisError> {
    let mut conn = store.conn();
    let newest: StreamRangeReply = conn.xrevrange_count(key, "+", "-", 1).await?;
    Ok(newest
        .ids
        .first()
        .map(|e| e.id.clone())
        .unwrap_or_else(|| "0-0".into()))
}

async fn pause(shutdown: &mut watch::Receiver<bool>) {
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        _ = shutdown.changed() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::stop_pair;

    fn request(id: &str) -> CancelRequest {
        CancelRequest {
            queue: "q".into(),
            id: id.into(),
            reason: "by test".into(),
            at_ms: now_ms(),
        }
    }

    #[test]
    fn a_request_finds_the_run_it_names_only() {
        let cancels = Arc::new(Cancels::default());
        let (one, _s1) = stop_pair();
        let (two, _s2) = stop_pair();
        let _r1 = cancels.register("q", "1", one);
        let _r2 = cancels.register("q", "2", two);
        assert!(cancels.deliver(&request("1")).is_some());
        assert!(cancels.deliver(&request("3")).is_none());
    }

    #[test]
    fn a_run_registering_after_its_request_is_told() {
        let cancels = Arc::new(Cancels::default());
        let (early, _s) = stop_pair();
        let first = cancels.register("q", "7", early);
        assert!(!first.recent);
        assert!(cancels.deliver(&request("7")).is_some());
        drop(first);
        let (late, _s) = stop_pair();
        assert!(cancels.register("q", "7", late).recent);
    }

    #[test]
    fn an_ended_run_is_unregistered_and_memory_is_bounded() {
        let cancels = Arc::new(Cancels::default());
        let (handle, _s) = stop_pair();
        drop(cancels.register("q", "1", handle));
        assert_eq!(cancels.running(), 0);
        for i in 0..(MAX_RECENT + 50) {
            cancels.deliver(&request(&i.to_string()));
        }
        let inner = cancels.lock();
        assert!(inner.recent.len() <= MAX_RECENT);
        assert!(inner.order.len() <= MAX_RECENT);
    }
}

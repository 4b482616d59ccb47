//! What several routes share, so route modules import it from here and
//! not from each other: a queue's binding, a job the caller may see, job
//! refs, the list states, a failure kind's name, the job-data size check,
//! and a job's transcripts.

use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::ApiState;
use super::auth::{Caller, Role};
use super::error::ApiError;
use crate::names;
use crate::queue::{JobSnapshot, JobState};
use crate::registry::{Binding, RegistryError};
use crate::sandbox::transcript::Transcript;

/// The binding of `queue`, checking the name first (400, then 404). A
/// queue outside the caller's scope answers the 404 of an unbound queue,
/// before Redis is asked: a scoped token learns nothing of it.
pub async fn bound(state: &ApiState, caller: &Caller, queue: &str) -> Result<Binding, ApiError> {
    in_scope(caller, queue)?;
    Ok(state.registry().binding(queue).await?)
}

/// Checks `queue`'s name (400) and that it is in the caller's scope (the
/// 404 of an unbound queue when not).
pub fn in_scope(caller: &Caller, queue: &str) -> Result<(), ApiError> {
    names::queue("queue", queue)?;
    if caller.sees_queue(queue) {
        Ok(())
    } else {
        Err(RegistryError::unbound(queue).into())
    }
}

/// Every binding of a queue the caller sees.
pub async fn bindings(state: &ApiState, caller: &Caller) -> Result<Vec<Binding>, ApiError> {
    let mut bindings = state.registry().bindings().await?;
    bindings.retain(|b| caller.sees_queue(&b.queue));
    Ok(bindings)
}

/// A state jobs can be listed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ListState {
    /// Ready to run.
    Waiting,
    /// Ready to run, ordered by priority.
    Prioritized,
    /// Waiting for its time.
    Delayed,
    /// Flow parents waiting for their children.
    WaitingChildren,
    /// Running.
    Active,
    /// Finished with a result.
    Completed,
    /// Finished without one.
    Failed,
}

impl From<ListState> for JobState {
    fn from(s: ListState) -> JobState {
        match s {
            ListState::Waiting => JobState::Waiting,
            ListState::Prioritized => JobState::Prioritized,
            ListState::Delayed => JobState::Delayed,
            ListState::WaitingChildren => JobState::WaitingChildren,
            ListState::Active => JobState::Active,
            ListState::Completed => JobState::Completed,
            ListState::Failed => JobState::Failed,
        }
    }
}

/// `value` as a failure kind's name, or a 400 naming `field`.
pub fn failure_kind(field: &str, value: &str) -> Result<crate::sandbox::FailureKind, ApiError> {
    crate::sandbox::FailureKind::parse(value).ok_or_else(|| {
        let names: Vec<&str> = crate::sandbox::FailureKind::ALL
            .iter()
            .map(|k| k.as_str())
            .collect();
        ApiError::field(field, format!("must be one of {}", names.join(", ")))
    })
}

/// Splits a job ref into `(queue, id)`.
pub fn split_ref(job_ref: &str) -> Result<(String, String), ApiError> {
    let (queue, id) = airlock_core::job_ref::split(job_ref).ok_or_else(|| {
        ApiError::field(
            "ref",
            "a job is addressed as `<queue>:<id>`, e.g. `payments:42`",
        )
    })?;
    names::queue("ref", queue)?;
    if id.is_empty() || id.len() > crate::queue::MAX_ID_LEN {
        return Err(ApiError::field(
            "ref",
            "the job id must be 1 to 256 characters",
        ));
    }
    Ok((queue.to_string(), id.to_string()))
}

/// The job, if it exists and the caller may see it (a producer sees only
/// the jobs it enqueued, a scoped token only the jobs of its queues;
/// others get 404, so ids do not leak).
pub async fn visible_job(
    state: &ApiState,
    caller: &Caller,
    job_ref: &str,
) -> Result<JobSnapshot, ApiError> {
    caller.require(&[Role::Reader, Role::Producer])?;
    let (queue, id) = split_ref(job_ref)?;
    if !caller.sees_queue(&queue) {
        return Err(ApiError::not_found(format!("job `{job_ref}`")));
    }
    let job = state
        .queues()
        .get_job(&queue, &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("job `{job_ref}`")))?;
    if !caller.reads_everything() && job.producer.as_deref() != Some(caller.name.as_str()) {
        return Err(ApiError::not_found(format!("job `{job_ref}`")));
    }
    Ok(job)
}

/// How many bytes `value` takes as compact JSON, without building the text.
fn json_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Refuses job data over the API's per-job limit.
pub(super) fn check_data_size(
    state: &ApiState,
    field: &str,
    data: &serde_json::Value,
) -> Result<(), ApiError> {
    let size = json_len(data);
    if size > state.limits().max_job_data_bytes {
        let mut err = ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "job_data_too_large",
            format!(
                "`{field}` is {size} bytes, the maximum is {}",
                state.limits().max_job_data_bytes
            ),
        );
        err.detail.field = Some(field.to_string());
        return Err(err);
    }
    Ok(())
}

/// The job's transcripts, oldest run first, a run in a batch with its
/// batch's. Left out, as they came from Redis: a field that does not
/// parse, and a batch transcript that does not list the job (a pointer
/// aimed at another batch of the queue).
pub async fn transcripts(
    state: &ApiState,
    queue: &str,
    id: &str,
) -> Result<Vec<(u32, Transcript)>, ApiError> {
    let stored = state.queues().state().meta.transcripts(queue, id).await?;
    Ok(stored
        .into_iter()
        .filter_map(|(run, text)| Some((run, serde_json::from_str::<Transcript>(&text).ok()?)))
        .filter(|(_, t)| {
            t.batch
                .as_ref()
                .is_none_or(|jobs| jobs.iter().any(|b| b.job.queue == queue && b.job.id == id))
        })
        .collect())
}

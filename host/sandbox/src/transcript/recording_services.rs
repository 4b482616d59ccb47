//! [`RecordingServices`]: the [`HostServices`] wrapper that writes each
//! durable call and its answer into the run's transcript. Apart from the
//! recorder because it only forwards calls; it keeps nothing itself.

use std::sync::Arc;
use std::time::Duration;

use super::{
    Answer, Call, REDACTED, RecordedChild, RecordedError, RecordedWaitState, TranscriptRecorder,
    recorded_outcome,
};
use crate::services::{
    ChildResult, HostServices, InvokeState, Progress, ServiceError, StartJob, WaitFor, WaitOutcome,
    WaitState,
};

/// [`HostServices`] that records every call and its answer into a
/// transcript, then answers as `inner` did.
pub struct RecordingServices {
    /// The services answering.
    pub inner: Box<dyn HostServices>,
    /// Where the calls go.
    pub recorder: Arc<TranscriptRecorder>,
}

#[async_trait::async_trait]
impl HostServices for RecordingServices {
    fn progress(&mut self, value: Progress) {
        self.recorder.push(Call::Progress {
            value: value.to_json(),
        });
        self.inner.progress(value);
    }

    async fn step_lookup(&mut self, step_id: &str) -> Result<Option<String>, ServiceError> {
        let result = self.inner.step_lookup(step_id).await;
        self.recorder.push(Call::StepLookup {
            id: step_id.into(),
            answer: Answer::of(&result, Clone::clone),
        });
        result
    }

    async fn step_record(&mut self, step_id: &str, output: &str) -> Result<(), ServiceError> {
        let result = self.inner.step_record(step_id, output).await;
        self.recorder.push(Call::StepRecord {
            id: step_id.into(),
            output: output.into(),
            error: result.as_ref().err().map(RecordedError::of),
        });
        result
    }

    async fn sleep_lookup(&mut self, sleep_id: &str) -> Result<Option<u64>, ServiceError> {
        let result = self.inner.sleep_lookup(sleep_id).await;
        self.recorder.push(Call::SleepLookup {
            id: sleep_id.into(),
            answer: Answer::of(&result, Clone::clone),
        });
        result
    }

    async fn sleep_record(&mut self, sleep_id: &str, wake_at_ms: u64) -> Result<(), ServiceError> {
        let result = self.inner.sleep_record(sleep_id, wake_at_ms).await;
        self.recorder.push(Call::SleepRecord {
            id: sleep_id.into(),
            wake_at: wake_at_ms,
            error: result.as_ref().err().map(RecordedError::of),
        });
        result
    }

    async fn wait_lookup(&mut self, wait_id: &str) -> Result<Option<WaitState>, ServiceError> {
        let result = self.inner.wait_lookup(wait_id).await;
        self.recorder.push(Call::WaitLookup {
            id: wait_id.into(),
            answer: Answer::of(&result, |s| s.as_ref().map(RecordedWaitState::from)),
        });
        result
    }

    async fn wait_begin(
        &mut self,
        wait_id: &str,
        what: &WaitFor,
        deadline_ms: u64,
    ) -> Result<Option<WaitOutcome>, ServiceError> {
        let result = self.inner.wait_begin(wait_id, what, deadline_ms).await;
        self.recorder.push(Call::WaitBegin {
            id: wait_id.into(),
            what: what.into(),
            deadline: deadline_ms,
            answer: Answer::of(&result, |o| o.as_ref().map(recorded_outcome)),
        });
        result
    }

    async fn wait_expire(&mut self, wait_id: &str) -> Result<WaitOutcome, ServiceError> {
        let result = self.inner.wait_expire(wait_id).await;
        self.recorder.push(Call::WaitExpire {
            id: wait_id.into(),
            answer: Answer::of(&result, recorded_outcome),
        });
        result
    }

    async fn wait_token(&mut self, wait_id: &str) -> Result<String, ServiceError> {
        let result = self.inner.wait_token(wait_id).await;
        if let Ok(token) = &result {
            self.recorder.note_token(wait_id, token);
        }
        self.recorder.push(Call::WaitToken {
            id: wait_id.into(),
            answer: Answer::of(&result, |_| REDACTED.to_string()),
        });
        result
    }

    async fn start_jobs(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        indexes: &[usize],
        as_children: bool,
    ) -> Result<Vec<(String, String)>, ServiceError> {
        let result = self
            .inner
            .start_jobs(step_id, jobs, indexes, as_children)
            .await;
        self.recorder.push(Call::StartJobs {
            id: step_id.into(),
            queues: indexes
                .iter()
                .filter_map(|&i| jobs.get(i).map(|j| j.queue.clone()))
                .collect(),
            children: as_children,
            answer: Answer::of(&result, |refs| {
                refs.iter().map(|(_, id)| id.clone()).collect()
            }),
        });
        result
    }

    async fn invoke_state(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        timeout_ms: Option<u64>,
    ) -> Result<InvokeState, ServiceError> {
        let result = self.inner.invoke_state(step_id, jobs, timeout_ms).await;
        self.recorder.push(Call::InvokeState {
            id: step_id.into(),
            answer: Answer::of(&result, |state| super::RecordedInvoke {
                deadline: state.deadline_ms,
                ends: state
                    .ends
                    .iter()
                    .map(|e| e.as_ref().map(super::RecordedChildEnd::from))
                    .collect(),
            }),
        });
        result
    }

    async fn invoke_expire(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        pending: &[usize],
    ) -> Result<(), ServiceError> {
        let result = self.inner.invoke_expire(step_id, jobs, pending).await;
        self.recorder.push(Call::InvokeExpire {
            id: step_id.into(),
            pending: pending.to_vec(),
            error: result.as_ref().err().map(RecordedError::of),
        });
        result
    }

    async fn send_event(
        &mut self,
        step_id: &str,
        name: &str,
        data: &serde_json::Value,
    ) -> Result<String, ServiceError> {
        let result = self.inner.send_event(step_id, name, data).await;
        self.recorder.push(Call::SendEvent {
            id: step_id.into(),
            name: name.into(),
            answer: Answer::of(&result, Clone::clone),
        });
        result
    }

    async fn count_retry_after(&mut self) -> Result<u32, ServiceError> {
        let result = self.inner.count_retry_after().await;
        self.recorder.push(Call::RetryAfterCount {
            answer: Answer::of(&result, |n| *n),
        });
        result
    }

    async fn children_results(&mut self) -> Result<Vec<ChildResult>, ServiceError> {
        let result = self.inner.children_results().await;
        self.recorder.push(Call::ChildrenResults {
            answer: Answer::of(&result, |c| c.iter().map(RecordedChild::from).collect()),
        });
        result
    }

    async fn kv_get(&mut self, key: &str) -> Result<Option<String>, ServiceError> {
        let result = self.inner.kv_get(key).await;
        self.recorder.push(Call::KvGet {
            key: key.into(),
            answer: Answer::of(&result, Clone::clone),
        });
        result
    }

    async fn kv_set(
        &mut self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
        only_if_absent: bool,
    ) -> Result<bool, ServiceError> {
        let result = self.inner.kv_set(key, value, ttl, only_if_absent).await;
        self.recorder.push(Call::KvSet {
            key: key.into(),
            value: value.into(),
            ttl_ms: ttl.map(|t| t.as_millis() as u64),
            only_if_absent,
            answer: Answer::of(&result, |w| *w),
        });
        result
    }

    async fn kv_delete(&mut self, key: &str) -> Result<bool, ServiceError> {
        let result = self.inner.kv_delete(key).await;
        self.recorder.push(Call::KvDelete {
            key: key.into(),
            answer: Answer::of(&result, |d| *d),
        });
        result
    }

    async fn secret(&mut self, name: &str) -> Result<Option<String>, ServiceError> {
        let result = self.inner.secret(name).await;
        self.recorder.push(Call::Secret {
            name: name.into(),
            answer: Answer::of(&result, Option::is_some),
        });
        result
    }
}

//! The host services of a replayed run: what the recorded run received,
//! answered again from its transcript, over a durable state the replay's
//! own runs build up (the new version's steps, sleeps and waits).
//!
//! - Steps are the new version's: a step it recorded in an earlier replayed
//!   run is found; one it never recorded runs (its requests are answered
//!   from the transcript, see [`super::answers`]).
//! - A sleep recorded in an earlier replayed run has ended (time is
//!   skipped); one reached in this run parks it, as it parked the recorded
//!   run.
//! - A wait gets the outcome the recorded run got for the same wait id
//!   (an event, a token's result, a timeout); one the recorded run never
//!   had an outcome for parks the run.
//! - Jobs started and events sent (`enqueue`, `invoke`, `send-event`)
//!   get the recorded run's ids, or stand-ins for starts it never made:
//!   nothing is added or sent. An invoke gets the children's ends the
//!   recorded run got at the same step (a fixture's `invokes`); one the
//!   recorded run never saw end parks the run.
//! - KV reads, children's results and errors are the recorded run's
//!   answers to the same call; KV writes land in the replay's own store,
//!   which answers reads the recording has no answer for.
//! - A secret the recorded run read is set, with a stand-in value sealed
//!   with the replay's own key (nothing real is ever needed: no request
//!   leaves the host); a wait token is a stand-in too (of a real one's
//!   shape).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::sandbox::secrets::{self, SecretPolicy, SecretsKey};
use crate::sandbox::services::{
    ChildResult, HostServices, InvokeState, Progress, ServiceError, StartJob, WaitFor, WaitOutcome,
    WaitState,
};
use crate::sandbox::transcript::{Answer, Call, Transcript, wait_outcome};

/// What the replay's runs recorded so far, across its runs.
#[derive(Debug, Default)]
pub struct ReplayState {
    steps: HashMap<String, String>,
    /// Sleeps by id: `true` once a later run began (the sleep has ended).
    sleeps: HashMap<String, (u64, bool)>,
    /// Waits by id: their deadlines.
    waits: HashMap<String, u64>,
    kv: HashMap<String, String>,
}

impl ReplayState {
    /// A state whose KV store holds `kv` (a fixture's).
    pub fn with_kv(kv: HashMap<String, String>) -> ReplayState {
        ReplayState {
            kv,
            ..ReplayState::default()
        }
    }

    /// A new run begins: every sleep recorded so far has ended.
    pub fn next_run(&mut self) {
        for (_, ended) in self.sleeps.values_mut() {
            *ended = true;
        }
    }
}

/// The services of one replayed run: the recorded run's transcript, the
/// replay's state and the key its stand-in secrets are sealed with.
pub struct ReplayServices {
    recorded: Vec<(Call, bool)>,
    state: Arc<Mutex<ReplayState>>,
    key: SecretsKey,
    queue: String,
}

impl ReplayServices {
    /// Services answering from `recorded` (one run's transcript) over
    /// `state`; stand-in secrets sealed with `key`.
    pub fn new(
        recorded: &Transcript,
        state: Arc<Mutex<ReplayState>>,
        key: SecretsKey,
    ) -> ReplayServices {
        ReplayServices {
            recorded: recorded.calls.iter().cloned().map(|c| (c, false)).collect(),
            state,
            key,
            queue: recorded.job.queue.clone(),
        }
    }

    /// The first recorded call not answered yet that `pick` takes, marked
    /// answered.
    fn take<T>(&mut self, mut pick: impl FnMut(&Call) -> Option<T>) -> Option<T> {
        self.recorded.iter_mut().find_map(|(call, used)| {
            if *used {
                return None;
            }
            let found = pick(call)?;
            *used = true;
            Some(found)
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ReplayState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait::async_trait]
impl HostServices for ReplayServices {
    fn progress(&mut self, _value: Progress) {}

    async fn step_lookup(&mut self, step_id: &str) -> Result<Option<String>, ServiceError> {
        Ok(self.state().steps.get(step_id).cloned())
    }

    async fn step_record(&mut self, step_id: &str, output: &str) -> Result<(), ServiceError> {
        let failed = self.take(|c| match c {
            Call::StepRecord { id, error, .. } if id == step_id => Some(error.clone()),
            _ => None,
        });
        if let Some(Some(error)) = failed {
            return Err(error.error());
        }
        self.state()
            .steps
            .entry(step_id.to_string())
            .or_insert_with(|| output.to_string());
        Ok(())
    }

    async fn sleep_lookup(&mut self, sleep_id: &str) -> Result<Option<u64>, ServiceError> {
        // An ended sleep: a wake-up time long past.
        Ok(self
            .state()
            .sleeps
            .get(sleep_id)
            .map(|(wake, ended)| if *ended { 0 } else { *wake }))
    }

    async fn sleep_record(&mut self, sleep_id: &str, wake_at_ms: u64) -> Result<(), ServiceError> {
        self.state()
            .sleeps
            .entry(sleep_id.to_string())
            .or_insert((wake_at_ms, false));
        Ok(())
    }

    async fn wait_lookup(&mut self, wait_id: &str) -> Result<Option<WaitState>, ServiceError> {
        let Some(deadline) = self.state().waits.get(wait_id).copied() else {
            return Ok(None);
        };
        // The outcome the recorded run found for this wait: at its lookup,
        // or when it expired the wait past its deadline.
        let looked = self.take(|c| match c {
            Call::WaitLookup { id, answer } if id == wait_id => Some(answer.clone()),
            _ => None,
        });
        let mut outcome = match looked {
            Some(answer) => answer.result()?.and_then(|s| s.state().outcome),
            None => None,
        };
        if outcome.is_none() {
            let expired = self.take(|c| match c {
                Call::WaitExpire { id, answer } if id == wait_id => Some(answer.clone()),
                _ => None,
            });
            if let Some(answer) = expired {
                outcome = Some(wait_outcome(answer.result()?));
            }
        }
        Ok(Some(WaitState {
            deadline_ms: deadline,
            outcome,
        }))
    }

    async fn wait_begin(
        &mut self,
        wait_id: &str,
        _what: &WaitFor,
        deadline_ms: u64,
    ) -> Result<Option<WaitOutcome>, ServiceError> {
        self.state().waits.insert(wait_id.to_string(), deadline_ms);
        let answer = self.take(|c| match c {
            Call::WaitBegin { id, answer, .. } if id == wait_id => Some(answer.clone()),
            _ => None,
        });
        match answer {
            Some(answer) => Ok(answer.result()?.map(wait_outcome)),
            None => Ok(None),
        }
    }

    async fn wait_expire(&mut self, wait_id: &str) -> Result<WaitOutcome, ServiceError> {
        let answer = self.take(|c| match c {
            Call::WaitExpire { id, answer } if id == wait_id => Some(answer.clone()),
            _ => None,
        });
        match answer {
            Some(answer) => Ok(wait_outcome(answer.result()?)),
            None => Ok(WaitOutcome::TimedOut),
        }
    }

    async fn wait_token(&mut self, wait_id: &str) -> Result<String, ServiceError> {
        let answer = self.take(|c| match c {
            Call::WaitToken { id, answer } if id == wait_id => Some(answer.clone()),
            _ => None,
        });
        if let Some(Answer::Error(e)) = answer {
            return Err(e.error());
        }
        // A stand-in of a real token's shape (and length: a request body
        // holding it compares with the recorded one, where the token is
        // `[wait-token:ID]` on both sides).
        Ok(format!("wt_{}", crate::state::digest(&["replay", wait_id])))
    }

    async fn start_jobs(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        indexes: &[usize],
        _as_children: bool,
    ) -> Result<Vec<(String, String)>, ServiceError> {
        let answer = self.take(|c| match c {
            Call::StartJobs { id, answer, .. } if id == step_id => Some(answer.clone()),
            _ => None,
        });
        let ids = match answer {
            Some(answer) => answer.result()?,
            None => Vec::new(),
        };
        Ok(indexes
            .iter()
            .enumerate()
            .filter_map(|(n, &i)| {
                let queue = jobs.get(i)?.queue.clone();
                let id = ids.get(n).cloned().unwrap_or_else(|| {
                    format!(
                        "replay-{}",
                        crate::state::digest(&["start", step_id, &i.to_string()])
                    )
                });
                Some((queue, id))
            })
            .collect())
    }

    async fn invoke_state(
        &mut self,
        step_id: &str,
        jobs: &[StartJob],
        _timeout_ms: Option<u64>,
    ) -> Result<InvokeState, ServiceError> {
        let answer = self.take(|c| match c {
            Call::InvokeState { id, answer } if id == step_id => Some(answer.clone()),
            _ => None,
        });
        let recorded = match answer {
            Some(answer) => Some(answer.result()?),
            None => None,
        };
        let mut ends: Vec<_> = recorded
            .map(|r| r.ends.iter().map(|e| e.as_ref().map(|e| e.end())).collect())
            .unwrap_or_default();
        ends.resize(jobs.len(), None);
        // No deadline: a child the recording never saw end parks the run.
        Ok(InvokeState {
            deadline_ms: None,
            ends,
        })
    }

    async fn invoke_expire(
        &mut self,
        step_id: &str,
        _jobs: &[StartJob],
        _pending: &[usize],
    ) -> Result<(), ServiceError> {
        let failed = self.take(|c| match c {
            Call::InvokeExpire { id, error, .. } if id == step_id => Some(error.clone()),
            _ => None,
        });
        match failed {
            Some(Some(error)) => Err(error.error()),
            _ => Ok(()),
        }
    }

    async fn send_event(
        &mut self,
        step_id: &str,
        _name: &str,
        _data: &serde_json::Value,
    ) -> Result<String, ServiceError> {
        let answer = self.take(|c| match c {
            Call::SendEvent { id, answer, .. } if id == step_id => Some(answer.clone()),
            _ => None,
        });
        match answer {
            Some(answer) => answer.result(),
            None => Ok(format!(
                "replay-{}",
                crate::state::digest(&["event", step_id])
            )),
        }
    }

    async fn count_retry_after(&mut self) -> Result<u32, ServiceError> {
        let answer = self.take(|c| match c {
            Call::RetryAfterCount { answer } => Some(answer.clone()),
            _ => None,
        });
        match answer {
            Some(answer) => answer.result(),
            None => Ok(1),
        }
    }

    async fn children_results(&mut self) -> Result<Vec<ChildResult>, ServiceError> {
        let answer = self.take(|c| match c {
            Call::ChildrenResults { answer } => Some(answer.clone()),
            _ => None,
        });
        match answer {
            Some(answer) => Ok(answer.result()?.into_iter().map(|c| c.result()).collect()),
            None => Ok(Vec::new()),
        }
    }

    async fn kv_get(&mut self, key: &str) -> Result<Option<String>, ServiceError> {
        let answer = self.take(|c| match c {
            Call::KvGet { key: k, answer } if k == key => Some(answer.clone()),
            _ => None,
        });
        match answer {
            Some(answer) => answer.result(),
            None => Ok(self.state().kv.get(key).cloned()),
        }
    }

    async fn kv_set(
        &mut self,
        key: &str,
        value: &str,
        _ttl: Option<Duration>,
        only_if_absent: bool,
    ) -> Result<bool, ServiceError> {
        let answer = self.take(|c| match c {
            Call::KvSet { key: k, answer, .. } if k == key => Some(answer.clone()),
            _ => None,
        });
        let mut state = self.state();
        let written = match answer {
            Some(answer) => answer.result()?,
            None => !(only_if_absent && state.kv.contains_key(key)),
        };
        if written {
            state.kv.insert(key.to_string(), value.to_string());
        }
        Ok(written)
    }

    async fn kv_delete(&mut self, key: &str) -> Result<bool, ServiceError> {
        let answer = self.take(|c| match c {
            Call::KvDelete { key: k, answer } if k == key => Some(answer.clone()),
            _ => None,
        });
        let existed = self.state().kv.remove(key).is_some();
        match answer {
            Some(answer) => answer.result(),
            None => Ok(existed),
        }
    }

    async fn secret(&mut self, name: &str) -> Result<Option<String>, ServiceError> {
        let answer = self.take(|c| match c {
            Call::Secret { name: n, answer } if n == name => Some(answer.clone()),
            _ => None,
        });
        let set = match answer {
            Some(answer) => answer.result()?,
            None => false,
        };
        // A stand-in the guest may hold; no request it could go into
        // leaves the host.
        let policy = SecretPolicy {
            allow: Vec::new(),
            reveal: true,
            in_body: false,
        };
        Ok(set.then(|| {
            secrets::encrypt(
                &self.key,
                &self.queue,
                name,
                &format!("replay-secret-{name}"),
                &policy,
                airlock_core::clock::now_ms(),
            )
        }))
    }
}

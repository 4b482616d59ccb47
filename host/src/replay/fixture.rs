//! `airlock test`'s fixtures: a job and the answers its handler gets from
//! outside its sandbox, written by hand (configuration, secrets by name,
//! KV values, HTTP responses, wait outcomes, children's results, invoked
//! children's ends), and what
//! the run must do (its output or failure, its steps, its requests). The
//! handler — the very `.wasm` that is deployed, in any language — runs
//! against them in a local sandbox with the replay's machinery
//! ([`super::run_answered`]): nothing is sent anywhere, durable sleeps are
//! skipped, a wait gets the fixture's outcome, and a run that fails with
//! `guest_retry` is retried (the next attempt) while attempts remain.
//!
//! ```json
//! {
//!   "name": "records the payment in the ledger",
//!   "job": {"data": {"transactionId": "tx_1", "amount": 42.5}},
//!   "config": {"LEDGER_URL": "http://ledger.test"},
//!   "http": [{"method": "POST", "url": "http://ledger.test/v1/ledger",
//!             "status": 201, "body": {"id": "led_tx_1"}}],
//!   "expect": {
//!     "output": {"processed": true, "ledgerRecordId": "led_tx_1"},
//!     "requests": [{"method": "POST", "url": "http://ledger.test/v1/ledger",
//!                   "body": {"transactionId": "tx_1", "amount": 42.5, "currency": "USD"}}]
//!   }
//! }
//! ```
//!
//! A batch handler's fixture gives `jobs` (a list of jobs) instead of
//! `job`: they run once, as one batch (one call of `run-batch`, under the
//! limits scaled to the batch as a host scales them), and `expect.jobs`
//! gives each job's expected end, in order (`{"output": ...}` or
//! `{"failure": "guest_retry"}`); `steps` and `requests` are the batch's.
//! A batch is not run again for a job that asked to be retried: a host
//! would retry it in another batch.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::compare::{Effect, effects};
use super::services::ReplayState;
use crate::sandbox::secrets::SecretsKey;
use crate::sandbox::transcript::{
    Answer, Call, RecordedBody, RecordedChild, RecordedChildEnd, RecordedInvoke, RecordedJob,
    RecordedOutcome, RecordedResponse, RecordedWaitFor, RecordedWaitState, Transcript,
};
use crate::sandbox::{Limits, LoadedComponent, Sandbox};

/// Most runs one fixture may take (sleeps, retries).
const MAX_RUNS: usize = 25;

/// One fixture.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fixture {
    /// What it checks, for the report (default: the file's name).
    #[serde(default)]
    pub name: Option<String>,
    /// The job.
    #[serde(default)]
    pub job: FixtureJob,
    /// A batch's jobs, for a batch handler (instead of `job`).
    #[serde(default)]
    pub jobs: Option<Vec<FixtureJob>>,
    /// The binding's configuration.
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    /// The secrets that are set (their values never matter: no request
    /// leaves the host).
    #[serde(default)]
    pub secrets: Vec<String>,
    /// The KV store's values before the run.
    #[serde(default)]
    pub kv: HashMap<String, String>,
    /// The responses to the handler's requests, each given once, to the
    /// first request with its method and URL.
    #[serde(default)]
    pub http: Vec<CannedResponse>,
    /// Each wait's outcome by wait id: what came (any JSON), or `null`
    /// for a timeout. A wait the fixture does not name parks the job, and
    /// the test says so.
    #[serde(default)]
    pub waits: BTreeMap<String, Value>,
    /// A flow parent's children's outcomes.
    #[serde(default)]
    pub children: Vec<RecordedChild>,
    /// Each invoke's children's ends by the invoke's step id, in the order
    /// of its jobs (`{"end": "completed", "value": "{\"ok\":true}"}`,
    /// `{"end": "failed", "kind": "guest_fatal", "reason": "…",
    /// "attempts": 1}`, `{"end": "timedOut"}`). An invoke the fixture does
    /// not name parks the job, and the test says so. Jobs the handler
    /// enqueues and events it sends go nowhere.
    #[serde(default)]
    pub invokes: BTreeMap<String, Vec<RecordedChildEnd>>,
    /// What the run must do.
    #[serde(default)]
    pub expect: Expect,
}

/// The job of a fixture.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FixtureJob {
    /// Its data.
    #[serde(default = "empty_object")]
    pub data: Value,
    /// Its name.
    #[serde(default = "default_name")]
    pub name: String,
    /// Its id.
    #[serde(default = "default_id")]
    pub id: String,
    /// Attempts allowed (default 1).
    #[serde(default = "one")]
    pub attempts: u32,
}

impl FixtureJob {
    /// The job as a run receives it, on queue `test`, in its first
    /// attempt.
    fn recorded(&self) -> RecordedJob {
        RecordedJob {
            id: self.id.clone(),
            queue: "test".into(),
            name: self.name.clone(),
            data: self.data.to_string(),
            attempt: 1,
            max_attempts: self.attempts.max(1),
            enqueued_at: airlock_core::clock::now_ms(),
            parent: None,
        }
    }
}

impl Default for FixtureJob {
    fn default() -> Self {
        FixtureJob {
            data: empty_object(),
            name: default_name(),
            id: default_id(),
            attempts: 1,
        }
    }
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}
fn default_name() -> String {
    "test".into()
}
fn default_id() -> String {
    "test-1".into()
}
fn one() -> u32 {
    1
}

/// A canned response.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CannedResponse {
    /// The request's method.
    pub method: String,
    /// The request's URL, as the handler writes it.
    pub url: String,
    /// The status (default 200).
    #[serde(default = "ok_status")]
    pub status: u16,
    /// Response headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body: a string as is, anything else as JSON.
    #[serde(default)]
    pub body: Value,
}

fn ok_status() -> u16 {
    200
}

/// What a fixture's run must do; each part given is checked.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// Its output (JSON equality).
    #[serde(default)]
    pub output: Option<Value>,
    /// Its failure's kind (`guest_fatal`, `guest_retry`...), for a job that
    /// must fail.
    #[serde(default)]
    pub failure: Option<String>,
    /// The steps it runs, in order.
    #[serde(default)]
    pub steps: Option<Vec<String>>,
    /// The requests it sends, in order: method and URL, and the body when
    /// given (JSON equality when it is JSON, else the text).
    #[serde(default)]
    pub requests: Option<Vec<ExpectedRequest>>,
    /// For a batch (`jobs`): each job's end, in order.
    #[serde(default)]
    pub jobs: Option<Vec<ExpectEnd>>,
}

/// A job's expected end in a batch: its output or its failure's kind.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectEnd {
    /// Its output (JSON equality).
    #[serde(default)]
    pub output: Option<Value>,
    /// Its failure's kind.
    #[serde(default)]
    pub failure: Option<String>,
}

/// An expected request.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectedRequest {
    /// Its method.
    pub method: String,
    /// Its URL.
    pub url: String,
    /// Its body, when it matters.
    #[serde(default)]
    pub body: Option<Value>,
}

/// A request the handler sent, as a test reports it.
#[derive(Debug, Clone, Serialize)]
pub struct SentRequest {
    /// Its method.
    pub method: String,
    /// Its URL.
    pub url: String,
    /// Its body (as recorded: 16 KiB at most).
    pub body: String,
}

/// What a fixture's run did and whether it did what was expected.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// The fixture's name.
    pub name: String,
    /// Whether every expectation held.
    pub passed: bool,
    /// Each expectation that did not, in words.
    pub failures: Vec<String>,
    /// How the last run ended (a batch's: `completed` when each job got
    /// an outcome).
    pub end: RecordedOutcome,
    /// For a batch, each job's end, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<RecordedOutcome>,
    /// The runs it took.
    pub runs: usize,
    /// The steps it ran.
    pub steps: Vec<String>,
    /// The requests it sent.
    pub requests: Vec<SentRequest>,
}

impl Fixture {
    /// The answers as a run's transcript (see [`super::run_answered`]).
    fn answers(&self) -> Transcript {
        let mut calls: Vec<Call> = self
            .config
            .iter()
            .map(|(key, value)| Call::Config {
                key: key.clone(),
                value: Some(value.clone()),
            })
            .collect();
        calls.extend(self.secrets.iter().map(|name| Call::Secret {
            name: name.clone(),
            answer: Answer::Ok(true),
        }));
        calls.extend(self.http.iter().map(|r| {
            let text = match &r.body {
                Value::String(text) => text.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            Call::Http {
                method: r.method.clone(),
                url: r.url.clone(),
                headers: Vec::new(),
                body: RecordedBody::of(b""),
                response: Some(RecordedResponse {
                    status: r.status,
                    headers: r.headers.clone().into_iter().collect(),
                    body: RecordedBody::of(text.as_bytes()),
                }),
                error: None,
            }
        }));
        for (id, outcome) in &self.waits {
            let came = (!outcome.is_null()).then(|| outcome.to_string());
            calls.push(Call::WaitBegin {
                id: id.clone(),
                what: RecordedWaitFor::Token,
                deadline: 0,
                answer: Answer::Ok(Some(came.clone())),
            });
            calls.push(Call::WaitLookup {
                id: id.clone(),
                answer: Answer::Ok(Some(RecordedWaitState {
                    deadline: 0,
                    outcome: Some(came),
                })),
            });
        }
        for (id, ends) in &self.invokes {
            calls.push(Call::InvokeState {
                id: id.clone(),
                answer: Answer::Ok(RecordedInvoke {
                    deadline: None,
                    ends: ends.iter().cloned().map(Some).collect(),
                }),
            });
        }
        if !self.children.is_empty() {
            calls.push(Call::ChildrenResults {
                answer: Answer::Ok(self.children.clone()),
            });
        }
        Transcript {
            job: self.job.recorded(),
            started_at: 0,
            calls,
            clock: Vec::new(),
            truncated: false,
            outcome: RecordedOutcome::Completed {
                output: "null".into(),
            },
            batch: None,
        }
    }

    /// Runs the fixture with `component` under `limits`: runs again after
    /// a sleep, and after a `guest_retry` failure while attempts remain;
    /// stops when the job completes, fails, or parks in a wait the fixture
    /// gives no outcome.
    pub async fn run(
        &self,
        name: String,
        sandbox: &Sandbox,
        component: &LoadedComponent,
        limits: &Limits,
    ) -> Outcome {
        let answers = self.answers();
        let state = Arc::new(Mutex::new(ReplayState::with_kv(self.kv.clone())));
        let key = SecretsKey::generate();
        let mut input = answers.job.input();
        let mut ran = Vec::new();
        let mut failures = Vec::new();
        if let Some(jobs) = &self.jobs {
            let inputs = jobs.iter().map(|j| j.recorded().input()).collect();
            let batch = super::run_batch_answered(
                sandbox, component, inputs, &answers, &state, &key, limits,
            )
            .await;
            ran.extend(batch);
        }
        while self.jobs.is_none() && ran.len() < MAX_RUNS {
            if !ran.is_empty() {
                state.lock().unwrap_or_else(|p| p.into_inner()).next_run();
            }
            let Some(run) = super::run_answered(
                sandbox,
                component,
                input.clone(),
                &answers,
                &state,
                &key,
                limits,
            )
            .await
            else {
                break;
            };
            let again = match &run.outcome {
                RecordedOutcome::Slept { .. } | RecordedOutcome::Later { .. } => true,
                RecordedOutcome::Failed { kind, .. } if kind == "guest_retry" => {
                    input.attempt < input.max_attempts && {
                        input.attempt += 1;
                        true
                    }
                }
                RecordedOutcome::Waited { id } => {
                    failures.push(format!(
                        "the job parked in wait `{id}`, which the fixture gives no outcome (add it under \"waits\")"
                    ));
                    false
                }
                RecordedOutcome::Invoked { id } => {
                    failures.push(format!(
                        "the job parked in invoke `{id}`, which the fixture gives no children's ends (add them under \"invokes\")"
                    ));
                    false
                }
                _ => false,
            };
            ran.push(run);
            if !again {
                break;
            }
        }
        let all: Vec<Effect> = ran.iter().flat_map(effects).collect();
        let steps: Vec<String> = all
            .iter()
            .filter_map(|e| match e {
                Effect::Step { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        let requests: Vec<SentRequest> = all
            .iter()
            .filter_map(|e| match e {
                Effect::Request(r) => Some(SentRequest {
                    method: r.method.clone(),
                    url: r.url.clone(),
                    body: r.body.clone(),
                }),
                _ => None,
            })
            .collect();
        let end = ran.last().map_or(
            RecordedOutcome::Failed {
                kind: "instantiation".into(),
                reason: "the handler did not run".into(),
            },
            |r| r.outcome.clone(),
        );
        let jobs: Vec<RecordedOutcome> = match (&self.jobs, ran.last()) {
            (Some(_), Some(run)) => run.job_ends().into_iter().map(|(_, o)| o.clone()).collect(),
            _ => Vec::new(),
        };
        failures.extend(
            self.expect
                .check(self.jobs.is_some(), &end, &jobs, &steps, &requests),
        );
        Outcome {
            name,
            passed: failures.is_empty(),
            failures,
            end,
            jobs,
            runs: ran.len(),
            steps,
            requests,
        }
    }
}

impl Expect {
    /// Each expectation that does not hold, in words: of a batch's run
    /// (`batch`, its jobs' ends `jobs`) or of one job's (`end`).
    fn check(
        &self,
        batch: bool,
        end: &RecordedOutcome,
        jobs: &[RecordedOutcome],
        steps: &[String],
        requests: &[SentRequest],
    ) -> Vec<String> {
        let mut failures = Vec::new();
        if batch {
            if self.output.is_some() || self.failure.is_some() {
                failures.push(
                    "expect.output and expect.failure are one job's: a batch's jobs' ends go under expect.jobs"
                        .into(),
                );
            }
            if !matches!(end, RecordedOutcome::Completed { .. }) {
                failures.push(format!(
                    "the batch {} as a whole",
                    super::compare::end_kind(end)
                ));
            } else if let Some(want) = &self.jobs {
                if want.len() != jobs.len() {
                    failures.push(format!(
                        "expect.jobs: {} ends for a batch of {} jobs",
                        want.len(),
                        jobs.len()
                    ));
                }
                for (i, (want, got)) in want.iter().zip(jobs).enumerate() {
                    for wrong in want_end(&want.output, &want.failure, got) {
                        failures.push(format!("job {}: {wrong}", i + 1));
                    }
                }
            }
        } else {
            failures.extend(want_end(&self.output, &self.failure, end));
        }
        if let Some(want) = &self.steps
            && want.as_slice() != steps
        {
            failures.push(format!("steps: expected {want:?}, got {steps:?}"));
        }
        if let Some(want) = &self.requests {
            if want.len() != requests.len() {
                failures.push(format!(
                    "requests: expected {}, got {}: {}",
                    want.len(),
                    requests.len(),
                    requests
                        .iter()
                        .map(|r| format!("{} {}", r.method, r.url))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            for (i, (w, got)) in want.iter().zip(requests).enumerate() {
                if w.method != got.method || w.url != got.url {
                    failures.push(format!(
                        "request {}: expected {} {}, got {} {}",
                        i + 1,
                        w.method,
                        w.url,
                        got.method,
                        got.url
                    ));
                    continue;
                }
                if let Some(body) = &w.body {
                    let same = match body {
                        Value::String(text) => text == &got.body,
                        json => {
                            serde_json::from_str::<Value>(&got.body).ok().as_ref() == Some(json)
                        }
                    };
                    if !same {
                        failures.push(format!(
                            "request {} ({} {}): expected body {body}, got {}",
                            i + 1,
                            got.method,
                            got.url,
                            got.body
                        ));
                    }
                }
            }
        }
        failures
    }
}

/// What is wrong with a job's end `end` when it must have output `output`
/// or fail with kind `failure` (nothing, when neither is given).
fn want_end(
    output: &Option<Value>,
    failure: &Option<String>,
    end: &RecordedOutcome,
) -> Vec<String> {
    match (output, failure, end) {
        (Some(want), _, RecordedOutcome::Completed { output }) => {
            let got: Value = serde_json::from_str(output).unwrap_or(Value::Null);
            if &got != want {
                return vec![format!("output: expected {want}, got {got}")];
            }
            Vec::new()
        }
        (_, Some(kind), RecordedOutcome::Failed { kind: got, .. }) if kind == got => Vec::new(),
        (Some(_), _, other) | (_, Some(_), other) => vec![format!(
            "expected {}, but the job {}",
            if output.is_some() {
                "an output"
            } else {
                "a failure"
            },
            super::compare::end_kind(other)
        )],
        (None, None, _) => Vec::new(),
    }
}

//! What a replay found: the recorded runs' effects against the replayed
//! ones', in order.
//!
//! An effect is what a run did to the world or to the job's durable state:
//! a step it ran (its id and result), a sleep or wait it reached, a KV
//! write or delete, an outbound request (method, URL, body). Reads are not
//! effects: their answers came from the recording. Both sides' effects of
//! all runs are laid end to end and walked together:
//!
//! - the first position where they name different things (another step,
//!   another URL, one side has none), or a run that ended another way
//!   (`completed` where the recording `slept`), is where the new version
//!   **diverged**: its step number is that position, from 1;
//! - before it, the same thing with another value (a step's result, a
//!   request's body, a KV value), or a run that ended the same way with
//!   another output or failure reason, makes them **different**;
//! - a batch run ends once per job: its jobs' ends are compared one by
//!   one, in the batch's order, as a run's end is;
//! - else they are the **same**.
//!
//! Requests are also matched as a whole, by method and URL: those only
//! the new version sent, those only the recording did, and those whose
//! body changed.

use serde::{Deserialize, Serialize};

use crate::sandbox::transcript::{Call, RecordedOutcome, RecordedWaitFor, Transcript};

/// A replay's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Every run ended the same way, with the same effects.
    Same,
    /// The same path, with some other value.
    Different,
    /// The new version took another path.
    Diverged,
}

impl Verdict {
    /// The verdict's word.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Same => "same",
            Verdict::Different => "different",
            Verdict::Diverged => "diverged",
        }
    }
}

/// One effect of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Effect {
    /// A step it ran, with its result.
    Step {
        /// The step.
        id: String,
        /// Its result (JSON text).
        output: String,
    },
    /// A durable sleep it reached.
    Sleep {
        /// The sleep.
        id: String,
    },
    /// A durable wait it reached.
    Wait {
        /// The wait.
        id: String,
        /// What for.
        what: RecordedWaitFor,
    },
    /// A KV write.
    KvSet {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// A KV delete.
    KvDelete {
        /// The key.
        key: String,
    },
    /// An outbound request.
    Request(Request),
}

/// An outbound request as compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// Its method.
    pub method: String,
    /// Its URL (secret placeholders named).
    pub url: String,
    /// Its body's text as recorded (cut at 16 KiB).
    pub body: String,
    /// The whole body's length.
    #[serde(skip)]
    pub body_len: u64,
}

impl Request {
    /// Whether both bodies are the same as far as recorded: the same
    /// kept text and the same length.
    fn same_body(&self, other: &Request) -> bool {
        self.body == other.body && self.body_len == other.body_len
    }
}

impl Effect {
    /// What it names, whatever its value: two effects with the same name
    /// are the same step (request, ...) of the path.
    fn name(&self) -> String {
        match self {
            Effect::Step { id, .. } => format!("step `{id}`"),
            Effect::Sleep { id } => format!("sleep `{id}`"),
            Effect::Wait { id, .. } => format!("wait `{id}`"),
            Effect::KvSet { key, .. } => format!("kv set `{key}`"),
            Effect::KvDelete { key } => format!("kv delete `{key}`"),
            Effect::Request(r) => format!("{} {}", r.method, r.url),
        }
    }

    /// How its value differs from `other`'s (the same name), if it does.
    fn difference(&self, other: &Effect) -> Option<String> {
        match (self, other) {
            (Effect::Step { id, output: a }, Effect::Step { output: b, .. }) if a != b => {
                Some(format!("step `{id}` recorded {a}, the new version {b}"))
            }
            (Effect::Wait { id, what: a }, Effect::Wait { what: b, .. }) if a != b => Some(
                format!("wait `{id}` waited for {a:?}, the new version for {b:?}"),
            ),
            (Effect::KvSet { key, value: a }, Effect::KvSet { value: b, .. }) if a != b => Some(
                format!("kv `{key}` was set to {a}, the new version sets {b}"),
            ),
            (Effect::Request(a), Effect::Request(b)) if !a.same_body(b) => Some(format!(
                "{} {}: the body was {}, the new version sends {}",
                a.method, a.url, a.body, b.body
            )),
            _ => None,
        }
    }
}

/// A run's effects, in order.
pub fn effects(run: &Transcript) -> Vec<Effect> {
    run.calls
        .iter()
        .filter_map(|call| match call {
            Call::StepRecord {
                id,
                output,
                error: None,
            } => Some(Effect::Step {
                id: id.clone(),
                output: output.clone(),
            }),
            Call::SleepRecord { id, .. } => Some(Effect::Sleep { id: id.clone() }),
            Call::WaitBegin { id, what, .. } => Some(Effect::Wait {
                id: id.clone(),
                what: what.clone(),
            }),
            Call::KvSet { key, value, .. } => Some(Effect::KvSet {
                key: key.clone(),
                value: value.clone(),
            }),
            Call::KvDelete { key, .. } => Some(Effect::KvDelete { key: key.clone() }),
            Call::Http {
                method, url, body, ..
            } => Some(Effect::Request(Request {
                method: method.clone(),
                url: url.clone(),
                body: body.text.clone(),
                body_len: body.len,
            })),
            _ => None,
        })
        .collect()
}

/// Where the new version took another path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    /// The effect's position, from 1, over all runs.
    pub step: usize,
    /// In which run (from 1).
    pub run: usize,
    /// What the recording did there (`null`: nothing more).
    pub recorded: Option<String>,
    /// What the new version did there (`null`: nothing more).
    pub replayed: Option<String>,
}

/// One run on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEnds {
    /// The run, from 1.
    pub run: usize,
    /// How the recorded run ended.
    #[schema(value_type = Object)]
    pub recorded: RecordedOutcome,
    /// How the replayed run ended.
    #[schema(value_type = Object)]
    pub replayed: RecordedOutcome,
    /// For a batch run, each of its jobs on both sides (the run's own end
    /// is then the batch's: `completed` when each job got an outcome).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobEnds>,
}

/// One job of a batch run on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobEnds {
    /// The job, `<queue>:<id>`.
    pub job: String,
    /// How it ended in the recorded run.
    #[schema(value_type = Object)]
    pub recorded: RecordedOutcome,
    /// How it ended in the replayed run.
    #[schema(value_type = Object)]
    pub replayed: RecordedOutcome,
}

/// A request, as the lists show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestShown {
    /// Its method.
    pub method: String,
    /// Its URL.
    pub url: String,
    /// Its body (cut at 16 KiB).
    pub body: String,
}

/// A request both sent, with another body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangedRequest {
    /// Its method.
    pub method: String,
    /// Its URL.
    pub url: String,
    /// The recorded body.
    pub recorded: String,
    /// The new version's.
    pub replayed: String,
}

/// The requests compared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Requests {
    /// Sent by the new version only.
    pub added: Vec<RequestShown>,
    /// Sent by the recording only.
    pub missing: Vec<RequestShown>,
    /// Sent by both (method and URL), with another body.
    pub changed: Vec<ChangedRequest>,
}

/// What a replay of one job found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The job, `<queue>:<id>`.
    pub job: String,
    /// Same, different or diverged.
    pub verdict: Verdict,
    /// Where it diverged, when it did.
    pub diverged_at: Option<Divergence>,
    /// Each run replayed: how it ended on both sides.
    pub runs: Vec<RunEnds>,
    /// The steps each side ran, in order.
    pub steps_recorded: Vec<String>,
    /// The new version's.
    pub steps_replayed: Vec<String>,
    /// The requests compared.
    pub requests: Requests,
    /// Every difference of value on the common path, in words.
    pub differences: Vec<String>,
    /// Whether a recorded transcript was cut at its size cap: calls past
    /// the cut were not recorded, so the replay cannot answer them.
    pub incomplete: bool,
}

impl Report {
    /// The exit code for the verdict: 0 same, 2 different, 3 diverged.
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            Verdict::Same => 0,
            Verdict::Different => 2,
            Verdict::Diverged => 3,
        }
    }

    /// One line saying what the replay found.
    pub fn summary(&self) -> String {
        match (&self.verdict, &self.diverged_at) {
            (Verdict::Diverged, Some(d)) => format!(
                "{}: diverged at step {} (run {}): recorded {}; the new version: {}",
                self.job,
                d.step,
                d.run,
                d.recorded.as_deref().unwrap_or("nothing more"),
                d.replayed.as_deref().unwrap_or("nothing more"),
            ),
            (verdict, _) => format!("{}: {}", self.job, verdict.as_str()),
        }
    }
}

/// How a run ended, in words: two runs that ended alike have the same.
pub fn end_kind(outcome: &RecordedOutcome) -> String {
    match outcome {
        RecordedOutcome::Completed { .. } => "completed".into(),
        RecordedOutcome::Failed { kind, .. } => format!("failed ({kind})"),
        RecordedOutcome::Slept { id } => format!("slept in `{id}`"),
        RecordedOutcome::Waited { id } => format!("waited in `{id}`"),
        RecordedOutcome::Invoked { id } => format!("invoked in `{id}`"),
        RecordedOutcome::Later { how, ms, .. } => format!("{how} {ms} ms"),
    }
}

/// Whether two runs ended alike: each job of theirs (the run's one, or
/// each of a batch's) the same way, in words ([`end_kind`]).
pub fn ended_alike(recorded: &Transcript, replayed: &Transcript) -> bool {
    compare_ends(1, recorded, replayed).is_ok()
}

/// Run `run`'s ends on both sides, job by job: the differences of value,
/// or, at the first job that ended another way (or a batch of other
/// jobs), what each side did there.
fn compare_ends(
    run: usize,
    old: &Transcript,
    new: &Transcript,
) -> Result<Vec<String>, (String, String)> {
    let (olds, news) = (old.job_ends(), new.job_ends());
    let batch = old.batch.is_some();
    if olds.len() != news.len() || batch != new.batch.is_some() {
        return Err((
            format!("a run of {} jobs", olds.len()),
            format!("a run of {} jobs", news.len()),
        ));
    }
    let mut differences = Vec::new();
    for ((job, o), (other, p)) in olds.into_iter().zip(news) {
        let who = if batch {
            format!("run {run}'s job `{}`", job.id)
        } else {
            format!("run {run}")
        };
        let (x, y) = (end_kind(o), end_kind(p));
        let the = if batch {
            format!("job `{}`", job.id)
        } else {
            "the run".to_string()
        };
        if job.id != other.id || x != y {
            let theirs = if batch {
                format!("job `{}`", other.id)
            } else {
                "the run".to_string()
            };
            return Err((format!("{the} {x}"), format!("{theirs} {y}")));
        }
        if o != p {
            differences.push(match (o, p) {
                (
                    RecordedOutcome::Completed { output: o },
                    RecordedOutcome::Completed { output: p },
                ) => format!("{who} returned {o}, the new version {p}"),
                (
                    RecordedOutcome::Failed { reason: o, .. },
                    RecordedOutcome::Failed { reason: p, .. },
                ) => format!("{who} failed with \"{o}\", the new version with \"{p}\""),
                _ => format!("{who} ended otherwise"),
            });
        }
    }
    Ok(differences)
}

/// A batch run's jobs' ends on both sides (none for a run of one job).
fn batch_ends(old: &Transcript, new: &Transcript) -> Vec<JobEnds> {
    if old.batch.is_none() {
        return Vec::new();
    }
    old.job_ends()
        .into_iter()
        .zip(new.job_ends())
        .map(|((job, o), (_, p))| JobEnds {
            job: airlock_core::job_ref::join(&job.queue, &job.id),
            recorded: o.clone(),
            replayed: p.clone(),
        })
        .collect()
}

/// Compares the recorded runs of job `job` (`<queue>:<id>`) with the
/// replayed ones (as many as were replayed: a replay stops after a run
/// that ended another way).
pub fn compare(job: &str, recorded: &[Transcript], replayed: &[Transcript]) -> Report {
    let job = job.to_string();
    let mut differences = Vec::new();
    let mut diverged_at: Option<Divergence> = None;
    let mut runs = Vec::new();
    let (mut all_recorded, mut all_replayed) = (Vec::new(), Vec::new());
    let mut position = 0;
    for (n, (old, new)) in recorded.iter().zip(replayed).enumerate() {
        let (a, b) = (effects(old), effects(new));
        if diverged_at.is_none() {
            for i in 0..a.len().max(b.len()) {
                let (x, y) = (a.get(i), b.get(i));
                let same_name = matches!((x, y), (Some(x), Some(y)) if x.name() == y.name());
                if !same_name {
                    diverged_at = Some(Divergence {
                        step: position + i + 1,
                        run: n + 1,
                        recorded: x.map(Effect::name),
                        replayed: y.map(Effect::name),
                    });
                    break;
                }
                if let (Some(x), Some(y)) = (x, y)
                    && let Some(d) = x.difference(y)
                {
                    differences.push(d);
                }
            }
        }
        if diverged_at.is_none() {
            match compare_ends(n + 1, old, new) {
                Err((x, y)) => {
                    diverged_at = Some(Divergence {
                        step: position + a.len() + 1,
                        run: n + 1,
                        recorded: Some(x),
                        replayed: Some(y),
                    });
                }
                Ok(found) => differences.extend(found),
            }
        }
        position += a.len().max(b.len());
        runs.push(RunEnds {
            run: n + 1,
            recorded: old.outcome.clone(),
            replayed: new.outcome.clone(),
            jobs: batch_ends(old, new),
        });
        all_recorded.extend(a);
        all_replayed.extend(b);
    }
    let steps = |effects: &[Effect]| -> Vec<String> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Step { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect()
    };
    let requests = requests(&all_recorded, &all_replayed);
    let verdict = if diverged_at.is_some() {
        Verdict::Diverged
    } else if !differences.is_empty() {
        Verdict::Different
    } else {
        Verdict::Same
    };
    Report {
        job,
        verdict,
        diverged_at,
        runs,
        steps_recorded: steps(&all_recorded),
        steps_replayed: steps(&all_replayed),
        requests,
        differences,
        incomplete: recorded.iter().any(|t| t.truncated),
    }
}

/// The requests matched by method and URL, in order.
fn requests(recorded: &[Effect], replayed: &[Effect]) -> Requests {
    let only = |effects: &[Effect]| -> Vec<Request> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Request(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    };
    let mut old: Vec<Option<Request>> = only(recorded).into_iter().map(Some).collect();
    let mut out = Requests::default();
    for new in only(replayed) {
        let found = old.iter_mut().find_map(|slot| {
            let matches = slot
                .as_ref()
                .is_some_and(|r| r.method == new.method && r.url == new.url);
            if matches { slot.take() } else { None }
        });
        match found {
            Some(was) if !was.same_body(&new) => out.changed.push(ChangedRequest {
                method: new.method,
                url: new.url,
                recorded: was.body,
                replayed: new.body,
            }),
            Some(_) => {}
            None => out.added.push(RequestShown {
                method: new.method,
                url: new.url,
                body: new.body,
            }),
        }
    }
    out.missing = old
        .into_iter()
        .flatten()
        .map(|r| RequestShown {
            method: r.method,
            url: r.url,
            body: r.body,
        })
        .collect();
    out
}

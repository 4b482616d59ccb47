//! Replaying a recorded job against another handler version.
//!
//! A binding with `recordTranscripts` keeps each run's transcript
//! (`sandbox::transcript`): the job as the run received it and every
//! answer it got from outside its sandbox. A replay runs the job again in
//! a local sandbox, one run per recorded run, with the same job input
//! (attempt numbers included), answering every call of the new version
//! from the recorded run's answers ([`services`], [`answers`]):
//! no network, no Redis, no write anywhere; sleeps are skipped, waits get
//! the outcomes the recording got, and the guest's wall clock reads what
//! the recorded run's read, in order (then the real clock). Then it compares both sides' effects
//! ([`compare`]): the same, different values, or another path from step N
//! on.
//!
//! A replay stops after a run that ended otherwise than its recorded run
//! (the recording has nothing to answer the rest with). A run's limits
//! are the sandbox defaults the replay is given; the new version's fuel
//! and time are its own.
//!
//! A run recorded in a batch is replayed as the batch it was: one call of
//! the new version's `run-batch` with every job of the recorded batch, in
//! its order, under the given limits scaled as the host scaled them (fuel
//! and time times its jobs), each job's end compared with its recorded
//! one.

pub mod answers;
pub mod compare;
pub mod fixture;
pub mod services;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::sandbox::secrets::SecretsKey;
use crate::sandbox::transcript::{Call, Transcript, TranscriptRecorder};
use crate::sandbox::{Limits, LoadedComponent, RunEnv, Sandbox};

pub use self::compare::{Report, Verdict};

/// Replays the recorded runs `recorded` (oldest first) of job `job`
/// (`<queue>:<id>`) with `component` under `limits`; what it found.
pub async fn replay(
    sandbox: &Sandbox,
    component: &LoadedComponent,
    job: &str,
    recorded: &[Transcript],
    limits: &Limits,
) -> Report {
    let state = Arc::new(Mutex::new(services::ReplayState::default()));
    let key = SecretsKey::generate();
    let mut replayed = Vec::new();
    for (n, old) in recorded.iter().enumerate() {
        if n > 0 {
            state.lock().unwrap_or_else(|p| p.into_inner()).next_run();
        }
        let new = match &old.batch {
            Some(jobs) => {
                let inputs = jobs.iter().map(|b| b.job.input()).collect();
                run_batch_answered(sandbox, component, inputs, old, &state, &key, limits).await
            }
            None => {
                let input = old.job.input();
                run_answered(sandbox, component, input, old, &state, &key, limits).await
            }
        };
        let Some(new) = new else {
            break;
        };
        let ended_alike = compare::ended_alike(old, &new);
        replayed.push(new);
        if !ended_alike {
            break;
        }
    }
    compare::compare(job, recorded, &replayed)
}

/// Runs `input` once with every call answered from `answers` (a recorded
/// run's transcript, or a fixture's canned one) over `state`; the run's own
/// transcript.
async fn run_answered(
    sandbox: &Sandbox,
    component: &LoadedComponent,
    input: crate::sandbox::JobInput,
    answers: &Transcript,
    state: &Arc<Mutex<services::ReplayState>>,
    key: &SecretsKey,
    limits: &Limits,
) -> Option<Transcript> {
    let services = services::ReplayServices::new(answers, state.clone(), key.clone());
    let env = answered_env(answers, key);
    sandbox
        .run_async(component, input, limits, Box::new(services), None, env)
        .await
        .transcript
}

/// Runs `jobs` as one batch (`run-batch`), with every call answered from
/// `answers` over `state`, under `limits` scaled to the batch as a host
/// scales them; the batch's transcript, which lists each job's end.
async fn run_batch_answered(
    sandbox: &Sandbox,
    component: &LoadedComponent,
    jobs: Vec<crate::sandbox::JobInput>,
    answers: &Transcript,
    state: &Arc<Mutex<services::ReplayState>>,
    key: &SecretsKey,
    limits: &Limits,
) -> Option<Transcript> {
    let services = services::ReplayServices::new(answers, state.clone(), key.clone());
    let env = answered_env(answers, key);
    let limits = crate::worker::batches::scaled(limits, jobs.len(), &sandbox.config().maxima);
    sandbox
        .run_batch_async(component, jobs, &limits, Box::new(services), None, env)
        .await
        .run
        .transcript
}

/// A run's environment whose every answer comes from `answers`: its
/// configuration, its requests' responses, its wall clock; the run
/// recorded, to compare.
fn answered_env(answers: &Transcript, key: &SecretsKey) -> RunEnv {
    RunEnv {
        config: Arc::new(config_of(answers)),
        secrets_key: Some(key.clone()),
        transcript: Some(Arc::new(TranscriptRecorder::default())),
        http_answers: Some(Arc::new(answers::RecordedAnswers::new(answers))),
        clock_readings: Some(answers.clock.clone()),
        ..RunEnv::default()
    }
}

/// The configuration the recorded run read: what the new version reads
/// of it (a key the recording never read is absent).
fn config_of(run: &Transcript) -> BTreeMap<String, String> {
    run.calls
        .iter()
        .filter_map(|call| match call {
            Call::Config {
                key,
                value: Some(value),
            } => Some((key.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

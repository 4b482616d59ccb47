//! Batch handlers: one call with many jobs (a queue bound with `batch`),
//! one outcome per job. The glue between the `batch-handler` world's
//! exports and a typed batch function.
//!
//! ```ignore
//! use airlock_guest::{BatchJob, Context, JobError};
//!
//! fn insert(ctx: &Context, jobs: Vec<BatchJob<Row>>) -> Vec<Result<Saved, JobError>> {
//!     // one request for every row, then one outcome per job, in order
//! }
//!
//! airlock_guest::batch_handler!(insert);
//! ```
//!
//! What the SDK does:
//! - a job whose data does not fit the input type fails on its own as
//!   *fatal*, naming the field; the function gets the others;
//! - the function returns one outcome per job it got, in order: each job
//!   then completes, retries or fails on its own; a list of another length
//!   fails every job as *fatal*;
//! - a panic fails (and retries) every job of the batch;
//! - `run` (one job, as the `handler` world's) calls the same function
//!   with a batch of one, so the component also serves a queue bound
//!   without `batch`.
//!
//! In a batch, the [`Context`] is the batch's: [`Context::job`] is its
//! first job, progress and log lines go to every job of the batch, and
//! KV, configuration, secrets and HTTP work as in a single run. Durable
//! steps, sleeps, waits, children and starts belong to one job: the host
//! refuses them in a batch, and the whole batch fails as *fatal*, naming
//! the call.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::airlock::job::types::{Job, JobError as WitJobError};
use crate::context::{Context, JobInfo};
use crate::error::JobError;

/// One job of a batch: who it is, and its decoded input.
#[derive(Debug, Clone)]
pub struct BatchJob<I> {
    /// The job (id, queue, name, attempt, ...).
    pub job: JobInfo,
    /// Its data, decoded.
    pub input: I,
}

/// Runs `handler` on `jobs`: decodes each job's data (one that does not
/// decode fails alone, fatally), calls the handler with the rest and puts
/// each outcome back in its job's place. Called by [`crate::batch_handler!`].
pub fn run_batch_handler<I, O, F>(jobs: Vec<Job>, handler: F) -> Vec<Result<String, WitJobError>>
where
    I: DeserializeOwned,
    O: Serialize,
    F: FnOnce(&Context, Vec<BatchJob<I>>) -> Vec<Result<O, JobError>>,
{
    crate::run::install_panic_reporter();
    crate::http::begin_job();
    let count = jobs.len();
    let Some(first) = jobs.first() else {
        return Vec::new();
    };
    let ctx = Context::new(crate::run::job_info(first.clone()));
    let mut outcomes: Vec<Option<Result<String, WitJobError>>> = vec![None; count];
    let mut decoded = Vec::with_capacity(count);
    let mut places = Vec::with_capacity(count);
    for (place, job) in jobs.into_iter().enumerate() {
        match crate::run::decode_input::<I>(&job.data) {
            Ok(input) => {
                places.push(place);
                decoded.push(BatchJob {
                    job: crate::run::job_info(job),
                    input,
                });
            }
            Err(e) => outcomes[place] = Some(Err(e)),
        }
    }
    let asked = decoded.len();
    let answered = if asked == 0 {
        Vec::new()
    } else {
        handler(&ctx, decoded)
    };
    if answered.len() != asked {
        let reason = format!(
            "the batch handler returned {} outcomes for {asked} jobs",
            answered.len()
        );
        return (0..count)
            .map(|_| Err(WitJobError::Fatal(reason.clone())))
            .collect();
    }
    for (place, outcome) in places.into_iter().zip(answered) {
        outcomes[place] = Some(match outcome {
            Ok(output) => serde_json::to_string(&output).map_err(|e| {
                WitJobError::Fatal(format!("handler output could not be encoded as JSON: {e}"))
            }),
            Err(e) => Err(WitJobError::from(e)),
        });
    }
    outcomes
        .into_iter()
        .map(|o| o.expect("every job has an outcome"))
        .collect()
}

/// Runs one job through a batch handler: a batch of one.
pub fn run_one<I, O, F>(job: Job, handler: F) -> Result<String, WitJobError>
where
    I: DeserializeOwned,
    O: Serialize,
    F: FnOnce(&Context, Vec<BatchJob<I>>) -> Vec<Result<O, JobError>>,
{
    run_batch_handler(vec![job], handler)
        .pop()
        .unwrap_or_else(|| Err(WitJobError::Fatal("the batch handler ran no job".into())))
}

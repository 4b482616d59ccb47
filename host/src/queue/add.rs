//! Adding jobs: BullMQ's add, with the per-job state Airlock carries
//! beside it (the producer, its seal, per-job limits) claimed before the add
//! and committed after it (crash windows: see [`meta`]).

use std::collections::HashMap;

use super::options::ToBullmq;
use super::{JobOptions, QueueError, QueueService};
use crate::state::meta::{self, Claim};

/// Result of an enqueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueued {
    /// The job's id.
    pub id: String,
    /// True when a job with this id (or deduplication id) already existed,
    /// so nothing new was added.
    pub duplicate: bool,
}

/// One job to enqueue.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// BullMQ job name.
    pub name: String,
    /// Job data.
    pub data: serde_json::Value,
    /// Options, already merged with the binding's defaults.
    pub opts: JobOptions,
    /// The API token adding it: only it (and admin/reader tokens) may read
    /// the job through the API.
    pub producer: Option<String>,
    /// The trace its runs continue, as BullMQ's telemetry writes it (JSON
    /// of W3C `traceparent`/`tracestate`; see `crate::traces`). Carried
    /// like per-job limits: a job with one is claimed on a known id.
    pub trace: Option<String>,
    /// The job this one is a child of, `(queue, id)`: BullMQ's `parent`
    /// option with `ignoreDependencyOnFailure` (a child's failure for good
    /// is recorded in the parent's `failed` hash and the parent goes on),
    /// as `context.invoke` adds them (`worker::starts`).
    pub parent: Option<(String, String)>,
}

/// How one job of an add goes in (see [`meta`] for why).
enum Route {
    /// Nothing of Airlock's to carry: BullMQ's add as asked.
    Plain,
    /// A producer only, on a BullMQ-generated id: add, then record it.
    ThenProducer,
    /// State to carry on an id known before the add: claim, add, commit.
    Claimed(Box<meta::Pending>),
}

impl QueueService {
    /// Enqueues one job.
    pub async fn add(&self, queue: &str, job: NewJob) -> Result<Enqueued, QueueError> {
        Ok(self.add_bulk(queue, vec![job]).await?.remove(0))
    }

    /// Enqueues several jobs. Every job is validated before any is added,
    /// so a bad request adds nothing. A duplicate (an id that exists, or is
    /// being added by another producer) changes nothing about the existing
    /// job.
    pub async fn add_bulk(
        &self,
        queue: &str,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<Enqueued>, QueueError> {
        for job in &jobs {
            job.opts.validate()?;
        }
        let q = self.queue(queue).await?;

        let mut routes = Vec::with_capacity(jobs.len());
        let mut jobs = jobs;
        for job in &mut jobs {
            let mut pending = meta::Pending {
                producer: job.producer.clone(),
                seal: None,
                limits: job.opts.limits.clone(),
                trace: job.trace.clone(),
            };
            let known_id = job.opts.job_id.is_some()
                || job.opts.deduplication.is_some()
                || pending.limits.is_some()
                || pending.trace.is_some();
            routes.push(match (pending.is_empty(), known_id) {
                (true, _) => Route::Plain,
                (false, false) => Route::ThenProducer,
                (false, true) => {
                    let id = job.opts.job_id.get_or_insert_with(new_job_id);
                    if let Some(producer) = &pending.producer {
                        pending.seal = self
                            .state
                            .meta
                            .seal(queue, id, producer, &job.name, &job.data);
                    }
                    Route::Claimed(Box::new(pending))
                }
            });
        }

        // Claims, in one round trip.
        let claims: Vec<(&str, &meta::Pending)> = jobs
            .iter()
            .zip(&routes)
            .filter_map(|(job, route)| match route {
                Route::Claimed(p) => Some((job.opts.job_id.as_deref().unwrap_or_default(), &**p)),
                _ => None,
            })
            .collect();
        let mut claim_results = self.state.meta.claim(queue, &claims).await?.into_iter();
        let mut outcome: Vec<Option<Enqueued>> = Vec::with_capacity(jobs.len());
        let mut existing: Vec<String> = Vec::new();
        for (job, route) in jobs.iter().zip(&routes) {
            let claimed = match route {
                Route::Claimed(_) => claim_results.next().unwrap_or(Claim::Exists),
                _ => Claim::Mine,
            };
            outcome.push(match claimed {
                Claim::Mine => None,
                Claim::Exists | Claim::Taken => {
                    let id = job.opts.job_id.clone().unwrap_or_default();
                    if claimed == Claim::Exists {
                        existing.push(id.clone());
                    }
                    Some(Enqueued {
                        id,
                        duplicate: true,
                    })
                }
            });
        }

        // Whether plain adds with an id will be duplicates: only for the
        // answer's `duplicate` flag (a race makes it say false wrongly, never
        // changes what is stored).
        let mut known_before = vec![false; jobs.len()];
        for (i, (job, route)) in jobs.iter().zip(&routes).enumerate() {
            if !matches!(route, Route::Plain) || outcome[i].is_some() {
                continue;
            }
            let exists = match &job.opts.job_id {
                Some(id) => self.store.exists(&self.job_key(queue, id)).await?,
                None => false,
            };
            // A live deduplication key makes BullMQ answer with the job that
            // holds it instead of adding one (even after that job is gone).
            known_before[i] = exists
                || match &job.opts.deduplication {
                    Some(dedup) => q.get_deduplication_job_id(&dedup.id).await?.is_some(),
                    None => false,
                };
        }

        let mut to_add = Vec::new();
        let mut added_at = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            if outcome[i].is_none() {
                added_at.push(i);
                let mut opts = job.opts.to_bullmq();
                if let Some((queue, id)) = &job.parent {
                    opts.parent = Some(bullmq::ParentOptions {
                        queue: format!("{}:{queue}", self.prefix()),
                        id: id.clone(),
                        wait_children: None,
                    });
                    opts.ignore_dependency_on_failure = Some(true);
                }
                to_add.push(bullmq::BulkJob::with_options(
                    job.name.clone(),
                    job.data.clone(),
                    opts,
                ));
            }
        }
        // After this point claims are never released: an add that failed on
        // the wire may still have happened, and its job needs the pending
        // state (which expires on its own otherwise).
        let added = if to_add.is_empty() {
            Vec::new()
        } else {
            q.add_bulk(to_add).await?
        };

        let mut commits: Vec<String> = existing;
        let mut producers: Vec<(String, String, Option<String>)> = Vec::new();
        for (i, job) in added_at.into_iter().zip(added) {
            let id = job.id().to_string();
            let requested = jobs[i].opts.job_id.as_deref();
            // A deduplicated add answers with the existing job's id.
            let replaced = requested.is_some_and(|r| r != id);
            match &routes[i] {
                Route::Claimed(_) => {
                    if let Some(r) = requested {
                        commits.push(r.to_string());
                    }
                    if replaced {
                        commits.push(id.clone());
                    }
                }
                Route::ThenProducer => {
                    if let Some(p) = &jobs[i].producer {
                        let seal =
                            self.state
                                .meta
                                .seal(queue, &id, p, &jobs[i].name, &jobs[i].data);
                        producers.push((id.clone(), p.clone(), seal));
                    }
                }
                Route::Plain => {}
            }
            outcome[i] = Some(Enqueued {
                id,
                duplicate: known_before[i] || replaced,
            });
        }
        let commit_ids: Vec<&str> = commits.iter().map(String::as_str).collect();
        self.state.meta.commit(queue, &commit_ids).await?;
        let mut by_producer: HashMap<&str, Vec<(&str, Option<String>)>> = HashMap::new();
        for (id, producer, seal) in &producers {
            by_producer
                .entry(producer)
                .or_default()
                .push((id, seal.clone()));
        }
        for (producer, ids) in by_producer {
            self.state.meta.set_producer(queue, &ids, producer).await?;
        }
        Ok(outcome
            .into_iter()
            .map(|o| o.expect("every job has an outcome"))
            .collect())
    }
}

/// A job id Airlock chooses (`j-<uuid>`): where the add must carry its id
/// (the job's producer written with it), and every node of a flow. Never
/// an integer, so a rerun reads the job's pin (`worker::executor`).
pub fn new_job_id() -> String {
    format!("j-{}", uuid::Uuid::new_v4().simple())
}

//! Job options (`airlock_core::job_options`, re-exported here) as the
//! BullMQ port takes them: the one place Airlock's options become the
//! port's.

pub use airlock_core::job_options::*;

/// Airlock's job options in the BullMQ port's terms.
pub(crate) trait ToBullmq {
    /// The BullMQ options these translate to.
    fn to_bullmq(&self) -> bullmq::JobOptions;
}

impl ToBullmq for JobOptions {
    fn to_bullmq(&self) -> bullmq::JobOptions {
        let retention = |r: &Retention| match r {
            Retention::Remove(b) => bullmq::types::RemoveOnFinish::Bool(*b),
            Retention::Count(n) => bullmq::types::RemoveOnFinish::Count(*n as usize),
            Retention::Keep(KeepJobs { age, count }) => {
                bullmq::types::RemoveOnFinish::Options(bullmq::types::KeepJobs {
                    age: *age,
                    count: count.map(|c| c as usize),
                    limit: None,
                })
            }
        };
        bullmq::JobOptions {
            job_id: self.job_id.clone(),
            delay: self.delay.filter(|d| *d > 0),
            priority: self.priority.filter(|p| *p > 0),
            lifo: self.lifo.filter(|l| *l),
            attempts: self.attempts,
            backoff: self.backoff.as_ref().map(|b| match b {
                Backoff::Fixed { delay } => bullmq::types::BackoffStrategy::Fixed(*delay),
                Backoff::Exponential { delay } => {
                    bullmq::types::BackoffStrategy::Exponential(*delay)
                }
            }),
            remove_on_complete: self.remove_on_complete.as_ref().map(retention),
            remove_on_fail: self.remove_on_fail.as_ref().map(retention),
            deduplication: self
                .deduplication
                .as_ref()
                .map(|d| bullmq::DeduplicationOptions {
                    id: d.id.clone(),
                    ttl: d.ttl,
                    extend: d.extend,
                    replace: d.replace,
                    ..Default::default()
                }),
            ..Default::default()
        }
    }
}

//! Test guest built against the pinned `airlock:job@0.2.0` contract
//! (`wit/deps/airlock-job-0.2.0`), with wit-bindgen directly rather than
//! the SDK (which follows the current contract): proves that handlers
//! built before 0.3.0 keep running. It logs, reports progress, records a
//! step, reads the binding's configuration and returns what it saw.

wit_bindgen::generate!({
    world: "handler",
    path: "../../wit/deps/airlock-job-0.2.0/airlock.wit",
});

use airlock::job::types::{LogLevel, Progress};
use airlock::job::{config, context};

struct Legacy;

impl Guest for Legacy {
    fn run(job: Job) -> Result<String, JobError> {
        context::log(
            LogLevel::Info,
            &format!("0.2.0 handler runs job {}", job.id),
        );
        context::report_progress(&Progress::Percent(50));
        let recorded = context::step_lookup("legacy-step")
            .map_err(|e| JobError::Retry(format!("step lookup: {e:?}")))?;
        if recorded.is_none() {
            context::step_record("legacy-step", "1")
                .map_err(|e| JobError::Retry(format!("step record: {e:?}")))?;
        }
        Ok(format!(
            r#"{{"contract":"0.2.0","id":{:?},"configKeys":{:?},"data":{}}}"#,
            job.id,
            config::keys(),
            job.data
        ))
    }
}

export!(Legacy);

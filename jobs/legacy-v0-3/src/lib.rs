//! Test guest built against the pinned `airlock:job@0.3.0` contract
//! (`wit/deps/airlock-job-0.3.0`), with wit-bindgen directly rather than
//! the SDK (which follows the current contract): proves that handlers
//! built before 0.4.0 keep running. It logs, reports progress, records a
//! step, reads the binding's configuration, asks for a wait token (an
//! import 0.3.0 added) and returns what it saw.

wit_bindgen::generate!({
    world: "handler",
    path: "../../wit/deps/airlock-job-0.3.0/airlock.wit",
});

use airlock::job::types::{HostError, LogLevel, Progress};
use airlock::job::{config, context};

struct Legacy;

impl Guest for Legacy {
    fn run(job: Job) -> Result<String, JobError> {
        context::log(
            LogLevel::Info,
            &format!("0.3.0 handler runs job {}", job.id),
        );
        context::report_progress(&Progress::Percent(50));
        let recorded = context::step_lookup("legacy-step")
            .map_err(|e| JobError::Retry(format!("step lookup: {e:?}")))?;
        if recorded.is_none() {
            context::step_record("legacy-step", "1")
                .map_err(|e| JobError::Retry(format!("step record: {e:?}")))?;
        }
        // Whatever the host's services answer, the import links and is
        // served: a token, or why there is none (no waits in-process).
        let token = match context::wait_token("approval") {
            Ok(_) => "token",
            Err(HostError::Unsupported(_)) => "unsupported",
            Err(_) => "error",
        };
        Ok(format!(
            r#"{{"contract":"0.3.0","id":{:?},"configKeys":{:?},"waitToken":{:?},"data":{}}}"#,
            job.id,
            config::keys(),
            token,
            job.data
        ))
    }
}

export!(Legacy);

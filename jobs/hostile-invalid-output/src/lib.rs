//! Hostile: bypasses the SDK and returns text that is not JSON. Must be
//! rejected as `invalid_output`.

use airlock_guest::bindings::Guest;
use airlock_guest::bindings::airlock::job::types::{Job, JobError};

struct NotJson;

impl Guest for NotJson {
    fn run(_job: Job) -> Result<String, JobError> {
        Ok("this is {not json".to_string())
    }
}

airlock_guest::bindings::__export_handler_world!(NotJson with_types_in airlock_guest::bindings);

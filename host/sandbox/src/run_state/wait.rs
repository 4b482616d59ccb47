//! The durable wait protocol behind `wait-for-event` and `wait-for-token`:
//! check the wait, look up or record it with its deadline, and either
//! return its outcome or park the job ([`Suspend`]) until then.

use super::{MAX_SLEEP_MS, RunState, Suspend};
use crate::bindings::{EventMatch, HostError};
use crate::services::{WaitFor, WaitState};
use airlock_core::clock::now_ms;

/// Longest event name a wait may name (as `POST /v1/events` accepts).
const MAX_EVENT_NAME_BYTES: usize = 256;
/// Largest value a wait's event match may hold, as JSON text.
const MAX_MATCH_VALUE_BYTES: usize = 1024;

impl RunState {
    /// The durable wait `wait_id` for `what`, up to `timeout_ms`: its
    /// recorded outcome, or one that already came, or (stopping the guest)
    /// a park until the deadline. The first run that reaches the wait
    /// records it and its deadline; replays keep both.
    pub(super) async fn wait(
        &mut self,
        wait_id: String,
        what: WaitFor,
        timeout_ms: u64,
    ) -> wasmtime::Result<Result<Option<String>, HostError>> {
        if let Err(e) = Self::check_key("wait id", &wait_id) {
            return Ok(Err(e));
        }
        if timeout_ms > MAX_SLEEP_MS {
            return Ok(Err(HostError::Invalid(format!(
                "a durable wait may last at most a year ({MAX_SLEEP_MS} ms); this one asked for {timeout_ms} ms"
            ))));
        }
        let deadline = match self.services.wait_lookup(&wait_id).await {
            Err(e) => return Ok(Err(self.host_error(e))),
            Ok(Some(WaitState {
                outcome: Some(outcome),
                ..
            })) => return Ok(Ok(outcome.into_option())),
            Ok(Some(WaitState { deadline_ms, .. })) => deadline_ms,
            Ok(None) => {
                let deadline = now_ms().saturating_add(timeout_ms);
                match self.services.wait_begin(&wait_id, &what, deadline).await {
                    Err(e) => return Ok(Err(self.host_error(e))),
                    Ok(Some(outcome)) => return Ok(Ok(outcome.into_option())),
                    Ok(None) => deadline,
                }
            }
        };
        if deadline <= now_ms() {
            return Ok(match self.services.wait_expire(&wait_id).await {
                Ok(outcome) => Ok(outcome.into_option()),
                Err(e) => Err(self.host_error(e)),
            });
        }
        self.suspended = Some((deadline, crate::outcome::SuspendedOn::Wait(wait_id)));
        Err(wasmtime::Error::new(Suspend))
    }

    /// An event wait's name and match, checked.
    pub(super) fn event_wait(
        &self,
        event: String,
        matching: Option<EventMatch>,
    ) -> Result<WaitFor, HostError> {
        if event.is_empty() || event.len() > MAX_EVENT_NAME_BYTES {
            return Err(HostError::Invalid(format!(
                "an event name is 1 to {MAX_EVENT_NAME_BYTES} bytes; this one is {}",
                event.len()
            )));
        }
        let matching = match matching {
            None => None,
            Some(EventMatch { path, value }) => {
                if let Err(e) = airlock_core::json_path::JsonPath::parse(&path) {
                    return Err(HostError::Invalid(format!("match path `{path}`: {e}")));
                }
                if value.len() > MAX_MATCH_VALUE_BYTES {
                    return Err(HostError::Invalid(format!(
                        "the match value is {} bytes, the maximum is {MAX_MATCH_VALUE_BYTES}",
                        value.len()
                    )));
                }
                match serde_json::from_str(&value) {
                    Ok(value) => Some((path, value)),
                    Err(e) => {
                        return Err(HostError::Invalid(format!(
                            "the match value is not JSON text: {e}"
                        )));
                    }
                }
            }
        };
        Ok(WaitFor::Event {
            name: event,
            matching,
        })
    }
}

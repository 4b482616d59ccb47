//! The `context` and `config` imports of older contract versions (0.1.0
//! to 0.5.0), each function forwarded to the current one. Apart because
//! it is only compatibility: no behaviour of its own.

use super::RunState;
use crate::bindings::airlock::job0_6_0::{config, context};
use crate::bindings::{
    ChildEnd, ChildResult, EventMatch, HostError, HttpRefusal, JobRef, LogLevel, NewJob, Progress,
};
use crate::bindings::{v0_1, v0_2, v0_3, v0_4, v0_5};

/// Implements an older contract's `context` by forwarding every function
/// to the current one: its functions are a subset of today's (`$more`: the
/// ones a later version added, beyond 0.1.0's).
macro_rules! forward_context {
    ([$($host:tt)+] { $($more:tt)* }) => {
        impl $($host)+ for RunState {
            $($more)*

            async fn report_progress(&mut self, value: Progress) {
                context::Host::report_progress(self, value).await
            }

            async fn log(&mut self, level: LogLevel, message: String) {
                context::Host::log(self, level, message).await
            }

            async fn step_lookup(&mut self, step_id: String) -> Result<Option<String>, HostError> {
                context::Host::step_lookup(self, step_id).await
            }

            async fn step_record(&mut self, step_id: String, output: String) -> Result<(), HostError> {
                context::Host::step_record(self, step_id, output).await
            }

            async fn sleep_until(
                &mut self,
                step_id: String,
                wake_at_ms: u64,
            ) -> wasmtime::Result<Result<(), HostError>> {
                context::Host::sleep_until(self, step_id, wake_at_ms).await
            }

            async fn children_results(&mut self) -> Result<Vec<ChildResult>, HostError> {
                context::Host::children_results(self).await
            }

            async fn kv_get(&mut self, key: String) -> Result<Option<String>, HostError> {
                context::Host::kv_get(self, key).await
            }

            async fn kv_set(
                &mut self,
                key: String,
                value: String,
                ttl_ms: Option<u64>,
            ) -> Result<(), HostError> {
                context::Host::kv_set(self, key, value, ttl_ms).await
            }

            async fn kv_set_if_absent(
                &mut self,
                key: String,
                value: String,
                ttl_ms: Option<u64>,
            ) -> Result<bool, HostError> {
                context::Host::kv_set_if_absent(self, key, value, ttl_ms).await
            }

            async fn kv_delete(&mut self, key: String) -> Result<bool, HostError> {
                context::Host::kv_delete(self, key).await
            }

            async fn report_panic(&mut self, message: String) {
                context::Host::report_panic(self, message).await
            }
        }
    };
}

/// The durable waits (0.3.0 on), forwarded: used inside a
/// [`forward_context!`] of a version that has them.
macro_rules! forward_waits {
    () => {
        async fn wait_for_event(
            &mut self,
            step_id: String,
            event: String,
            matching: Option<EventMatch>,
            timeout_ms: u64,
        ) -> wasmtime::Result<Result<Option<String>, HostError>> {
            context::Host::wait_for_event(self, step_id, event, matching, timeout_ms).await
        }

        async fn wait_token(&mut self, step_id: String) -> Result<String, HostError> {
            context::Host::wait_token(self, step_id).await
        }

        async fn wait_for_token(
            &mut self,
            step_id: String,
            timeout_ms: u64,
        ) -> wasmtime::Result<Result<Option<String>, HostError>> {
            context::Host::wait_for_token(self, step_id, timeout_ms).await
        }
    };
}

// Handlers built against `airlock:job@0.1.0` import `context` under its
// old name; its functions are the current ones.
forward_context!([v0_1::airlock::job0_1_0::context::Host] {});

// Handlers built against `airlock:job@0.2.0` import `context` (without
// the waits) and `config` under their old names; their functions are the
// current ones.
forward_context!([v0_2::airlock::job0_2_0::context::Host] {});

// Handlers built against `airlock:job@0.3.0` import `context` (without
// `http-refusals`) and `config` under their old names.
forward_context!([v0_3::airlock::job0_3_0::context::Host] {
    forward_waits!();
});

// Handlers built against `airlock:job@0.4.0` import `context` (without
// the calls that start work or end the run) and `config` under their old
// names.
forward_context!([v0_4::airlock::job0_4_0::context::Host] {
    forward_waits!();

    async fn http_refusals(&mut self) -> Vec<HttpRefusal> {
        context::Host::http_refusals(self).await
    }
});

// Handlers built against `airlock:job@0.5.0` import the same `context`
// and `config` as 0.6.0's (which adds only the `batch-handler` world)
// under their old names.
forward_context!([v0_5::airlock::job0_5_0::context::Host] {
    forward_waits!();

    async fn http_refusals(&mut self) -> Vec<HttpRefusal> {
        context::Host::http_refusals(self).await
    }

    async fn enqueue(
        &mut self,
        step_id: String,
        job: NewJob,
    ) -> wasmtime::Result<Result<JobRef, HostError>> {
        context::Host::enqueue(self, step_id, job).await
    }

    async fn invoke(
        &mut self,
        step_id: String,
        jobs: Vec<NewJob>,
        max_running: Option<u32>,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Vec<ChildEnd>, HostError>> {
        context::Host::invoke(self, step_id, jobs, max_running, timeout_ms).await
    }

    async fn send_event(
        &mut self,
        step_id: String,
        name: String,
        data: String,
    ) -> wasmtime::Result<Result<String, HostError>> {
        context::Host::send_event(self, step_id, name, data).await
    }

    async fn retry_after(&mut self, delay_ms: u64, reason: String) -> wasmtime::Result<()> {
        context::Host::retry_after(self, delay_ms, reason).await
    }

    async fn rate_limit(&mut self, duration_ms: u64, reason: String) -> wasmtime::Result<()> {
        context::Host::rate_limit(self, duration_ms, reason).await
    }
});

/// Implements an older contract's `config` (the same functions since
/// 0.2.0) by forwarding to the current one.
macro_rules! forward_config {
    ($($host:tt)+) => {
        impl $($host)+ for RunState {
            async fn get(&mut self, key: String) -> Option<String> {
                config::Host::get(self, key).await
            }

            async fn keys(&mut self) -> Vec<String> {
                config::Host::keys(self).await
            }

            async fn secret(&mut self, name: String) -> Result<String, HostError> {
                config::Host::secret(self, name).await
            }

            async fn reveal_secret(&mut self, name: String) -> Result<String, HostError> {
                config::Host::reveal_secret(self, name).await
            }
        }
    };
}

forward_config!(v0_5::airlock::job0_5_0::config::Host);

forward_config!(v0_4::airlock::job0_4_0::config::Host);

forward_config!(v0_3::airlock::job0_3_0::config::Host);

forward_config!(v0_2::airlock::job0_2_0::config::Host);

//! A binding with its handler resolved: the digest its new jobs run and
//! the environment its runs get, built once per binding change.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::super::HostContext;
use crate::registry::Binding;
use crate::sandbox::RunEnv;
use crate::sandbox::egress::EgressPolicy;

/// A binding with its handler resolved to the digest new jobs run.
#[derive(Debug, Clone)]
pub struct ResolvedBinding {
    /// The binding.
    pub binding: Binding,
    /// Current digest of its handler.
    pub digest: String,
    /// What its runs may reach (configuration, egress, secrets key), built
    /// once per binding change.
    pub env: RunEnv,
    /// Unique to this resolution: warm instances are shared only within
    /// one (a changed binding — config, egress, secrets — starts afresh).
    pub resolution: u64,
    /// What its runs need to start work (`worker::starts`).
    pub starts: Arc<crate::worker::starts::StartEnv>,
}

/// Numbers [`ResolvedBinding`]s.
static RESOLUTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl ResolvedBinding {
    /// The version a job of this binding not pinned yet runs: the
    /// canary's candidate for its share of jobs, else the current one.
    pub fn digest_for(&self, queue: &str, id: &str) -> &str {
        match &self.binding.canary {
            Some(canary) if canary.takes(queue, id) => &canary.digest,
            _ => &self.digest,
        }
    }

    /// `binding` running `digest` on `host`.
    pub fn new(binding: Binding, digest: String, host: &HostContext) -> ResolvedBinding {
        let env = RunEnv {
            config: Arc::new(binding.config.clone()),
            egress: (!binding.egress.is_empty()).then(|| EgressPolicy {
                operator: host.egress.clone(),
                rules: binding.egress.clone(),
            }),
            secrets_key: host.secrets_key.clone(),
            http_pool: Some(Arc::new(crate::sandbox::http::HttpPool::default())),
            secrets_seen: Some(Arc::default()),
            ..RunEnv::default()
        };
        let starts = Arc::new(crate::worker::starts::StartEnv {
            queues: host.queues.clone(),
            registry: host.registry.clone(),
            rules: binding.starts.clone(),
            lease_ms: host.worker_settings.lock_duration.as_millis() as u64,
        });
        ResolvedBinding {
            binding,
            digest,
            env,
            resolution: RESOLUTIONS.fetch_add(1, Ordering::Relaxed),
            starts,
        }
    }
}

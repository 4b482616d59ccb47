//! What a queue's new jobs run, changed one step at a time: a canary set
//! ([`Registry::set_canary`]), promoted ([`Registry::promote`]) or rolled
//! back ([`Registry::rollback`]).
//!
//! **Per queue unless asked.** A promote makes the candidate the queue's
//! own version (`Binding::version`), leaving the handler's current version
//! — and so every other queue bound to it — as they are; with
//! `all_queues` the candidate becomes the handler's current version
//! instead, for every queue bound to it without a version of its own. A
//! rollback removes a canary; without one, a queue with its own version
//! drops it (undoing its promote), else the handler goes back a version
//! for every queue bound to it without one (the answer lists them) — or,
//! with `queue_only`, this queue alone gets the version before the one it
//! runs as its own. ("Pinned" is a job's word: the version its first run
//! pinned.) Each change is one sealed binding write (or a deploy), so
//! hosts see it at their next registry poll; jobs already pinned by their
//! first run stay on their version.

use super::canary::Canary;
use super::{Binding, HandlerDetails, HandlerVersion, Registry, RegistryError, invalid};
use crate::names;

/// What a rollback did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollback {
    /// The queue's handler.
    pub handler: String,
    /// The canary's candidate, when the rollback removed a canary.
    pub canary_removed: Option<String>,
    /// The version the queues ran before (when they went back a version).
    pub from: Option<String>,
    /// The version they run now (when they went back a version).
    pub to: Option<String>,
    /// The queues whose new jobs run differently now.
    pub queues: Vec<String>,
}

/// What a promote did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Promotion {
    /// The queue's handler.
    pub handler: String,
    /// The version the queues' new jobs ran before.
    pub from: String,
    /// The candidate they all run now.
    pub to: String,
    /// The queues whose new jobs run it now.
    pub queues: Vec<String>,
    /// Whether it became the handler's current version (`allQueues`), or
    /// only these queues' own.
    pub current: bool,
}

impl Registry {
    /// The version `binding`'s new jobs run (but a canary's share): its
    /// own version, else its handler's current one (`None`: the handler
    /// is missing).
    pub async fn runs(&self, binding: &Binding) -> Result<Option<String>, RegistryError> {
        match &binding.version {
            Some(version) => Ok(Some(version.clone())),
            None => self.current_digest(&binding.handler).await,
        }
    }

    /// Sends `percent` (1 to 99) of `queue`'s new jobs to `digest`, an
    /// uploaded version of its handler; the rest run what they ran.
    pub async fn set_canary(
        &self,
        queue: &str,
        digest: &str,
        percent: u8,
    ) -> Result<Binding, RegistryError> {
        if !(1..=99).contains(&percent) {
            return Err(invalid("percent", "must be 1 to 99"));
        }
        names::digest("digest", digest)?;
        let mut binding = self.binding(queue).await?;
        self.check_uploaded(&binding.handler, "digest", digest)
            .await?;
        binding.canary = Some(Canary {
            digest: digest.to_string(),
            percent,
        });
        self.store_binding(queue, &binding).await?;
        tracing::info!(queue, candidate = digest, percent, "canary set");
        Ok(binding)
    }

    /// Makes `queue`'s canary candidate what its new jobs run (see the
    /// module docs): for this queue alone, or with `all_queues` as the
    /// handler's current version.
    pub async fn promote(&self, queue: &str, all_queues: bool) -> Result<Promotion, RegistryError> {
        let mut binding = self.binding(queue).await?;
        let Some(canary) = binding.canary.take() else {
            return Err(RegistryError::Conflict(format!(
                "queue `{queue}` has no canary to promote: set one first (PUT /v1/queues/{queue}/canary)"
            )));
        };
        let from = self.runs(&binding).await?.unwrap_or_default();
        let handler = binding.handler.clone();
        if !all_queues {
            binding.version = Some(canary.digest.clone());
            self.store_binding(queue, &binding).await?;
            tracing::info!(queue, to = %canary.digest, "canary promoted for the queue");
            return Ok(Promotion {
                handler,
                from,
                to: canary.digest,
                queues: vec![queue.to_string()],
                current: false,
            });
        }
        let details = self.handler(&handler).await?;
        self.make_current(&details, &canary.digest).await?;
        binding.version = None;
        self.store_binding(queue, &binding).await?;
        tracing::info!(queue, to = %canary.digest, "canary promoted for the handler");
        Ok(Promotion {
            queues: self.following(&handler).await?,
            handler,
            from,
            to: canary.digest,
            current: true,
        })
    }

    /// Undoes the last change to what `queue`'s new jobs run (see the
    /// module docs); with `queue_only`, never moves another queue.
    pub async fn rollback(&self, queue: &str, queue_only: bool) -> Result<Rollback, RegistryError> {
        let mut binding = self.binding(queue).await?;
        let handler = binding.handler.clone();
        if let Some(canary) = binding.canary.take() {
            self.store_binding(queue, &binding).await?;
            tracing::info!(queue, candidate = %canary.digest, "canary removed");
            return Ok(Rollback {
                handler,
                canary_removed: Some(canary.digest),
                from: None,
                to: None,
                queues: vec![queue.to_string()],
            });
        }
        let details = self.handler(&handler).await?;
        let current = details.current.digest.clone();
        let runs = binding.version.clone().unwrap_or_else(|| current.clone());
        let moved = |to: String, queues: Vec<String>| Rollback {
            handler: handler.clone(),
            canary_removed: None,
            from: Some(runs.clone()),
            to: Some(to),
            queues,
        };
        if queue_only || binding.version.is_some() {
            let to = match (queue_only, &binding.version) {
                // A queue with its own version goes back to what the others run.
                (false, Some(_)) => current,
                _ => version_before(&details, &runs)?,
            };
            binding.version = (to != details.current.digest).then(|| to.clone());
            self.store_binding(queue, &binding).await?;
            return Ok(moved(to, vec![queue.to_string()]));
        }
        let previous = version_before(&details, &current)?;
        let restored = self.make_current(&details, &previous).await?;
        Ok(moved(restored.digest, self.following(&handler).await?))
    }

    /// The queues bound to `handler` that run its current version (no
    /// version of their own).
    async fn following(&self, handler: &str) -> Result<Vec<String>, RegistryError> {
        Ok(self
            .bindings()
            .await?
            .into_iter()
            .filter(|b| b.handler == handler && b.version.is_none())
            .map(|b| b.queue)
            .collect())
    }

    /// Makes the uploaded version `digest` of `details`' handler its
    /// current one again, with its label (a deploy of its stored bytes),
    /// or says why it cannot be brought back.
    async fn make_current(
        &self,
        details: &HandlerDetails,
        digest: &str,
    ) -> Result<HandlerVersion, RegistryError> {
        let bytes = self
            .component_bytes(digest)
            .await
            .map_err(|e| RegistryError::Conflict(format!("version `{digest}`: {e}")))?
            .ok_or_else(|| {
                RegistryError::Conflict(format!(
                    "the component of version `{digest}` is no longer stored"
                ))
            })?;
        let label = (details.versions.iter())
            .find(|v| v.digest == digest)
            .and_then(|v| v.version.clone());
        self.deploy(&details.name, bytes, label).await
    }
}

/// The version uploaded before `digest`'s newest upload that was current
/// once (candidates never were): what a rollback from `digest` goes to.
fn version_before(details: &HandlerDetails, digest: &str) -> Result<String, RegistryError> {
    let newest = (details.versions.iter())
        .position(|v| v.digest == digest)
        .unwrap_or(0);
    (details.versions.iter().skip(newest))
        .find(|v| v.digest != digest && !v.candidate)
        .map(|v| v.digest.clone())
        .ok_or_else(|| {
            let which = match digest == details.current.digest {
                true => "its current one".to_string(),
                false => format!("`{digest}`"),
            };
            RegistryError::Conflict(format!(
                "handler `{}` has no version before {which} to go back to",
                details.name
            ))
        })
}

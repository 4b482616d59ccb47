//! Bindings in Redis: bind (after the spec resolves, the handler exists
//! and, on a host that runs jobs, every egress rule overlaps the
//! operator's list), unbind, read. Each change bumps the registry
//! generation, which running hosts poll. A host with the fleet key seals
//! what it binds and reads bindings only through their seals
//! (`registry::seal`).

use redis::AsyncCommands;

use super::bindings::{Binding, BindingSpec};
use super::seal::Kind;
use super::{Registry, RegistryError, invalid};
use crate::names;
use crate::sandbox::egress::{EgressRule, OperatorEgress};

/// Refuses an `egress` rule no destination of the operator's list
/// (`--egress-allow`) matches: every request under it would be refused,
/// so it is a mistake worth a 400 naming the rule rather than jobs
/// failing later.
fn check_operator_egress(
    rules: &[EgressRule],
    operator: &OperatorEgress,
) -> Result<(), RegistryError> {
    let Some((i, rule)) = rules
        .iter()
        .enumerate()
        .find(|(_, rule)| !operator.could_allow(rule))
    else {
        return Ok(());
    };
    let allowed = if operator.allow.is_empty() {
        "nothing".to_string()
    } else {
        operator
            .allow
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(invalid(
        &format!("egress[{i}]"),
        format!(
            "{} is not allowed by this host's operator, so every request under this rule would be refused; the operator allows {allowed} (--egress-allow: add the destination there)",
            rule.pattern()
        ),
    ))
}

impl Registry {
    /// Creates or replaces the binding of `queue`. The handler must exist;
    /// with `operator`, every `egress` rule must overlap its list (see
    /// [`check_operator_egress`]).
    pub async fn bind(
        &self,
        queue: &str,
        spec: &BindingSpec,
        operator: Option<&OperatorEgress>,
    ) -> Result<Binding, RegistryError> {
        let binding = spec.resolve(queue, &self.sandbox().config().maxima)?;
        if self.store().is_cluster()
            && !names::hash_tagged(queue)
            && !names::hash_tagged(self.store().keys().prefix())
        {
            return Err(invalid(
                "queue",
                format!(
                    "on a Redis Cluster a queue needs a hash tag so its keys share a slot: name it `{{{queue}}}`"
                ),
            ));
        }
        if self.current_digest(&binding.handler).await?.is_none() {
            return Err(RegistryError::MissingHandler(binding.handler.clone()));
        }
        if let Some(canary) = &binding.canary {
            self.check_uploaded(&binding.handler, "canary.digest", &canary.digest)
                .await?;
        }
        if let Some(version) = &binding.version {
            self.check_uploaded(&binding.handler, "version", version)
                .await?;
        }
        if let Some(operator) = operator {
            check_operator_egress(&binding.egress, operator)?;
        }
        if binding.batch.is_some() {
            self.check_batch_handler(&binding).await?;
        }
        self.store_binding(queue, &binding).await?;
        tracing::info!(queue, handler = %binding.handler, "queue bound");
        Ok(binding)
    }

    /// Refuses `batch` on a binding whose handler versions (the current one,
    /// the one `version` names, the canary's) do not all export
    /// `run-batch` (the `batch-handler` world). A version uploaded later
    /// without it fails its batches as `instantiation`, saying so.
    async fn check_batch_handler(&self, binding: &Binding) -> Result<(), RegistryError> {
        let current = self.current_digest(&binding.handler).await?;
        let digests = current
            .iter()
            .chain(binding.version.iter())
            .chain(binding.canary.iter().map(|c| &c.digest));
        for digest in digests {
            let bytes = self
                .component_bytes(digest)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let Some(bytes) = bytes else { continue };
            let exports = crate::sandbox::declared(&bytes)
                .map(|d| d.exports)
                .unwrap_or_default();
            if !exports.iter().any(|e| e == crate::sandbox::RUN_BATCH) {
                return Err(invalid(
                    "batch",
                    format!(
                        "handler `{}` version {digest} exports no `{}`: build it against the `batch-handler` world of airlock:job@0.6.0 (an SDK's batch handler), or bind without `batch`",
                        binding.handler,
                        crate::sandbox::RUN_BATCH
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Refuses a `digest` (given as `field`) that is not an uploaded version
    /// of `handler`.
    pub(super) async fn check_uploaded(
        &self,
        handler: &str,
        field: &str,
        digest: &str,
    ) -> Result<(), RegistryError> {
        let versions = self.handler(handler).await?.versions;
        if versions.iter().any(|v| v.digest == digest) {
            return Ok(());
        }
        Err(invalid(
            field,
            format!("`{digest}` is not an uploaded version of handler `{handler}`"),
        ))
    }

    /// Writes `binding` for `queue`, sealed, and announces it.
    pub(super) async fn store_binding(
        &self,
        queue: &str,
        binding: &Binding,
    ) -> Result<(), RegistryError> {
        let keys = self.store().keys();
        let json = serde_json::to_string(&binding).map_err(anyhow::Error::from)?;
        let mut conn = self.store().conn();
        let previous: Option<String> = conn.hget(keys.binding_seals(), queue).await?;
        let seal = self.seal_for(Kind::Binding, queue, previous.as_deref(), &json);
        let mut write = redis::pipe();
        write.atomic().hset(keys.bindings(), queue, &json).ignore();
        match seal {
            Some(seal) => write.hset(keys.binding_seals(), queue, seal).ignore(),
            // Unsealed: hosts with the fleet key will refuse it.
            None => write.hdel(keys.binding_seals(), queue).ignore(),
        };
        write
            .incr(keys.generation(), 1)
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        Ok(())
    }

    /// Removes the binding of `queue` (its jobs stay in the queue).
    pub async fn unbind(&self, queue: &str) -> Result<(), RegistryError> {
        let keys = self.store().keys();
        let mut conn = self.store().conn();
        let (removed,): (i64,) = redis::pipe()
            .atomic()
            .hdel(keys.bindings(), queue)
            .hdel(keys.binding_seals(), queue)
            .ignore()
            .incr(keys.generation(), 1)
            .ignore()
            .query_async(&mut conn)
            .await?;
        if removed == 0 {
            return Err(RegistryError::unbound(queue));
        }
        Ok(())
    }

    /// The binding of `queue` (through its seal, on a host with the fleet
    /// key: see `registry::seal`).
    pub async fn binding(&self, queue: &str) -> Result<Binding, RegistryError> {
        let keys = self.store().keys();
        let mut conn = self.store().conn();
        let (json, seal): (Option<String>, Option<String>) = redis::pipe()
            .hget(keys.bindings(), queue)
            .hget(keys.binding_seals(), queue)
            .query_async(&mut conn)
            .await?;
        match self.checked(Kind::Binding, queue, json, seal.as_deref()) {
            Some(j) => Ok(serde_json::from_str(&j).map_err(anyhow::Error::from)?),
            None => Err(RegistryError::unbound(queue)),
        }
    }

    /// Every binding, by queue name (each through its seal, on a host with
    /// the fleet key: see `registry::seal`).
    pub async fn bindings(&self) -> Result<Vec<Binding>, RegistryError> {
        let keys = self.store().keys();
        let mut conn = self.store().conn();
        type Texts = std::collections::HashMap<String, String>;
        let (all, seals): (Texts, Texts) = redis::pipe()
            .hgetall(keys.bindings())
            .hgetall(keys.binding_seals())
            .query_async(&mut conn)
            .await?;
        let mut out: Vec<Binding> = all
            .into_iter()
            .filter_map(|(queue, json)| {
                let seal = seals.get(&queue).map(String::as_str);
                self.checked(Kind::Binding, &queue, Some(json), seal)
            })
            .filter_map(|j| serde_json::from_str(&j).ok())
            .collect();
        out.sort_by(|a, b| a.queue.cmp(&b.queue));
        Ok(out)
    }
}

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

/// What a rollback did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollback {
    /// The queue's handler.
    pub handler: String,
    /// The canary's candidate, when the rollback removed a canary.
    pub canary_removed: Option<String>,
    /// The version the handler ran before (when it went back a version).
    pub from: Option<String>,
    /// The version it runs now (when it went back a version).
    pub to: Option<String>,
    /// The queues whose new jobs run differently now.
    pub queues: Vec<String>,
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
            let versions = self.handler(&binding.handler).await?.versions;
            if !versions.iter().any(|v| v.digest == canary.digest) {
                return Err(invalid(
                    "canary.digest",
                    format!(
                        "`{}` is not an uploaded version of handler `{}`",
                        canary.digest, binding.handler
                    ),
                ));
            }
        }
        if let Some(operator) = operator {
            check_operator_egress(&binding.egress, operator)?;
        }
        self.store_binding(queue, &binding).await?;
        tracing::info!(queue, handler = %binding.handler, "queue bound");
        Ok(binding)
    }

    /// Writes `binding` for `queue`, sealed, and announces it.
    async fn store_binding(&self, queue: &str, binding: &Binding) -> Result<(), RegistryError> {
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

    /// Undoes the last change to what `queue`'s new jobs run: a canary is
    /// removed (every new job runs the current version again); without
    /// one, the queue's handler goes back to its version before the
    /// current one — for every queue bound to that handler. Hosts see it at
    /// their next registry poll; jobs already pinned stay where they are.
    pub async fn rollback(&self, queue: &str) -> Result<Rollback, RegistryError> {
        let mut binding = self.binding(queue).await?;
        let details = self.handler(&binding.handler).await?;
        if let Some(canary) = binding.canary.take() {
            self.store_binding(queue, &binding).await?;
            tracing::info!(queue, candidate = %canary.digest, "canary removed");
            return Ok(Rollback {
                handler: binding.handler,
                canary_removed: Some(canary.digest),
                from: None,
                to: None,
                queues: vec![queue.to_string()],
            });
        }
        let current = details.current.digest.clone();
        let Some(previous) = details.versions.iter().find(|v| v.digest != current) else {
            return Err(RegistryError::Conflict(format!(
                "handler `{}` has no version before its current one",
                binding.handler
            )));
        };
        let bytes = self
            .component_bytes(&previous.digest)
            .await
            .map_err(|e| RegistryError::Conflict(format!("version `{}`: {e}", previous.digest)))?
            .ok_or_else(|| {
                RegistryError::Conflict(format!(
                    "the component of version `{}` is no longer stored",
                    previous.digest
                ))
            })?;
        let restored = self
            .deploy(&binding.handler, bytes, previous.version.clone())
            .await?;
        let queues = self
            .bindings()
            .await?
            .into_iter()
            .filter(|b| b.handler == binding.handler)
            .map(|b| b.queue)
            .collect();
        Ok(Rollback {
            handler: binding.handler,
            canary_removed: None,
            from: Some(current),
            to: Some(restored.digest),
            queues,
        })
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
            return Err(RegistryError::NotFound(format!(
                "binding of queue `{queue}`"
            )));
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
            None => Err(RegistryError::NotFound(format!(
                "binding of queue `{queue}`"
            ))),
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

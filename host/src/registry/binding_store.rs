//! Bindings in Redis: bind (after the spec resolves, the handler exists
//! and, on a host that runs jobs, every egress rule overlaps the
//! operator's list), unbind, read. Each change bumps the registry
//! generation, which running hosts poll.

use redis::AsyncCommands;

use super::bindings::{Binding, BindingSpec};
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
        if let Some(operator) = operator {
            check_operator_egress(&binding.egress, operator)?;
        }
        let keys = self.store().keys();
        let json = serde_json::to_string(&binding).map_err(anyhow::Error::from)?;
        let mut conn = self.store().conn();
        redis::pipe()
            .atomic()
            .hset(keys.bindings(), queue, json)
            .ignore()
            .incr(keys.generation(), 1)
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        tracing::info!(queue, handler = %binding.handler, "queue bound");
        Ok(binding)
    }

    /// Removes the binding of `queue` (its jobs stay in the queue).
    pub async fn unbind(&self, queue: &str) -> Result<(), RegistryError> {
        let keys = self.store().keys();
        let mut conn = self.store().conn();
        let (removed,): (i64,) = redis::pipe()
            .atomic()
            .hdel(keys.bindings(), queue)
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

    /// The binding of `queue`.
    pub async fn binding(&self, queue: &str) -> Result<Binding, RegistryError> {
        let mut conn = self.store().conn();
        let json: Option<String> = conn.hget(self.store().keys().bindings(), queue).await?;
        match json {
            Some(j) => Ok(serde_json::from_str(&j).map_err(anyhow::Error::from)?),
            None => Err(RegistryError::NotFound(format!(
                "binding of queue `{queue}`"
            ))),
        }
    }

    /// Every binding, by queue name.
    pub async fn bindings(&self) -> Result<Vec<Binding>, RegistryError> {
        let mut conn = self.store().conn();
        let all: std::collections::HashMap<String, String> =
            conn.hgetall(self.store().keys().bindings()).await?;
        let mut out: Vec<Binding> = all
            .values()
            .filter_map(|j| serde_json::from_str(j).ok())
            .collect();
        out.sort_by(|a, b| a.queue.cmp(&b.queue));
        Ok(out)
    }
}

//! Flows: a parent job that runs once its children (possibly on other
//! queues) have finished, added atomically by BullMQ's FlowProducer.
//!
//! What happens to the parent when a child fails is the child's
//! [`ChildFailure`] policy. The default is `fail`: the parent fails with a
//! reason naming the child, so no parent ever waits forever without a
//! visible reason (BullMQ's own default leaves it in `waiting-children`).

use serde::{Deserialize, Serialize};

use super::options::ToBullmq;
use super::{FlowNodeOptions, QueueError, QueueService};
use crate::error::FieldError;
use crate::names;
use crate::state::meta::{Claim, Pending};

/// What a child's failure does to its parent (BullMQ's flow policies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChildFailure {
    /// The parent fails too, its reason naming the child (`failParentOnFailure`).
    #[default]
    Fail,
    /// The parent runs when the other children finish and sees the failure
    /// in its children's results (`ignoreDependencyOnFailure`).
    Ignore,
    /// The parent runs when the other children finish, as if this child had
    /// never been part of the flow (`removeDependencyOnFailure`).
    Remove,
    /// The parent runs at once, whatever the other children are doing, and
    /// sees the failure in its children's results (`continueParentOnFailure`).
    Continue,
}

/// One node of a flow tree.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlowSpec {
    /// BullMQ job name.
    #[schema(min_length = 1, max_length = 256)]
    pub name: String,
    /// The queue of this job (must be bound).
    #[schema(pattern = r"^[A-Za-z0-9._{}-]{1,128}$")]
    pub queue: String,
    /// The job's data.
    #[schema(value_type = Value)]
    pub data: serde_json::Value,
    /// Job options.
    #[serde(default)]
    pub opts: FlowNodeOptions,
    /// For a child: what its failure does to the parent.
    #[serde(default)]
    pub on_failure: Option<ChildFailure>,
    /// Children that must finish before this job runs.
    #[serde(default)]
    #[schema(no_recursion)]
    pub children: Vec<FlowSpec>,
}

/// An added flow node.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlowNode {
    /// The job's queue.
    pub queue: String,
    /// Its id.
    pub id: String,
    /// `<queue>:<id>`.
    pub r#ref: String,
    /// Its children.
    #[schema(no_recursion)]
    pub children: Vec<FlowNode>,
}

/// Most jobs in one flow.
pub const MAX_FLOW_JOBS: usize = 1000;

/// Most levels of one flow (the root is level 1).
pub const MAX_FLOW_DEPTH: usize = 8;

impl FlowSpec {
    /// Every node with its path (`children[0].children[1]`), depth first.
    pub fn nodes(&self) -> Vec<(String, &FlowSpec)> {
        fn walk<'a>(path: String, node: &'a FlowSpec, out: &mut Vec<(String, &'a FlowSpec)>) {
            out.push((path.clone(), node));
            for (i, child) in node.children.iter().enumerate() {
                let prefix = if path.is_empty() {
                    String::new()
                } else {
                    format!("{path}.")
                };
                walk(format!("{prefix}children[{i}]"), child, out);
            }
        }
        let mut out = Vec::new();
        walk(String::new(), self, &mut out);
        out
    }

    /// Checks names, queues and options of every node, naming the first
    /// bad field by its path in the tree.
    pub fn validate(&self) -> Result<(), FieldError> {
        let nodes = self.nodes();
        if nodes.len() > MAX_FLOW_JOBS {
            return Err(FieldError::new(
                "children",
                format!("a flow holds at most {MAX_FLOW_JOBS} jobs"),
            ));
        }
        for (path, node) in nodes {
            let at = |f: &str| at_path(&path, f);
            let depth = path.matches("children[").count() + 1;
            if depth == MAX_FLOW_DEPTH && !node.children.is_empty() {
                return Err(FieldError::new(
                    at("children"),
                    format!("a flow is at most {MAX_FLOW_DEPTH} levels deep"),
                ));
            }
            names::queue(&at("queue"), &node.queue)?;
            if node.name.is_empty() || node.name.len() > 256 {
                return Err(FieldError::new(at("name"), "must be 1 to 256 characters"));
            }
            node.opts.validate().map_err(|e| e.under(&at("opts")))?;
            if path.is_empty() && node.on_failure.is_some() {
                return Err(FieldError::new(
                    "onFailure",
                    "only a child has a failure policy",
                ));
            }
        }
        Ok(())
    }

    fn to_bullmq(&self, is_child: bool) -> Result<bullmq::FlowJob, QueueError> {
        let mut opts = self.opts.to_job_options().to_bullmq();
        if is_child {
            match self.on_failure.unwrap_or_default() {
                ChildFailure::Fail => opts.fail_parent_on_failure = Some(true),
                ChildFailure::Ignore => opts.ignore_dependency_on_failure = Some(true),
                ChildFailure::Remove => opts.remove_dependency_on_failure = Some(true),
                ChildFailure::Continue => opts.continue_parent_on_failure = Some(true),
            }
        }
        let mut job =
            bullmq::FlowJob::new(&self.name, &self.queue, self.data.clone())?.options(opts);
        if !self.children.is_empty() {
            let children = self
                .children
                .iter()
                .map(|c| c.to_bullmq(true))
                .collect::<Result<Vec<_>, QueueError>>()?;
            job = job.children(children);
        }
        Ok(job)
    }
}

fn to_node(node: bullmq::JobNode, queue: &str) -> FlowNode {
    let children = node
        .children
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            let q = c.job.queue_name().unwrap_or_default().to_string();
            to_node(c, &q)
        })
        .collect();
    let id = node.job.id().to_string();
    FlowNode {
        r#ref: airlock_core::job_ref::join(queue, &id),
        queue: queue.to_string(),
        id,
        children,
    }
}

/// Pairs each spec node with its added node, to read back queue names the
/// port may not carry on its returned jobs.
fn name_queues(spec: &FlowSpec, node: &mut FlowNode) {
    node.queue = spec.queue.clone();
    node.r#ref = airlock_core::job_ref::join(&spec.queue, &node.id);
    for (s, n) in spec.children.iter().zip(node.children.iter_mut()) {
        name_queues(s, n);
    }
}

/// `field` under the node at `path` (`""` is the root).
fn at_path(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

impl QueueService {
    /// Detaches child `child_id` of `child_queue` from the parent whose
    /// hash is `parent_key` (BullMQ's `removeChildDependency`, which moves
    /// a parent left with no pending child to the wait list). A child never
    /// added or removed since, a parent gone, or a link already dropped
    /// leave nothing to detach; a Redis error is returned, so no caller
    /// counts a child detached that may still hold its parent.
    pub async fn detach_child(
        &self,
        child_queue: &str,
        child_id: &str,
        parent_key: &str,
    ) -> Result<(), QueueError> {
        let queue = self.queue(child_queue).await?;
        match queue.remove_child_dependency(child_id, parent_key).await {
            // The port's answer for a missing child or parent key.
            Ok(_) | Err(bullmq::Error::InvalidConfig(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Adds a flow atomically (every job or none), owned by `producer`.
    ///
    /// Every node gets an id before the add (its custom one, or an Airlock
    /// one), and each id is claimed first: a flow naming a job that exists
    /// (or is being added by another producer) is refused with the node's
    /// field, and nothing is added — a flow must not attach someone else's
    /// job as a child or parent. The claims carry the producer, committed to
    /// every node once BullMQ has added the tree (see [`crate::state::meta`]).
    pub async fn add_flow(
        &self,
        spec: &FlowSpec,
        producer: Option<&str>,
    ) -> Result<FlowNode, QueueError> {
        self.add_traced_flow(spec, producer, None).await
    }

    /// [`QueueService::add_flow`], every job of the flow carrying `trace`
    /// (see `crate::traces`).
    pub async fn add_traced_flow(
        &self,
        spec: &FlowSpec,
        producer: Option<&str>,
        trace: Option<String>,
    ) -> Result<FlowNode, QueueError> {
        spec.validate()?;
        let mut spec = spec.clone();
        fn assign_ids(node: &mut FlowSpec) {
            node.opts.job_id.get_or_insert_with(super::add::new_job_id);
            for child in &mut node.children {
                assign_ids(child);
            }
        }
        assign_ids(&mut spec);
        let nodes = spec.nodes();
        for (_, node) in &nodes {
            self.check_cluster_slot(&node.queue)?;
        }

        // Claims per queue (each claim's keys are in its queue's slot).
        let mut claimed: Vec<(String, String)> = Vec::new();
        let mut conflict = None;
        for (path, node) in &nodes {
            let id = node.opts.job_id.as_deref().unwrap_or_default();
            let pending = Pending {
                producer: producer.map(str::to_string),
                seal: producer.and_then(|p| {
                    self.state()
                        .meta
                        .seal(&node.queue, id, p, &node.name, &node.data)
                }),
                limits: None,
                trace: trace.clone(),
            };
            match self
                .state()
                .meta
                .claim(&node.queue, &[(id, &pending)])
                .await?[0]
            {
                Claim::Mine => claimed.push((node.queue.clone(), id.to_string())),
                Claim::Exists | Claim::Taken => {
                    conflict = Some(FieldError::new(
                        at_path(path, "opts.jobId"),
                        format!("a job `{}:{id}` exists already", node.queue),
                    ));
                    break;
                }
            }
        }
        if let Some(field) = conflict {
            for (queue, id) in &claimed {
                self.state().meta.release(queue, &[id.as_str()]).await?;
            }
            return Err(QueueError::Conflict(field));
        }
        let flow = bullmq::FlowProducer::with_connection(
            self.conn.clone(),
            Some(self.prefix().to_string()),
        )?;
        let added = flow.add(spec.to_bullmq(false)?).await?;
        for (queue, id) in &claimed {
            self.state().meta.commit(queue, &[id.as_str()]).await?;
        }
        let mut node = to_node(added, &spec.queue);
        name_queues(&spec, &mut node);
        Ok(node)
    }
}

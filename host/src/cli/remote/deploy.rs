//! `airlock deploy`: uploads a handler component, and with `--queue`
//! binds a queue to it when the queue is not bound yet.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, ApiFailure, Connection};

/// `airlock deploy`.
#[derive(Debug, Args)]
pub struct DeployArgs {
    /// The handler component.
    pub file: PathBuf,
    /// Handler name.
    #[arg(long)]
    pub name: String,
    /// Version label.
    #[arg(long)]
    pub version: Option<String>,
    /// Also bind this queue to the handler, with default settings, when it
    /// is not bound yet (a queue bound to this handler already runs the new
    /// version; one bound to another handler is left alone, with an error).
    #[arg(long, conflicts_with = "candidate")]
    pub queue: Option<String>,
    /// Upload it as a candidate: the current version and every queue stay
    /// as they are, and no job runs it until a canary names it
    /// (`airlock queue canary QUEUE DIGEST --percent N`).
    #[arg(long)]
    pub candidate: bool,
}

/// `airlock deploy`.
pub async fn deploy(conn: &Connection, json_output: bool, args: DeployArgs) -> anyhow::Result<i32> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let client = ApiClient::new(conn)?;
    let version: Value = upload(&client, &args.name, bytes, &args.version, args.candidate).await?;
    print(json_output, &version, |v| {
        let digest = v["digest"].as_str().unwrap_or("");
        match v["candidate"].as_bool() {
            Some(true) => println!(
                "uploaded {} {digest} ({} bytes) as a candidate: no queue runs it until a canary names it (airlock queue canary QUEUE {digest} --percent N)",
                args.name, v["size"]
            ),
            _ => println!(
                "deployed {} {digest} ({} bytes): every queue bound to {} runs it",
                args.name, v["size"], args.name
            ),
        }
    });
    if let Some(queue) = &args.queue {
        bind_if_unbound(&client, json_output, queue, &args.name).await?;
    }
    Ok(0)
}

/// Uploads `bytes` as a version of handler `name` (labelled `version`),
/// current or a `candidate`: the API's answer.
pub async fn upload(
    client: &ApiClient,
    name: &str,
    bytes: Vec<u8>,
    version: &Option<String>,
    candidate: bool,
) -> anyhow::Result<Value> {
    let mut query = Vec::new();
    if let Some(v) = version {
        query.push(("version", v.as_str()));
    }
    if candidate {
        query.push(("candidate", "true"));
    }
    let mut path = format!("/v1/handlers/{name}");
    if !query.is_empty() {
        path.push('?');
        path.push_str(&serde_urlencoded::to_string(&query)?);
    }
    client.upload(&path, bytes).await
}

/// `deploy --queue`: binds `queue` to `handler` unless it is bound already.
async fn bind_if_unbound(
    client: &ApiClient,
    json_output: bool,
    queue: &str,
    handler: &str,
) -> anyhow::Result<()> {
    let path = format!("/v1/queues/{queue}");
    let bound: anyhow::Result<Value> = client.get(&path).await;
    match bound {
        Ok(view) => {
            let current = view["binding"]["handler"].as_str().unwrap_or_default();
            if current != handler {
                anyhow::bail!(
                    "--queue: {queue} is bound to handler `{current}`; re-bind it with \
                     `airlock queue bind {queue} --handler {handler}`"
                );
            }
            if !json_output {
                println!("queue {queue} already runs {handler}");
            }
        }
        Err(e)
            if e.downcast_ref::<ApiFailure>()
                .is_some_and(|f| f.status == reqwest::StatusCode::NOT_FOUND) =>
        {
            let _: Value = client
                .json(Method::PUT, &path, &json!({"handler": handler}))
                .await
                .context("--queue")?;
            if !json_output {
                println!("bound queue {queue} to {handler}");
            }
        }
        Err(e) => return Err(e.context("--queue")),
    }
    Ok(())
}

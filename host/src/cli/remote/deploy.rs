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
    #[arg(long)]
    pub queue: Option<String>,
}

/// `airlock deploy`.
pub async fn deploy(conn: &Connection, json_output: bool, args: DeployArgs) -> anyhow::Result<i32> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let client = ApiClient::new(conn)?;
    let mut path = format!("/v1/handlers/{}", args.name);
    if let Some(v) = &args.version {
        path.push_str(&format!("?version={v}"));
    }
    let version: Value = client.upload(&path, bytes).await?;
    print(json_output, &version, |v| {
        println!(
            "deployed {} {} ({} bytes)",
            args.name,
            v["digest"].as_str().unwrap_or(""),
            v["size"]
        );
    });
    if let Some(queue) = &args.queue {
        bind_if_unbound(&client, json_output, queue, &args.name).await?;
    }
    Ok(0)
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

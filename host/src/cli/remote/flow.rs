//! `airlock flow`: adds a flow (a parent job and its children) from a JSON
//! file.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use reqwest::Method;
use serde_json::Value;

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock flow`.
#[derive(Debug, Args)]
pub struct FlowArgs {
    /// A JSON file with the flow tree (`{name, queue, data, children: [...]}`).
    pub file: PathBuf,
}

/// `airlock flow`.
pub async fn flow(conn: &Connection, json_output: bool, args: FlowArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let tree: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not valid JSON", args.file.display()))?;
    let client = ApiClient::new(conn)?;
    let node: Value = client.json(Method::POST, "/v1/flows", &tree).await?;
    print(json_output, &node, |n| {
        fn show(n: &Value, depth: usize) {
            println!("{}{}", "  ".repeat(depth), n["ref"].as_str().unwrap_or(""));
            for c in n["children"].as_array().into_iter().flatten() {
                show(c, depth + 1);
            }
        }
        show(n, 0);
    });
    Ok(0)
}

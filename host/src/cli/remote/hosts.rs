//! `airlock hosts`, `airlock host drain|resume ID`: the fleet's hosts, and
//! draining or resuming one.

use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock hosts`, `airlock host drain|resume ID`.
pub async fn hosts(
    conn: &Connection,
    json_output: bool,
    action: Option<(&str, &str)>,
) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let list: Value = match action {
        None => client.get("/v1/hosts").await?,
        Some((verb, id)) => {
            client
                .json(Method::POST, &format!("/v1/hosts/{id}/{verb}"), &json!({}))
                .await?
        }
    };
    print(json_output, &list, |l| {
        for h in l["hosts"].as_array().into_iter().flatten() {
            println!(
                "{:<28} {:<9} running {:>3}/{:<4} queues {:<40} {}",
                h["id"].as_str().unwrap_or(""),
                h["state"].as_str().unwrap_or(""),
                h["running"],
                h["capacity"],
                h["queues"]
                    .as_array()
                    .map(|q| q
                        .iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(","))
                    .unwrap_or_default(),
                h["address"].as_str().unwrap_or("-"),
            );
        }
    });
    Ok(0)
}

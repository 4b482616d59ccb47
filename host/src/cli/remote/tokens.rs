//! `airlock token create|list|revoke|rotate`: the fleet's managed API
//! tokens (`/v1/api-tokens`, admin). A secret is printed once, by the
//! command that creates or rotates it.

use std::time::Duration;

use anyhow::Context as _;
use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock token ...`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a managed token; its secret is printed this once.
    Create {
        /// Its name (the caller's name in the API, and the producer of the
        /// jobs it enqueues).
        name: String,
        /// admin, deployer, producer, reader or cron.
        #[arg(long, value_parser = ["admin", "deployer", "producer", "reader", "cron"])]
        role: String,
        /// Limit it to the queues matching this pattern (`*` stands for any
        /// run of characters, e.g. `payments*`); repeat for more. Outside
        /// its scope, everything answers as if absent.
        #[arg(long = "queue", value_name = "PATTERN")]
        queues: Vec<String>,
        /// Limit it to the handlers matching this pattern; repeat for more.
        #[arg(long = "handler", value_name = "PATTERN")]
        handlers: Vec<String>,
        /// How long it works, e.g. `30d`, `12h` (default: until revoked).
        #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
        expires_in: Option<Duration>,
    },
    /// List the fleet's tokens: name, role, source, created, expires, last
    /// used, revoked (never a secret).
    List,
    /// Revoke a managed token: every API host refuses it within a second.
    Revoke {
        /// Token name.
        name: String,
    },
    /// Give a managed token a new secret (printed this once); the old one
    /// stops working.
    Rotate {
        /// Token name.
        name: String,
    },
}

/// Runs `airlock token ...`.
pub async fn token(conn: &Connection, json_output: bool, cmd: TokenCommand) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let issued: Value = match cmd {
        TokenCommand::Create {
            name,
            role,
            queues,
            handlers,
            expires_in,
        } => {
            let mut body = json!({"name": name, "role": role});
            if !queues.is_empty() || !handlers.is_empty() {
                body["scope"] = json!({"queues": queues, "handlers": handlers});
            }
            if let Some(d) = expires_in {
                anyhow::ensure!(
                    d.as_secs() >= 1,
                    "--expires-in must be at least 1s, not {}",
                    humantime::format_duration(d)
                );
                body["expiresInSeconds"] = json!(d.as_secs());
            }
            client
                .json(Method::POST, "/v1/api-tokens", &body)
                .await
                .context("creating the token")?
        }
        TokenCommand::Rotate { name } => {
            client
                .json(
                    Method::POST,
                    &format!("/v1/api-tokens/{name}/rotate"),
                    &json!({}),
                )
                .await?
        }
        TokenCommand::Revoke { name } => {
            let revoked: Value = client
                .json(
                    Method::DELETE,
                    &format!("/v1/api-tokens/{name}"),
                    &json!({}),
                )
                .await?;
            print(json_output, &revoked, |t| {
                println!("revoked {}", t["name"].as_str().unwrap_or(""));
            });
            return Ok(0);
        }
        TokenCommand::List => {
            let list: Value = client.get("/v1/api-tokens").await?;
            print(json_output, &list, |l| {
                for t in l["tokens"].as_array().into_iter().flatten() {
                    println!(
                        "{:<28} {:<9} {:<11} {} created {:<21} expires {:<21} used {:<21} {}",
                        t["name"].as_str().unwrap_or(""),
                        t["role"].as_str().unwrap_or(""),
                        t["source"].as_str().unwrap_or(""),
                        scope(&t["scope"]),
                        when(&t["createdAt"]),
                        when(&t["expiresAt"]),
                        when(&t["lastUsedAt"]),
                        if t["revokedAt"].is_null() {
                            String::new()
                        } else {
                            format!("REVOKED {}", when(&t["revokedAt"]))
                        }
                    );
                }
            });
            return Ok(0);
        }
    };
    print(json_output, &issued, |t| {
        println!(
            "token {} ({}, {}), expires {}; its secret, shown this once:",
            t["name"].as_str().unwrap_or(""),
            t["role"].as_str().unwrap_or(""),
            scope(&t["scope"]),
            when(&t["expiresAt"]),
        );
        println!("{}", t["token"].as_str().unwrap_or(""));
    });
    Ok(0)
}

/// A token's scope as `queues a*,b handlers c*`, or `whole fleet`.
fn scope(scope: &Value) -> String {
    if scope.is_null() {
        return "whole fleet".into();
    }
    let list = |kind: &str| -> String {
        let patterns: Vec<&str> = scope[kind]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match patterns.is_empty() {
            true => "-".into(),
            false => patterns.join(","),
        }
    };
    format!("queues {} handlers {}", list("queues"), list("handlers"))
}

/// A time in ms as RFC 3339 seconds, or `-`.
fn when(ms: &Value) -> String {
    ms.as_u64()
        .map(|ms| {
            let at = std::time::UNIX_EPOCH + Duration::from_millis(ms);
            humantime::format_rfc3339_seconds(at).to_string()
        })
        .unwrap_or_else(|| "-".into())
}

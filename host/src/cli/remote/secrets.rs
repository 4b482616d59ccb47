//! `airlock secret`: a queue's secrets through the API. The value is read
//! from standard input (a pipe, or typed without echo at a terminal), never
//! from the command line, where it would land in shell history and `ps`.

use std::io::{IsTerminal, Read};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock secret ...`.
#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Set a secret, its value read from standard input.
    Set(SetArgs),
    /// List a queue's secrets: name, version, when it last changed, its
    /// destinations and flags (never a value).
    List {
        /// Queue name.
        queue: String,
    },
    /// Delete a secret.
    Delete {
        /// Queue name.
        queue: String,
        /// Secret name.
        name: String,
    },
}

/// `airlock secret set`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// Queue name.
    pub queue: String,
    /// Secret name, e.g. `STRIPE_KEY`.
    pub name: String,
    /// A destination the value may be sent to, `scheme://host[:port]`,
    /// optionally with a path prefix (`https://api.sendgrid.com/v3/mail/send`:
    /// that path and below it only); repeatable, at least one; `*.` for
    /// subdomains.
    #[arg(long = "allow", value_name = "PATTERN", required = true)]
    pub allow: Vec<String>,
    /// Let the handler read the value itself (it is then redacted from the
    /// job's logs, output and step records).
    #[arg(long)]
    pub reveal: bool,
    /// Substitute the value in request bodies too (headers always).
    #[arg(long)]
    pub in_body: bool,
}

/// The value from standard input: the whole of a pipe, or one line typed at
/// a terminal; one trailing newline is dropped.
fn read_value() -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    let mut value = String::new();
    if stdin.is_terminal() {
        eprint!("value (ends at Enter): ");
        stdin.read_line(&mut value).context("reading the value")?;
    } else {
        stdin
            .lock()
            .read_to_string(&mut value)
            .context("reading the value from standard input")?;
    }
    if value.ends_with('\n') {
        value.pop();
        if value.ends_with('\r') {
            value.pop();
        }
    }
    anyhow::ensure!(
        !value.is_empty(),
        "the secret's value is read from standard input, which was empty"
    );
    Ok(value)
}

/// Runs `airlock secret ...`.
pub async fn secret(
    conn: &Connection,
    json_output: bool,
    cmd: SecretCommand,
) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    match cmd {
        SecretCommand::Set(args) => {
            let value = read_value()?;
            let body = json!({
                "value": value,
                "allow": args.allow,
                "reveal": args.reveal,
                "inBody": args.in_body,
            });
            let view: Value = client
                .json(
                    Method::PUT,
                    &format!("/v1/queues/{}/secrets/{}", args.queue, args.name),
                    &body,
                )
                .await?;
            print(json_output, &view, |v| {
                println!(
                    "secret {} of {} set; sent only to {}",
                    args.name,
                    args.queue,
                    v["allow"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            });
        }
        SecretCommand::List { queue } => {
            let list: Value = client.get(&format!("/v1/queues/{queue}/secrets")).await?;
            print(json_output, &list, |l| {
                for s in l["secrets"].as_array().into_iter().flatten() {
                    let mut flags = Vec::new();
                    if s["reveal"] == json!(true) {
                        flags.push("reveal");
                    }
                    if s["inBody"] == json!(true) {
                        flags.push("in-body");
                    }
                    if s["readable"] != json!(true) {
                        flags.push("UNREADABLE with this host's key");
                    }
                    let changed = s["updatedAtMs"]
                        .as_u64()
                        .map(|ms| {
                            let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
                            humantime::format_rfc3339_seconds(at).to_string()
                        })
                        .unwrap_or_default();
                    println!(
                        "{:<24} v{:<4} {:<21} {:<40} {}",
                        s["name"].as_str().unwrap_or(""),
                        s["version"].as_u64().unwrap_or(0),
                        changed,
                        s["allow"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(","),
                        flags.join(" ")
                    );
                }
            });
        }
        SecretCommand::Delete { queue, name } => {
            let _: Value = client
                .json(
                    Method::DELETE,
                    &format!("/v1/queues/{queue}/secrets/{name}"),
                    &json!({}),
                )
                .await?;
            if !json_output {
                println!("deleted secret {name} of {queue}");
            }
        }
    }
    Ok(0)
}

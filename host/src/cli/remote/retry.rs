//! `airlock retry`: runs a failed or completed job again.

use reqwest::Method;
use serde_json::{Value, json};

use super::print;
use crate::cli::client::{ApiClient, Connection};

/// `airlock retry`.
pub async fn retry(conn: &Connection, json_output: bool, job_ref: &str) -> anyhow::Result<i32> {
    let client = ApiClient::new(conn)?;
    let result: Value = client
        .json(
            Method::POST,
            &format!("/v1/jobs/{job_ref}/retry"),
            &json!({}),
        )
        .await?;
    print(json_output, &result, |r| {
        println!(
            "{job_ref} is {} again",
            r["job"]["state"].as_str().unwrap_or("waiting")
        );
    });
    Ok(0)
}

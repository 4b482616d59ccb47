//! Test guest: makes the HTTP requests its job data lists, in order, and
//! returns what each one got (status and body, or the error), so tests can
//! drive the egress rules, limits and secret substitution from outside.
//!
//! Data: `{"requests": [{"method": "GET", "url": "...", "headers": {..},
//! "body": "...", "timeoutMs": 1000}], "secret": "NAME"}`; with `secret`,
//! every request carries `authorization: Bearer <its placeholder>`, and
//! `{{secret}}` in a body is replaced by the placeholder too. `follow: N`
//! follows up to N redirects, as a guest must: each is a new request.

use std::collections::BTreeMap;
use std::time::Duration;

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Probe {
    requests: Vec<Request>,
    #[serde(default)]
    secret: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    #[serde(default = "get")]
    method: String,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Follow up to this many redirects (each one a new request, checked
    /// by the host again).
    #[serde(default)]
    follow: u32,
}

fn get() -> String {
    "GET".into()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn probe(ctx: &Context, data: Probe) -> Result<Vec<Answer>, JobError> {
    let placeholder = match &data.secret {
        Some(name) => Some(ctx.secret(name)?),
        None => None,
    };
    let mut answers = Vec::new();
    for request in data.requests {
        let mut url = request.url.clone();
        let mut hops = 0;
        let answer = loop {
            let mut builder = ctx.http().request(&request.method, &url);
            for (name, value) in &request.headers {
                builder = builder.header(name, value);
            }
            if let Some(p) = &placeholder {
                builder = builder.bearer(p);
            }
            if let Some(body) = &request.body {
                let body = match &placeholder {
                    Some(p) => body.replace("{{secret}}", p),
                    None => body.clone(),
                };
                builder = builder.body(body);
            }
            if let Some(ms) = request.timeout_ms {
                builder = builder.timeout(Duration::from_millis(ms));
            }
            match builder.send() {
                Ok(response) => {
                    let location = response.header("location").map(str::to_string);
                    match location {
                        Some(next)
                            if (300..400).contains(&response.status()) && hops < request.follow =>
                        {
                            hops += 1;
                            url = next;
                        }
                        _ => {
                            break Answer {
                                status: Some(response.status()),
                                body: Some(response.text()),
                                error: None,
                            };
                        }
                    }
                }
                Err(e) => {
                    break Answer {
                        status: None,
                        body: None,
                        error: Some(e.to_string()),
                    };
                }
            }
        };
        answers.push(answer);
    }
    Ok(answers)
}

airlock_guest::handler!(probe);

//! Transactional e-mail delivery with an idempotency key, as an Airlock
//! handler.
//!
//! Input, as our users' BullMQ producer sends it:
//! `{ "to": "a@example.com", "templateId": "welcome", "payload": {...},
//! "idempotencyKey": "welcome-42" }` — or a plain mail with a `subject`
//! instead of a template (one of the two is required; `idempotencyKey`
//! defaults to the job id). The first run with a key
//! "sends" the mail and remembers the key for 24 hours in the handler's KV
//! store; any later run with the same key returns `skipped_duplicate`
//! without sending again — the pattern that makes at-least-once delivery
//! safe for side effects. It also serves event subscriptions: a job whose
//! data is an Airlock event (`user.signed_up`) mails the event's data.
//!
//! Sending: when the queue binding's config sets `GATEWAY_URL`, the mail is
//! POSTed to `{GATEWAY_URL}/v1/messages` with the binding's secret
//! `MAIL_API_KEY` as a bearer token (the handler holds only its
//! placeholder; the host puts the key in) and the gateway's id becomes the
//! message id. Without `GATEWAY_URL` the send is simulated (logged), as in
//! local runs with no gateway.

use std::time::Duration;

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

const REMEMBER_FOR: Duration = Duration::from_secs(24 * 60 * 60);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Email {
    to: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    template_id: Option<String>,
    /// The template's variables.
    #[serde(default)]
    payload: Option<serde_json::Value>,
    #[serde(default)]
    idempotency_key: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Delivery {
    status: &'static str,
    idempotency_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_id: Option<String>,
}

fn deliver(ctx: &Context, input: serde_json::Value) -> Result<Delivery, JobError> {
    let email: Email = airlock_guest::decode(airlock_guest::event_payload(input))?;
    if !email.to.contains('@') {
        return Err(JobError::fatal(format!(
            "invalid recipient address `{}`",
            email.to
        )));
    }
    let what = match (&email.template_id, &email.subject) {
        (Some(template), _) => format!("template `{template}`"),
        (None, Some(subject)) => format!("\"{subject}\""),
        (None, None) => {
            return Err(JobError::fatal(
                "an e-mail needs a `templateId` or a `subject`",
            ));
        }
    };
    let key = email
        .idempotency_key
        .clone()
        .unwrap_or_else(|| ctx.job().id.clone());
    let kv_key = format!("email-sent:{key}");
    if ctx.kv().get(&kv_key)?.is_some() {
        ctx.info(format!("e-mail {key} already sent, skipping"));
        ctx.progress(100);
        return Ok(Delivery {
            status: "skipped_duplicate",
            idempotency_key: key,
            message_id: None,
        });
    }
    ctx.progress(50);
    let message_id = match ctx.config("GATEWAY_URL") {
        Some(gateway) => send(ctx, &gateway, &email, &key)?,
        None => format!("msg_{key}"),
    };
    let variables = email
        .payload
        .as_ref()
        .and_then(|p| p.as_object())
        .map_or(0, |o| o.len());
    ctx.info(format!(
        "sent {what} to {} ({variables} template variables) as {message_id}",
        email.to
    ));
    // Remember only after sending: a crash before this line resends (at
    // least once), never silently drops the mail.
    ctx.kv().set(&kv_key, &message_id, Some(REMEMBER_FOR))?;
    ctx.progress(100);
    Ok(Delivery {
        status: "sent",
        idempotency_key: key,
        message_id: Some(message_id),
    })
}

#[derive(Deserialize)]
struct Accepted {
    id: String,
}

/// POSTs the mail to the gateway; its id for the message.
fn send(ctx: &Context, gateway: &str, email: &Email, key: &str) -> Result<String, JobError> {
    let api_key = ctx.secret("MAIL_API_KEY")?;
    let accepted: Accepted = ctx
        .http()
        .post(&format!("{}/v1/messages", gateway.trim_end_matches('/')))
        .bearer(&api_key)
        .header("idempotency-key", key)
        .json(&serde_json::json!({
            "to": email.to,
            "subject": email.subject,
            "templateId": email.template_id,
            "payload": email.payload,
        }))
        .timeout(Duration::from_secs(10))
        .send()?
        .error_for_status()?
        .json()?;
    Ok(accepted.id)
}

airlock_guest::handler!(deliver);

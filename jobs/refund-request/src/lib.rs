//! A refund request from our users' Trigger.dev and Inngest functions, as a
//! durable Airlock handler with both kinds of wait:
//!
//! 1. `open-refund` records the request;
//! 2. a manager approves it: the step `ask-approval` POSTs
//!    `{refundId, orderId, amount, token}` to `{APPROVAL_URL}/v1/approvals`
//!    (`APPROVAL_URL` from the queue binding's config; the approval service
//!    mails the manager a link), and the handler waits for `POST
//!    /v1/tokens/{token}/complete` with `{"approved": bool, "by": name}` —
//!    3 days at most (`approvalTimeoutMs` overrides it). No decision in
//!    time: `expired`; a refusal: `rejected`. The token is a credential
//!    (whoever holds it decides), so it goes only to the approval service:
//!    never into the progress, a log, a step's result or the output, which
//!    every reader of the job sees. The progress says only
//!    `{"stage": "awaiting-approval"}`. Without `APPROVAL_URL` the job fails
//!    at once (fatal), naming the key;
//! 3. `issue-refund` issues it once, a recorded step replayed, not run again (the KV counter
//!    `refunds:<refundId>` counts the issues, so tests can prove it);
//! 4. the payment provider's `refund.settled` event with this `refundId`
//!    (at `$.refundId` of its data) settles it — 7 days at most
//!    (`settleTimeoutMs`); none in time: `unsettled`.
//!
//! Input: `{ "refundId": "r1", "orderId": "o1", "amount": 25.0 }`, plus
//! `pauseBeforeSettleMs`: busy time between issuing and waiting, which lets
//! tests send the event while the job still runs.

use std::time::{Duration, Instant};

use airlock_guest::{Context, JobError, Match};
use serde::{Deserialize, Serialize};

const APPROVAL_TIMEOUT: Duration = Duration::from_secs(3 * 24 * 60 * 60);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 60 * 60);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Refund {
    refund_id: String,
    order_id: String,
    amount: f64,
    #[serde(default)]
    approval_timeout_ms: Option<u64>,
    #[serde(default)]
    settle_timeout_ms: Option<u64>,
    #[serde(default)]
    pause_before_settle_ms: Option<u64>,
}

/// What the manager posts to the approval token.
#[derive(Deserialize)]
struct Decision {
    approved: bool,
    #[serde(default)]
    by: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    status: &'static str,
    refund_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    approved_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refund_ref: Option<String>,
    /// The id of the settlement event.
    #[serde(skip_serializing_if = "Option::is_none")]
    settlement: Option<String>,
}

fn refund_request(ctx: &Context, refund: Refund) -> Result<Outcome, JobError> {
    if refund.amount <= 0.0 {
        return Err(JobError::fatal("refund amount must be positive"));
    }
    let Some(approvals) = ctx.config("APPROVAL_URL") else {
        return Err(JobError::fatal(
            "the queue binding's config has no `APPROVAL_URL` (where to ask for the approval)",
        ));
    };
    let outcome = |status| Outcome {
        status,
        refund_id: refund.refund_id.clone(),
        approved_by: None,
        refund_ref: None,
        settlement: None,
    };

    ctx.step("open-refund", || -> Result<_, JobError> {
        ctx.info(format!(
            "refund {} of {} for order {} opened",
            refund.refund_id, refund.amount, refund.order_id
        ));
        Ok(true)
    })?;

    let token = ctx.wait_token("approval")?;
    ctx.step("ask-approval", || {
        ask_approval(ctx, &approvals, &refund, &token)
    })?;
    ctx.progress_json(&serde_json::json!({ "stage": "awaiting-approval" }));
    let timeout = refund
        .approval_timeout_ms
        .map_or(APPROVAL_TIMEOUT, Duration::from_millis);
    let decision: Decision = match ctx.wait_for_token("approval", timeout)? {
        Some(decision) => decision,
        None => return Ok(outcome("expired")),
    };
    if !decision.approved {
        return Ok(Outcome {
            approved_by: decision.by,
            ..outcome("rejected")
        });
    }

    let refund_ref = ctx.step("issue-refund", || -> Result<_, JobError> {
        let counter = format!("refunds:{}", refund.refund_id);
        let issued: u64 = ctx
            .kv()
            .get(&counter)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        ctx.kv().set(&counter, &(issued + 1).to_string(), None)?;
        Ok(format!("rf_{}", refund.refund_id))
    })?;
    ctx.progress_json(&serde_json::json!({ "stage": "awaiting-settlement" }));
    if let Some(ms) = refund.pause_before_settle_ms {
        let until = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    let timeout = refund
        .settle_timeout_ms
        .map_or(SETTLE_TIMEOUT, Duration::from_millis);
    let settled = ctx.wait_for_event(
        "settlement",
        "refund.settled",
        Some(Match::new("$.refundId", &refund.refund_id)),
        timeout,
    )?;
    Ok(Outcome {
        approved_by: decision.by,
        refund_ref: Some(refund_ref),
        settlement: settled.as_ref().map(|e| e.id.clone()),
        ..outcome(if settled.is_some() {
            "settled"
        } else {
            "unsettled"
        })
    })
}

/// Hands the approval token to the approval service (and no one else); the
/// step's result is `true`, never the token. A host that dies between the
/// POST and recording the step sends it again on the retry: the same token
/// (a wait token is the same on every run), which the service can dedupe.
fn ask_approval(
    ctx: &Context,
    approvals: &str,
    refund: &Refund,
    token: &str,
) -> Result<bool, JobError> {
    ctx.http()
        .post(&format!("{}/v1/approvals", approvals.trim_end_matches('/')))
        .json(&serde_json::json!({
            "refundId": refund.refund_id,
            "orderId": refund.order_id,
            "amount": refund.amount,
            "token": token,
        }))
        .send()?
        .error_for_status()?;
    Ok(true)
}

airlock_guest::handler!(refund_request);

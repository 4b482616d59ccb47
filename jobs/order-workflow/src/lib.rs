//! The order workflow from our users' Inngest functions, as a durable
//! Airlock handler:
//!
//! 1. `verify-fraud-risk` scores the order; a risky order goes through
//!    `flag-order-for-review` and the workflow stops there;
//! 2. `charge-payment` charges the customer once, however often the job
//!    is retried, resumed or recovered after a crash: a recorded step is
//!    replayed, not run again (only a crash between the charge and its
//!    record would charge twice);
//! 3. a durable sleep of 24 hours (`reviewDelayMs` overrides it) parks the
//!    job without holding a worker;
//! 4. `send-customer-review-request` asks for a review.
//!
//! Input: `{ "orderId": "o1", "amount": 99.5, "customerEmail": "c@example.com" }`.
//!
//! Every charge also bumps the KV counter `charges:<orderId>`, so tests can
//! prove from outside that the charge really ran once.

use std::time::Duration;

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

const REVIEW_DELAY: Duration = Duration::from_secs(24 * 60 * 60);
const RISKY_AMOUNT: f64 = 5_000.0;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Order {
    order_id: String,
    amount: f64,
    #[serde(default)]
    customer_email: Option<String>,
    #[serde(default)]
    review_delay_ms: Option<u64>,
    /// Busy time between charging and sleeping: lets tests kill the host
    /// between two steps.
    #[serde(default)]
    pause_after_charge_ms: Option<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RiskAssessment {
    score: u32,
    flagged: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Charge {
    charge_id: String,
    amount: f64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    status: &'static str,
    order_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    charge_id: Option<String>,
    review_requested: bool,
}

fn order_workflow(ctx: &Context, order: Order) -> Result<Outcome, JobError> {
    if order.amount <= 0.0 {
        return Err(JobError::fatal("order amount must be positive"));
    }

    let risk = ctx.step("verify-fraud-risk", || -> Result<_, JobError> {
        let score = (order.amount / RISKY_AMOUNT * 100.0).min(100.0) as u32;
        ctx.info(format!("order {} risk score {score}", order.order_id));
        Ok(RiskAssessment {
            score,
            flagged: order.amount >= RISKY_AMOUNT,
        })
    })?;

    if risk.flagged {
        ctx.step("flag-order-for-review", || -> Result<_, JobError> {
            ctx.warn(format!(
                "order {} flagged for manual review",
                order.order_id
            ));
            Ok(true)
        })?;
        return Ok(Outcome {
            status: "flagged_for_review",
            order_id: order.order_id,
            charge_id: None,
            review_requested: false,
        });
    }

    let charge = ctx.step("charge-payment", || -> Result<_, JobError> {
        ctx.info(format!(
            "charging order {} for {}",
            order.order_id, order.amount
        ));
        let counter = format!("charges:{}", order.order_id);
        let charges: u64 = ctx
            .kv()
            .get(&counter)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        ctx.kv().set(&counter, &(charges + 1).to_string(), None)?;
        Ok(Charge {
            charge_id: format!("ch_{}", order.order_id),
            amount: order.amount,
        })
    })?;
    ctx.progress(50);
    if let Some(ms) = order.pause_after_charge_ms {
        let until = std::time::Instant::now() + Duration::from_millis(ms);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    let delay = order
        .review_delay_ms
        .map(Duration::from_millis)
        .unwrap_or(REVIEW_DELAY);
    ctx.sleep("wait-before-review", delay)?;

    ctx.step("send-customer-review-request", || -> Result<_, JobError> {
        let to = order.customer_email.as_deref().unwrap_or("customer");
        ctx.info(format!(
            "review request for order {} sent to {to}",
            order.order_id
        ));
        Ok(true)
    })?;
    ctx.progress(100);

    Ok(Outcome {
        status: "completed",
        order_id: order.order_id,
        charge_id: Some(charge.charge_id),
        review_requested: true,
    })
}

airlock_guest::handler!(order_workflow);

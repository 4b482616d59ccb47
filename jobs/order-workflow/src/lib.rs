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
//! 4. `send-customer-review-request` asks for a review;
//! 5. with `notifyEvent`, the event of that name (`{orderId, chargeId}`) is
//!    sent once (`notify`), and the output names its id.
//!
//! With `chargeQueue`, step 2 is the payment handler's: the charge is
//! invoked as a job named `charge` on that queue (`{orderId, amount}`), the
//! order parked until it ended; a charge that failed for good fails the
//! order. The same component is that payment handler: a job named `charge`
//! runs `charge-payment` alone and returns the charge. (The binding of the
//! orders' queue lists the charges' queue and the event in its `starts`.)
//!
//! Input: `{ "orderId": "o1", "amount": 99.5, "customerEmail": "c@example.com",
//! "chargeQueue"?: "charges", "notifyEvent"?: "order.reviewed" }`.
//!
//! Every charge also bumps the KV counter `charges:<orderId>`, so tests can
//! prove from outside that the charge really ran once.

use std::time::Duration;

use airlock_guest::{Context, JobError, NewJob};
use serde::{Deserialize, Serialize};
use serde_json::json;

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
    /// The queue of the payment handler that charges the order; absent:
    /// the charge is a step of this job.
    #[serde(default)]
    charge_queue: Option<String>,
    /// The event sent once the review was requested.
    #[serde(default)]
    notify_event: Option<String>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    notified: Option<String>,
}

/// `charge-payment`: charges the order once (bumping `charges:<orderId>`).
fn charge_payment(ctx: &Context, order: &Order) -> Result<Charge, JobError> {
    ctx.step("charge-payment", || -> Result<_, JobError> {
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
    })
}

/// The handler: a `charge` job is the payment handler's, any other an
/// order.
fn handle(ctx: &Context, order: Order) -> Result<serde_json::Value, JobError> {
    let value = if ctx.job().name == "charge" {
        serde_json::to_value(charge_payment(ctx, &order)?)
    } else {
        serde_json::to_value(order_workflow(ctx, order)?)
    };
    value.map_err(|e| JobError::fatal(format!("output: {e}")))
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
            notified: None,
        });
    }

    let charge = match &order.charge_queue {
        Some(queue) => {
            let job = NewJob::new(
                queue.as_str(),
                "charge",
                json!({"orderId": order.order_id, "amount": order.amount}),
            );
            ctx.invoke::<Charge>("charge-payment", job, None)
                .map_err(|e| JobError::fatal(format!("the charge failed: {e}")))?
        }
        None => charge_payment(ctx, &order)?,
    };
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

    let notified = match &order.notify_event {
        Some(event) => Some(ctx.send_event(
            "notify",
            event,
            json!({"orderId": order.order_id, "chargeId": charge.charge_id}),
        )?),
        None => None,
    };

    Ok(Outcome {
        status: "completed",
        order_id: order.order_id,
        charge_id: Some(charge.charge_id),
        review_requested: true,
        notified,
    })
}

airlock_guest::handler!(handle);

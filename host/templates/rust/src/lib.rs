//! {{name}}: an Airlock job handler.
//!
//! Input: `{ "orderId": "o1", "amount": 42.5 }` (see `payload.json`).

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Input {
    order_id: String,
    amount: f64,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Charge {
    charge_id: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output {
    order_id: String,
    charge_id: String,
}

fn run(ctx: &Context, input: Input) -> Result<Output, JobError> {
    if input.amount <= 0.0 {
        // No retry can fix bad input.
        return Err(JobError::fatal("amount must be positive"));
    }
    // A durable step: once its result is recorded, a retry gets it instead of running it again.
    let charge = ctx.step("charge", || -> Result<Charge, JobError> {
        ctx.info(format!("charging {} for {}", input.order_id, input.amount));
        Ok(Charge {
            charge_id: format!("ch_{}", input.order_id),
        })
    })?;
    ctx.progress(100);
    Ok(Output {
        order_id: input.order_id,
        charge_id: charge.charge_id,
    })
}

airlock_guest::handler!(run);

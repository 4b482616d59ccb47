//! The current contract's `config` import: the binding's configuration,
//! and its secrets — opened here, handed to the guest as placeholders, or
//! revealed when the secret allows it.

use super::RunState;
use crate::bindings::HostError;
use crate::bindings::airlock::job0_6_0::config;
use crate::http::Grant;
use crate::secrets;

/// Longest secret or configuration name a guest may ask for.
const MAX_NAME_BYTES: usize = 128;

impl RunState {
    /// Opens the job's secret `name` (fetched through the services).
    async fn open_secret(&mut self, name: &str) -> Result<secrets::Secret, HostError> {
        if name.is_empty()
            || name.len() > MAX_NAME_BYTES
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        {
            return Err(HostError::Invalid(format!(
                "`{name}` is not a secret name (letters, digits, `_`, `.`, `-`; at most {MAX_NAME_BYTES} bytes)"
            )));
        }
        let stored = match self.services.secret(name).await {
            Ok(Some(stored)) => stored,
            Ok(None) => {
                return Err(HostError::Invalid(format!(
                    "no secret `{name}` is set for queue `{}`",
                    self.queue
                )));
            }
            Err(e) => return Err(self.host_error(e)),
        };
        let Some(key) = &self.env.secrets_key else {
            let message =
                "this host has no secrets key (--secrets-key-file), so it cannot open secrets"
                    .to_string();
            self.service_outage = Some(message.clone());
            return Err(HostError::Unavailable(message));
        };
        // An envelope that does not open (another key, altered) stays that
        // way: refused, not an outage to wait out.
        let secret = secrets::decrypt(key, &self.queue, name, &stored)
            .map_err(|e| HostError::Invalid(format!("secret `{name}`: {e}")))?;
        if let Some(recorder) = &self.env.transcript {
            recorder.note_secret(name, &secret.value);
        }
        if let Some(seen) = &self.env.secrets_seen
            && !seen.admit(name, &secret)
        {
            tracing::warn!(queue = %self.queue, secret = name, "an older setting of a secret was written back; refused");
            return Err(HostError::Invalid(format!(
                "secret `{name}`: the stored value was set before one this host already used (an older one written back); set it again"
            )));
        }
        Ok(secret)
    }
}

impl config::Host for RunState {
    async fn get(&mut self, key: String) -> Option<String> {
        let value = self.env.config.get(&key).cloned();
        if let Some(recorder) = &self.env.transcript {
            recorder.push(crate::transcript::Call::Config {
                key,
                value: value.clone(),
            });
        }
        value
    }

    async fn keys(&mut self) -> Vec<String> {
        self.env.config.keys().cloned().collect()
    }

    async fn secret(&mut self, name: String) -> Result<String, HostError> {
        if let Some(held) = self.grants.lock().ok().and_then(|g| {
            g.iter()
                .find(|g| g.name == name)
                .map(|g| g.placeholder.clone())
        }) {
            return Ok(held);
        }
        let secret = self.open_secret(&name).await?;
        let placeholder = secrets::placeholder();
        if let Some(recorder) = &self.env.transcript {
            recorder.note_secret(&name, &placeholder);
        }
        if let Ok(mut grants) = self.grants.lock() {
            grants.push(Grant {
                name,
                placeholder: placeholder.clone(),
                secret,
            });
        }
        Ok(placeholder)
    }

    async fn reveal_secret(&mut self, name: String) -> Result<String, HostError> {
        let secret = self.open_secret(&name).await?;
        if !secret.policy.reveal {
            return Err(HostError::Invalid(format!(
                "secret `{name}` is not set with `reveal`: a handler gets its placeholder (config.secret), not its value"
            )));
        }
        if let Ok(mut sink) = self.logs.lock() {
            sink.add_redaction(&name, &secret.value);
        }
        Ok(secret.value.to_string())
    }
}

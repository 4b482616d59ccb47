//! Read tokens: what a web app's backend hands a browser so that it can
//! follow one job live. A browser's `EventSource` cannot send an
//! `Authorization` header, and handing it a producer token would let it
//! read every job of that producer; a read token opens one job's event
//! stream (`GET /v1/jobs/{ref}/events?token=…`) and nothing else, until it
//! expires.
//!
//! A read token is `jrt_<expiry, ms since the epoch>_<64 hex digits>`: an
//! HMAC-SHA256, under a key derived from the fleet's key for this purpose
//! alone, over the job's ref and the expiry. It does not name its job — the
//! stream's URL does, and a token made for another job does not verify
//! there. A flow's token, `jrf_<expiry>_<the flow's job's ref, hex>_<64 hex
//! digits>`, names the job it was made for (the HMAC covers it): it opens
//! that job's stream and those of the jobs below it in its flow, which the
//! API checks by following each job's parent up ([`Opened::flow`]) and by
//! the job's producer, which must be the flow's job's.
//!
//! Nothing is stored: every API host of the fleet checks a token by itself,
//! none can revoke one, so a token lives at most [`MAX_SECONDS`], and a
//! stream it opened ends when it expires. The key never reaches Redis: a
//! Redis writer cannot make a token. It can point a job's parent (and its
//! producer field, as for the API's producer isolation) at a flow's job,
//! and so let that flow's token follow the job — a job whose data that
//! writer can read in Redis already.

use airlock_core::hashing::hmac;
use hmac::Mac;

/// What the derived key is for.
pub const PURPOSE: &str = "read-tokens";
/// What a job's read token starts with.
pub const PREFIX: &str = "jrt_";
/// What a flow's read token starts with.
pub const FLOW_PREFIX: &str = "jrf_";
/// Longest a read token lives: an hour.
pub const MAX_SECONDS: u64 = 3600;
/// How long a read token lives when the request does not say.
pub const DEFAULT_SECONDS: u64 = 600;

/// Why a read token was refused (each answers 401, with nothing more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not `jrt_<ms>_<hex>`.
    Malformed,
    /// Its expiry has passed.
    Expired,
    /// Not made by this fleet for this job.
    Forged,
}

/// What a token that holds opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// When it expires, ms since the epoch.
    pub expires_at: u64,
    /// A flow's token: the job it was made for, whose flow's jobs below it
    /// it opens too (the caller checks that the job asked for is one).
    pub flow: Option<String>,
}

/// Issues and checks read tokens under the fleet's derived key.
pub struct ReadTokens {
    key: [u8; 32],
}

impl std::fmt::Debug for ReadTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadTokens").finish_non_exhaustive()
    }
}

impl ReadTokens {
    /// Read tokens under `key` (derived for [`PURPOSE`]).
    pub fn new(key: [u8; 32]) -> ReadTokens {
        ReadTokens { key }
    }

    fn tag(&self, prefix: &str, job_ref: &str, expires_at: u64) -> airlock_core::hashing::Hmac {
        hmac(
            &self.key,
            &[
                PURPOSE.as_bytes(),
                prefix.as_bytes(),
                job_ref.as_bytes(),
                &expires_at.to_le_bytes(),
            ],
        )
    }

    /// A token opening `job_ref`'s event stream until `expires_at` (ms);
    /// with `flow`, those of the jobs below it in its flow too.
    pub fn issue(&self, job_ref: &str, expires_at: u64, flow: bool) -> String {
        let prefix = if flow { FLOW_PREFIX } else { PREFIX };
        let tag = hex::encode(
            self.tag(prefix, job_ref, expires_at)
                .finalize()
                .into_bytes(),
        );
        match flow {
            false => format!("{PREFIX}{expires_at}_{tag}"),
            true => format!("{FLOW_PREFIX}{expires_at}_{}_{tag}", hex::encode(job_ref)),
        }
    }

    /// Checks `token` for `job_ref`'s stream at `now` (ms): what it opens
    /// when it holds (a flow's token: for the caller to check that
    /// `job_ref` is in the flow).
    pub fn check(&self, token: &str, job_ref: &str, now: u64) -> Result<Opened, Refused> {
        let (prefix, rest) = [PREFIX, FLOW_PREFIX]
            .into_iter()
            .find_map(|p| Some((p, token.strip_prefix(p)?)))
            .ok_or(Refused::Malformed)?;
        let (expires_at, rest) = rest.split_once('_').ok_or(Refused::Malformed)?;
        let expires_at: u64 = expires_at.parse().map_err(|_| Refused::Malformed)?;
        let (flow, tag) = match prefix == FLOW_PREFIX {
            false => (None, rest),
            true => {
                let (root, tag) = rest.split_once('_').ok_or(Refused::Malformed)?;
                let root = hex::decode(root).map_err(|_| Refused::Malformed)?;
                (
                    Some(String::from_utf8(root).map_err(|_| Refused::Malformed)?),
                    tag,
                )
            }
        };
        let tag = hex::decode(tag).map_err(|_| Refused::Malformed)?;
        // The tag first: an expiry is worth telling only for a real token.
        self.tag(prefix, flow.as_deref().unwrap_or(job_ref), expires_at)
            .verify_slice(&tag)
            .map_err(|_| Refused::Forged)?;
        if expires_at <= now {
            return Err(Refused::Expired);
        }
        Ok(Opened { expires_at, flow })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_its_job_until_it_expires() {
        let tokens = ReadTokens::new([7; 32]);
        let token = tokens.issue("payments:42", 2_000, false);
        assert!(token.starts_with("jrt_2000_") && token.len() == 4 + 4 + 1 + 64);
        let opened = Opened {
            expires_at: 2_000,
            flow: None,
        };
        assert_eq!(tokens.check(&token, "payments:42", 1_999), Ok(opened));
        assert_eq!(
            tokens.check(&token, "payments:42", 2_000),
            Err(Refused::Expired)
        );
        assert_eq!(
            tokens.check(&token, "payments:43", 1_000),
            Err(Refused::Forged)
        );
        assert_eq!(
            tokens.check(&token, "payments:4", 1_000),
            Err(Refused::Forged)
        );
        // Its expiry moved: forged.
        let moved = token.replacen("jrt_2000_", "jrt_9000_", 1);
        assert_eq!(
            tokens.check(&moved, "payments:42", 1_000),
            Err(Refused::Forged)
        );
        // Another fleet's key: forged.
        let other = ReadTokens::new([8; 32]).issue("payments:42", 2_000, false);
        assert_eq!(
            tokens.check(&other, "payments:42", 1_000),
            Err(Refused::Forged)
        );
        for bad in [
            "",
            "jrt_",
            "jrt_x_00",
            "jrt_2000",
            "alt_2000_00",
            "jrt_2000_zz",
            "jrf_2000_00",
        ] {
            assert_eq!(
                tokens.check(bad, "payments:42", 1_000),
                Err(Refused::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_flow_token_names_its_job_and_a_job_token_is_no_flow_token() {
        let tokens = ReadTokens::new([7; 32]);
        let flow = tokens.issue("orders:7", 2_000, true);
        assert!(flow.starts_with("jrf_2000_"), "{flow}");
        // For any job: the caller checks that it is in the flow.
        let opened = tokens.check(&flow, "payments:99", 1_000).unwrap();
        assert_eq!(opened.flow.as_deref(), Some("orders:7"));
        // Another root put in: forged.
        let moved = flow.replace(&hex::encode("orders:7"), &hex::encode("orders:8"));
        assert_eq!(
            tokens.check(&moved, "orders:8", 1_000),
            Err(Refused::Forged)
        );
        // A job's token made a flow's (the same tag, another prefix): forged.
        let job = tokens.issue("orders:7", 2_000, false);
        let tag = job.rsplit('_').next().unwrap();
        let as_flow = format!("jrf_2000_{}_{tag}", hex::encode("orders:7"));
        assert_eq!(
            tokens.check(&as_flow, "orders:7", 1_000),
            Err(Refused::Forged)
        );
        assert_eq!(
            tokens.check(&flow, "orders:7", 2_000),
            Err(Refused::Expired)
        );
    }
}

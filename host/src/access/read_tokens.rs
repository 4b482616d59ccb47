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
//! there. Nothing is stored: every API host of the fleet checks one by
//! itself, none can revoke one, so a token lives at most [`MAX_SECONDS`],
//! and a stream it opened ends when it expires. A Redis writer learns and
//! changes nothing here: the key never reaches Redis.

use airlock_core::hashing::hmac;
use hmac::Mac;

/// What the derived key is for.
pub const PURPOSE: &str = "read-tokens";
/// What a read token starts with.
pub const PREFIX: &str = "jrt_";
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

    fn tag(&self, job_ref: &str, expires_at: u64) -> airlock_core::hashing::Hmac {
        hmac(
            &self.key,
            &[
                PURPOSE.as_bytes(),
                job_ref.as_bytes(),
                &expires_at.to_le_bytes(),
            ],
        )
    }

    /// A token opening `job_ref`'s event stream until `expires_at` (ms).
    pub fn issue(&self, job_ref: &str, expires_at: u64) -> String {
        let tag = self.tag(job_ref, expires_at).finalize().into_bytes();
        format!("{PREFIX}{expires_at}_{}", hex::encode(tag))
    }

    /// Checks `token` for `job_ref` at `now` (ms); its expiry when it holds.
    pub fn check(&self, token: &str, job_ref: &str, now: u64) -> Result<u64, Refused> {
        let (expires_at, tag) = token
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once('_'))
            .ok_or(Refused::Malformed)?;
        let expires_at: u64 = expires_at.parse().map_err(|_| Refused::Malformed)?;
        let tag = hex::decode(tag).map_err(|_| Refused::Malformed)?;
        // The tag first: an expiry is worth telling only for a real token.
        self.tag(job_ref, expires_at)
            .verify_slice(&tag)
            .map_err(|_| Refused::Forged)?;
        if expires_at <= now {
            return Err(Refused::Expired);
        }
        Ok(expires_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_its_job_until_it_expires() {
        let tokens = ReadTokens::new([7; 32]);
        let token = tokens.issue("payments:42", 2_000);
        assert!(token.starts_with("jrt_2000_") && token.len() == 4 + 4 + 1 + 64);
        assert_eq!(tokens.check(&token, "payments:42", 1_999), Ok(2_000));
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
        let other = ReadTokens::new([8; 32]).issue("payments:42", 2_000);
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
        ] {
            assert_eq!(
                tokens.check(bad, "payments:42", 1_000),
                Err(Refused::Malformed),
                "{bad}"
            );
        }
    }
}

//! `airlock serve`'s Redis flags (`--redis` and its TLS and credentials)
//! and its first connection: a configuration that cannot work (an
//! untrusted certificate, refused credentials, TLS on one side only) stops
//! the host within seconds with the cause and the flag to fix it; a Redis
//! that is not up yet is waited for.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use tokio::sync::watch;

use crate::store::{RedisAccess, Store};
use crate::tasks::Backoff;

/// How long each step of the first probe (connect, TLS, `AUTH`, `PING`)
/// may take.
const PROBE_WITHIN: Duration = Duration::from_secs(3);

/// Where Redis is and how to get in.
#[derive(Debug, Args)]
pub struct RedisArgs {
    /// Redis URL (`rediss://` for TLS); several comma-separated URLs are
    /// the seed nodes of a Redis Cluster. Put no password in it: use
    /// --redis-password-file or AIRLOCK_REDIS_PASSWORD.
    #[arg(long, env = "AIRLOCK_REDIS", default_value = "redis://127.0.0.1:6379")]
    pub redis: String,
    /// A PEM file of the CA certificates to trust for `rediss://` (a
    /// private CA); without it, the system's roots (`SSL_CERT_FILE`, else
    /// the system's bundle).
    #[arg(long, env = "AIRLOCK_REDIS_CA_FILE", value_name = "PEM")]
    pub redis_ca_file: Option<PathBuf>,
    /// A PEM client certificate, for Redis that asks for one (mutual TLS);
    /// with --redis-client-key.
    #[arg(
        long,
        env = "AIRLOCK_REDIS_CLIENT_CERT",
        value_name = "PEM",
        requires = "redis_client_key"
    )]
    pub redis_client_cert: Option<PathBuf>,
    /// The client certificate's PEM private key.
    #[arg(
        long,
        env = "AIRLOCK_REDIS_CLIENT_KEY",
        value_name = "PEM",
        requires = "redis_client_cert"
    )]
    pub redis_client_key: Option<PathBuf>,
    /// The Redis ACL user.
    #[arg(long, env = "AIRLOCK_REDIS_USER")]
    pub redis_user: Option<String>,
    /// A file holding the Redis password (of the ACL user, or
    /// `requirepass`'s); the environment's AIRLOCK_REDIS_PASSWORD is the
    /// other way to give it. Never a flag of its own: a command line is
    /// visible in `ps`.
    #[arg(long, env = "AIRLOCK_REDIS_PASSWORD_FILE", value_name = "FILE")]
    pub redis_password_file: Option<PathBuf>,
}

impl RedisArgs {
    /// The access these flags (and AIRLOCK_REDIS_PASSWORD) describe; a
    /// file that cannot be read is an error naming its flag.
    pub fn access(&self) -> anyhow::Result<RedisAccess> {
        let read = |flag: &str, path: &PathBuf| {
            std::fs::read(path)
                .map_err(|e| anyhow::anyhow!("{flag}: cannot read {}: {e}", path.display()))
        };
        let password = match &self.redis_password_file {
            Some(path) => {
                let bytes = read("--redis-password-file", path)?;
                let text = String::from_utf8(bytes).map_err(|_| {
                    anyhow::anyhow!("--redis-password-file: {} is not UTF-8", path.display())
                })?;
                Some(text.trim_end_matches(['\r', '\n']).to_string())
            }
            None => std::env::var("AIRLOCK_REDIS_PASSWORD").ok(),
        };
        let client = match (&self.redis_client_cert, &self.redis_client_key) {
            (Some(cert), Some(key)) => Some((
                read("--redis-client-cert", cert)?,
                read("--redis-client-key", key)?,
            )),
            _ => None,
        };
        let access = RedisAccess {
            urls: self.redis.clone(),
            ca: self
                .redis_ca_file
                .as_ref()
                .map(|path| read("--redis-ca-file", path))
                .transpose()?,
            client,
            user: self.redis_user.clone(),
            password: password.filter(|p| !p.is_empty()),
        };
        // Bad URLs and TLS flags on a plain URL fail here, at once.
        access.check()?;
        Ok(access)
    }
}

/// Connects to Redis: a first probe that fails on the configuration
/// (certificate, credentials, TLS on one side) ends the host with the
/// cause; one that finds no Redis yet waits for it, saying why each time,
/// until `shutdown`.
pub async fn connect(
    access: &RedisAccess,
    prefix: &str,
    shutdown: &watch::Receiver<bool>,
) -> anyhow::Result<Store> {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    loop {
        let failed = match access.probe(PROBE_WITHIN).await {
            Ok(()) => match Store::connect_with(access, prefix).await {
                Ok(store) => return Ok(store),
                Err(e) => anyhow::anyhow!("{e:#}"),
            },
            Err(e) if e.is_fatal() => return Err(e.into()),
            Err(e) => anyhow::Error::from(e),
        };
        if *shutdown.borrow() {
            return Err(failed);
        }
        tracing::warn!("{failed:#}; retrying");
        backoff.wait().await;
    }
}

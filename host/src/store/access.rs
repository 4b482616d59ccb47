//! How a host reaches Redis ([`RedisAccess`]): its URL (one server, or the
//! seed nodes of a Redis Cluster), TLS and credentials, as one set of
//! connection options for Airlock's connections and BullMQ's alike, and a
//! first probe whose failure says what is wrong and which flag fixes it
//! ([`Unreachable`]).
//!
//! TLS (`rediss://`) trusts the system's roots — the bundle
//! `SSL_CERT_FILE` names, else the system's own (Debian's
//! `/etc/ssl/certs`), read by `rustls-native-certs` — or, with a CA file
//! (`--redis-ca-file`), that CA alone; with neither, the Mozilla roots the
//! Redis client is built with. A client certificate and key make it mutual
//! TLS. An ACL user and password come from flags, a file or the
//! environment (`cli::serve`), never from the command line's URL alone:
//! the password is put into the connection options here and shows in no
//! log or error (URLs are printed with their user info redacted).

use std::time::Duration;

use bullmq::options::{RedisConnectionOptions, TlsCerts};
use redis::{AsyncConnectionConfig, Client, ClientTlsConfig, TlsCertificates};

/// Where Redis is and how to get in.
#[derive(Clone, Default)]
pub struct RedisAccess {
    /// One URL, or the comma-separated seed URLs of a Redis Cluster.
    pub urls: String,
    /// PEM certificates to trust instead of the system's roots.
    pub ca: Option<Vec<u8>>,
    /// A PEM client certificate and its key, for mutual TLS.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
    /// The ACL user.
    pub user: Option<String>,
    /// The password (of the ACL user, or `requirepass`'s).
    pub password: Option<String>,
}

impl std::fmt::Debug for RedisAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisAccess")
            .field("urls", &self.redacted())
            .field("ca", &self.ca.is_some())
            .field("client", &self.client.is_some())
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

/// Why a first connection failed, in an operator's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreachable {
    /// The server's certificate does not chain to a trusted root.
    #[error(
        "Redis at {0}: its TLS certificate is not trusted ({1}); give the CA that signed it with --redis-ca-file (or AIRLOCK_REDIS_CA_FILE)"
    )]
    NotTrusted(String, String),
    /// The server asks for a client certificate (mutual TLS), or refused
    /// the one given.
    #[error(
        "Redis at {0} wants a client certificate it trusts ({1}); give one with --redis-client-cert and --redis-client-key"
    )]
    ClientCertificate(String, String),
    /// The TLS files given cannot be used (not PEM, a v1 certificate, a
    /// key that does not match).
    #[error(
        "Redis at {0}: the TLS files given cannot be used ({1}); check --redis-ca-file, --redis-client-cert and --redis-client-key"
    )]
    BadTlsFiles(String, String),
    /// The server refused the user or password, or wants one.
    #[error(
        "Redis at {0} refused the credentials ({1}); check --redis-user and the password in --redis-password-file or AIRLOCK_REDIS_PASSWORD"
    )]
    Credentials(String, String),
    /// The server does not speak TLS, or speaks only TLS.
    #[error("Redis at {0}: {1}")]
    WrongScheme(String, String),
    /// Nothing listens there (yet).
    #[error(
        "Redis at {0} refused the connection; is it running, and is the port in --redis right?"
    )]
    Refused(String),
    /// Anything else (a timeout, a name that does not resolve).
    #[error("Redis at {0}: {1}")]
    Other(String, String),
}

impl Unreachable {
    /// Whether retrying cannot help: the configuration must change.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Unreachable::NotTrusted(..)
                | Unreachable::ClientCertificate(..)
                | Unreachable::BadTlsFiles(..)
                | Unreachable::Credentials(..)
                | Unreachable::WrongScheme(..)
        )
    }
}

impl RedisAccess {
    /// Redis at `urls`, with no TLS material or credentials of its own
    /// (the URL may carry them).
    pub fn url(urls: &str) -> RedisAccess {
        RedisAccess {
            urls: urls.to_string(),
            ..RedisAccess::default()
        }
    }

    /// The URLs with their user info redacted, for logs and errors.
    pub fn redacted(&self) -> String {
        self.list()
            .iter()
            .map(|u| match redis::parse_redis_url(u) {
                Some(mut url) => {
                    if url.password().is_some() {
                        let _ = url.set_password(Some("***"));
                    }
                    url.to_string()
                }
                None => "(an unparsable URL)".to_string(),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    fn list(&self) -> Vec<&str> {
        self.urls
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect()
    }

    /// The URLs as the client connects to them: each checked, with the
    /// user and password put in.
    fn connect_urls(&self) -> anyhow::Result<Vec<String>> {
        let urls = self.list();
        anyhow::ensure!(!urls.is_empty(), "--redis: no Redis URL given");
        let tls_material = self.ca.is_some() || self.client.is_some();
        urls.iter()
            .map(|u| {
                let mut url = redis::parse_redis_url(u).ok_or_else(|| {
                    anyhow::anyhow!(
                        "--redis: `{}` is not a Redis URL (redis://host:port, or rediss:// for TLS)",
                        RedisAccess::url(u).redacted()
                    )
                })?;
                if tls_material && url.scheme() != "rediss" {
                    anyhow::bail!(
                        "--redis-ca-file and --redis-client-cert are for TLS: the URL must be rediss://, not {}://",
                        url.scheme()
                    );
                }
                if let Some(user) = &self.user {
                    url.set_username(user)
                        .map_err(|_| anyhow::anyhow!("--redis-user: cannot go into {u}"))?;
                }
                if let Some(password) = &self.password {
                    url.set_password(Some(password))
                        .map_err(|_| anyhow::anyhow!("the Redis password cannot go into {u}"))?;
                }
                Ok(url.to_string())
            })
            .collect()
    }

    /// The TLS material to connect with: the CA file's certificates or
    /// the system's roots, and the client certificate. `None` for plain
    /// connections, and for TLS with neither (the client's built-in roots).
    /// `urls` are [`RedisAccess::connect_urls`]'s; the system's roots are
    /// read here, so once per connection attempt.
    fn tls(&self, urls: &[String]) -> Option<TlsCerts> {
        if !urls.iter().any(|u| u.starts_with("rediss:")) {
            return None;
        }
        let root_cert = match &self.ca {
            Some(ca) => Some(ca.clone()),
            None => system_roots(),
        };
        let (client_cert, client_key) = match &self.client {
            Some((cert, key)) => (Some(cert.clone()), Some(key.clone())),
            None => (None, None),
        };
        if root_cert.is_none() && client_cert.is_none() {
            return None;
        }
        Some(TlsCerts {
            root_cert,
            client_cert,
            client_key,
        })
    }

    /// Checks the URLs and the TLS flags against them, reading no file.
    pub fn check(&self) -> anyhow::Result<()> {
        self.connect_urls().map(|_| ())
    }

    /// The options every connection to this Redis is opened with.
    pub fn options(&self) -> anyhow::Result<RedisConnectionOptions> {
        let urls = self.connect_urls()?;
        let mut options = match urls.as_slice() {
            [one] => RedisConnectionOptions::new().url(one.as_str()),
            seeds => {
                let mut options =
                    RedisConnectionOptions::new().cluster_nodes(seeds.iter().map(String::as_str));
                if let Some(user) = &self.user {
                    options = options.username(user.as_str());
                }
                if let Some(password) = &self.password {
                    options = options.password(password.as_str());
                }
                options
            }
        };
        if let Some(certs) = self.tls(&urls) {
            options = options.tls_certs(certs);
        }
        Ok(options)
    }

    /// Connects once to each URL (a Cluster's seeds each as a server of its
    /// own) and asks `PING`, each step within `within`: what is wrong, in
    /// words, when it fails.
    pub async fn probe(&self, within: Duration) -> Result<(), Unreachable> {
        let other = |e: anyhow::Error| Unreachable::Other(self.redacted(), format!("{e:#}"));
        let urls = self.connect_urls().map_err(other)?;
        let tls = self.tls(&urls);
        for (url, shown) in urls.iter().zip(self.redacted().split(',')) {
            let shown = shown.to_string();
            let client = match &tls {
                Some(certs) => Client::build_with_tls(
                    url.as_str(),
                    TlsCertificates {
                        client_tls: match (&certs.client_cert, &certs.client_key) {
                            (Some(cert), Some(key)) => Some(ClientTlsConfig {
                                client_cert: cert.clone(),
                                client_key: key.clone(),
                            }),
                            _ => None,
                        },
                        root_cert: certs.root_cert.clone(),
                    },
                ),
                None => Client::open(url.as_str()),
            }
            .map_err(|e| classify(&shown, url, &e))?;
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(within))
                .set_response_timeout(Some(within));
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(|e| classify(&shown, url, &e))?;
            redis::cmd("PING")
                .query_async::<String>(&mut conn)
                .await
                .map_err(|e| classify(&shown, url, &e))?;
        }
        Ok(())
    }
}

/// The system's root certificates as one PEM bundle (`None`: none found).
fn system_roots() -> Option<Vec<u8>> {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        return None;
    }
    let bundle: Vec<pem::Pem> = found
        .certs
        .iter()
        .map(|der| pem::Pem::new("CERTIFICATE", der.as_ref().to_vec()))
        .collect();
    Some(pem::encode_many(&bundle).into_bytes())
}

/// What a connection error to `shown` (connecting to `url`) means.
pub fn classify(shown: &str, url: &str, e: &redis::RedisError) -> Unreachable {
    let text = e.to_string();
    let lower = text.to_lowercase();
    let shown = shown.to_string();
    let tls = url.starts_with("rediss:");
    if e.kind() == redis::ErrorKind::AuthenticationFailed
        || [
            "wrongpass",
            "noauth",
            "invalid username-password",
            "invalid password",
        ]
        .iter()
        .any(|w| lower.contains(w))
    {
        return Unreachable::Credentials(shown, text);
    }
    if lower.contains("unable to build client with tls") || lower.contains("invalidclientconfig") {
        return Unreachable::BadTlsFiles(shown, text);
    }
    if [
        "certificaterequired",
        "unknownca",
        "badcertificate",
        "certificateunknown",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        return Unreachable::ClientCertificate(shown, text);
    }
    if ["certificate", "unknownissuer", "invalid peer"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return Unreachable::NotTrusted(shown, text);
    }
    if tls
        && ["invalidcontenttype", "corrupt message", "record overflow"]
            .iter()
            .any(|w| lower.contains(w))
    {
        return Unreachable::WrongScheme(
            shown,
            format!("it does not speak TLS ({text}); use redis:// for it"),
        );
    }
    if lower.contains("connection refused") {
        return Unreachable::Refused(shown);
    }
    if !tls
        && [
            "connection reset",
            "broken pipe",
            "unexpected end",
            "connection closed",
            "eof",
        ]
        .iter()
        .any(|w| lower.contains(w))
    {
        return Unreachable::WrongScheme(
            shown,
            format!("it closed the connection ({text}); if it speaks TLS, use rediss://"),
        );
    }
    Unreachable::Other(shown, text)
}

//! Egress patterns (`scheme://host[:port]`): their syntax, parsing and
//! printing, and which request [`Destination`]s each one matches. The
//! rules and the policy built on them are in the parent module.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// This name or IP literal, lowercase.
    Exact(String),
    /// Any name ending in `.` + this suffix.
    Subdomains(String),
}

/// One allowed destination: scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressPattern {
    scheme: Scheme,
    host: HostPattern,
    /// `None`: any port.
    port: Option<u16>,
}

/// Why a pattern did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{pattern}` is not an egress pattern ({reason}); write scheme://host[:port], e.g. https://api.stripe.com or https://*.sendgrid.net:443"
)]
pub struct PatternError {
    /// The text given.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: String,
}

/// A host name as compared: lowercase, without a trailing dot, IPv6
/// literals without brackets.
fn normalize_host(host: &str) -> String {
    host.trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Longest pattern accepted.
pub const MAX_PATTERN_LEN: usize = 300;

/// The pattern's syntax as a regular expression (for API schemas); the
/// parser accepts exactly these strings (up to [`MAX_PATTERN_LEN`] long).
pub const PATTERN_REGEX: &str = r"^https?://(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(:(\*|[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$";

fn is_label(label: &str) -> bool {
    let b = label.as_bytes();
    (1..=63).contains(&b.len())
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

impl FromStr for EgressPattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| PatternError {
            pattern: text.to_string(),
            reason: reason.to_string(),
        };
        if text.len() > MAX_PATTERN_LEN {
            return Err(bad("too long"));
        }
        let (scheme, rest) = text.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let scheme = match scheme {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return Err(bad("the scheme must be http or https, in lowercase")),
        };
        let (host, port) = match rest.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        };
        let port = match port {
            None => Some(scheme.default_port()),
            Some("*") => None,
            Some(p) if !p.starts_with('0') && p.bytes().all(|b| b.is_ascii_digit()) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| bad("the port must be 1 to 65535 or `*`"))?,
            ),
            Some(_) => return Err(bad("the port must be 1 to 65535 or `*`")),
        };
        let (wildcard, name) = match host.strip_prefix("*.") {
            Some(name) => (true, name),
            None => (false, host),
        };
        if !name.split('.').all(is_label) {
            return Err(bad(
                "the host must be a DNS name or IPv4 address (labels of letters, digits and inner `-`), optionally after `*.`",
            ));
        }
        let name = name.to_ascii_lowercase();
        let host = if wildcard {
            HostPattern::Subdomains(name)
        } else {
            HostPattern::Exact(name)
        };
        Ok(EgressPattern { scheme, host, port })
    }
}

impl fmt::Display for EgressPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match &self.host {
            HostPattern::Exact(h) => h.clone(),
            HostPattern::Subdomains(s) => format!("*.{s}"),
        };
        match self.port {
            None => write!(f, "{}://{host}:*", self.scheme.as_str()),
            Some(p) if p == self.scheme.default_port() => {
                write!(f, "{}://{host}", self.scheme.as_str())
            }
            Some(p) => write!(f, "{}://{host}:{p}", self.scheme.as_str()),
        }
    }
}

impl Serialize for EgressPattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EgressPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Where a request goes, as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The scheme.
    pub scheme: Scheme,
    /// The host, normalized (lowercase, no brackets, no trailing dot).
    pub host: String,
    /// The port, the scheme's default when the URL has none.
    pub port: u16,
    /// The method, uppercase.
    pub method: String,
    /// The path (without the query).
    pub path: String,
}

impl Destination {
    /// The destination of a request to `uri` with `method`; `None` when the
    /// URI lacks a scheme this policy knows or a host.
    pub fn of(method: &str, uri: &http::Uri) -> Option<Destination> {
        let scheme = match uri.scheme_str()? {
            s if s.eq_ignore_ascii_case("http") => Scheme::Http,
            s if s.eq_ignore_ascii_case("https") => Scheme::Https,
            _ => return None,
        };
        let host = normalize_host(uri.host()?);
        if host.is_empty() {
            return None;
        }
        Some(Destination {
            scheme,
            port: uri.port_u16().unwrap_or(scheme.default_port()),
            host,
            method: method.to_ascii_uppercase(),
            path: uri.path().to_string(),
        })
    }
}

impl Destination {
    /// The `Host` header a request to this destination carries: the host
    /// as matched (lowercase, no trailing dot, IPv6 in brackets), and the
    /// port when it is not the scheme's default. Never the guest's own
    /// spelling of the authority, so a server sees the name the rules
    /// allowed (`good.test`, not `good.test.`) and no user info.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == self.scheme.default_port() {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(
            f,
            "{} {}://{host}:{}{}",
            self.method,
            self.scheme.as_str(),
            self.port,
            self.path
        )
    }
}

impl EgressPattern {
    /// Whether `dest` is one of this pattern's destinations.
    pub fn matches(&self, dest: &Destination) -> bool {
        if self.scheme != dest.scheme || self.port.is_some_and(|p| p != dest.port) {
            return false;
        }
        match &self.host {
            HostPattern::Exact(h) => *h == dest.host,
            HostPattern::Subdomains(suffix) => dest
                .host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }

    /// Whether some destination is one of both this pattern's and
    /// `other`'s: same scheme, compatible ports, and host patterns that
    /// share a name.
    pub fn overlaps(&self, other: &EgressPattern) -> bool {
        if self.scheme != other.scheme {
            return false;
        }
        if let (Some(a), Some(b)) = (self.port, other.port)
            && a != b
        {
            return false;
        }
        // `name` is one of `*.suffix`'s names.
        let under = |name: &str, suffix: &str| {
            name.strip_suffix(suffix)
                .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
        };
        match (&self.host, &other.host) {
            (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
            (HostPattern::Exact(name), HostPattern::Subdomains(suffix))
            | (HostPattern::Subdomains(suffix), HostPattern::Exact(name)) => under(name, suffix),
            (HostPattern::Subdomains(a), HostPattern::Subdomains(b)) => {
                a == b || under(a, b) || under(b, a)
            }
        }
    }
}

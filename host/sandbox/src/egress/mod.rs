//! Where a guest may send HTTP requests: deny by default.
//!
//! Two lists must both allow a request. The operator's ([`OperatorEgress`],
//! `airlock serve --egress-allow`) is the ceiling of a host; a queue
//! binding's ([`EgressRule`]s, its `egress` list) says what its jobs need.
//! Bindings live in Redis, which every BullMQ producer can write, so the
//! operator's list is what really bounds a forged binding.
//!
//! A destination that both allow is then resolved, and every address it
//! resolves to is checked ([`is_public`]): loopback, private, link-local
//! (the cloud metadata address among them), CGNAT, multicast, broadcast,
//! reserved and documentation ranges, IPv6 unique-local and link-local, and
//! IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4)
//! judged by the address they embed, are refused unless the operator allows
//! that network (`--egress-allow-network`). The connection goes to an
//! address that passed, never to a second resolution, so DNS rebinding
//! cannot swap the address between the check and the connect.
//!
//! Patterns are `scheme://host[:port]`: the host is a DNS name, an IPv4
//! address, or `*.example.com` (any subdomain of `example.com`, not
//! `example.com` itself); the port defaults to the scheme's and `*` means
//! any port ([`PATTERN_REGEX`] is the exact syntax).

mod address;
mod pattern;

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

pub use self::address::is_public;
pub use self::pattern::{
    Destination, EgressPattern, MAX_PATTERN_LEN, PATTERN_REGEX, PatternError, Scheme,
};

/// One entry of a binding's `egress` list: a destination pattern, and
/// optionally the methods and the path prefix requests must have. Written
/// as a bare pattern string or as an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum EgressRule {
    /// Any method, any path of the destination.
    Pattern(EgressPattern),
    /// A destination with conditions.
    Rule {
        /// The destination: `scheme://host[:port]`.
        url: EgressPattern,
        /// Allowed methods (`GET`, `POST`, ...); absent: any.
        #[serde(skip_serializing_if = "Option::is_none")]
        methods: Option<Vec<String>>,
        /// Requests' paths must be within this prefix, segment by segment
        /// (`crate::url_path`: a path with a dot segment or another
        /// ambiguous spelling is within none); absent: any path.
        #[serde(rename = "pathPrefix", skip_serializing_if = "Option::is_none")]
        path_prefix: Option<String>,
    },
}

/// The two spellings of a rule, before the pattern is parsed (so that a bad
/// pattern gets the parser's message, not "no variant matched").
#[derive(Deserialize)]
#[serde(untagged)]
enum RawRule {
    Pattern(String),
    Rule(RawRuleObject),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRuleObject {
    url: String,
    #[serde(default)]
    methods: Option<Vec<String>>,
    #[serde(default)]
    path_prefix: Option<String>,
}

impl<'de> Deserialize<'de> for EgressRule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        const EXPECTED: &str = "an egress rule is a pattern string (`https://api.example.com`) or an object {url, methods?, pathPrefix?}";
        // Read through `strict::buffered`: serde's buffer for the untagged
        // enum would take `["https://x", null, null]` as the object.
        let raw: RawRule =
            airlock_core::strict::buffered(d, EXPECTED).map_err(|_| D::Error::custom(EXPECTED))?;
        Ok(match raw {
            RawRule::Pattern(p) => EgressRule::Pattern(p.parse().map_err(D::Error::custom)?),
            RawRule::Rule(r) => EgressRule::Rule {
                url: r.url.parse().map_err(D::Error::custom)?,
                methods: r.methods,
                path_prefix: r.path_prefix,
            },
        })
    }
}

impl EgressRule {
    /// The rule's destination pattern.
    pub fn pattern(&self) -> &EgressPattern {
        match self {
            EgressRule::Pattern(p) | EgressRule::Rule { url: p, .. } => p,
        }
    }

    /// Whether this rule allows `dest`.
    pub fn allows(&self, dest: &Destination) -> bool {
        self.allows_on_any_path(dest)
            && match self {
                EgressRule::Rule {
                    path_prefix: Some(p),
                    ..
                } => crate::url_path::within(p, &dest.path),
                _ => true,
            }
    }

    /// Whether this rule would allow `dest` on another path: its
    /// destination and methods match.
    fn allows_on_any_path(&self, dest: &Destination) -> bool {
        match self {
            EgressRule::Pattern(p) => p.matches(dest),
            EgressRule::Rule { url, methods, .. } => {
                url.matches(dest)
                    && methods
                        .as_ref()
                        .is_none_or(|m| m.iter().any(|m| m.eq_ignore_ascii_case(&dest.method)))
            }
        }
    }

    /// Checks the parts a pattern's parser does not: method names and the
    /// path prefix. Names the part.
    pub fn validate(&self) -> Result<(), String> {
        if let EgressRule::Rule {
            methods,
            path_prefix,
            ..
        } = self
        {
            for m in methods.iter().flatten() {
                if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
                    return Err(format!("methods: `{m}` is not an HTTP method"));
                }
            }
            if let Some(p) = path_prefix {
                crate::url_path::check_prefix(p).map_err(|e| format!("pathPrefix: {e}"))?;
            }
        }
        Ok(())
    }
}

/// The operator's egress settings of a host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorEgress {
    /// Destinations any binding may be allowed (`--egress-allow`).
    pub allow: Vec<EgressPattern>,
    /// Networks requests may reach although they are not public
    /// (`--egress-allow-network`, e.g. `127.0.0.1/32` for a local gateway).
    pub networks: Vec<IpNet>,
}

impl OperatorEgress {
    /// Whether any destination of `rule` is also on the operator's list: a
    /// rule for which this is false can never let a request through.
    pub fn could_allow(&self, rule: &EgressRule) -> bool {
        self.allow.iter().any(|p| p.overlaps(rule.pattern()))
    }
}

/// Why a request was refused before anything was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denial {
    /// The URL has no host, or a scheme other than http(s).
    #[error("the request URL has no http(s) destination")]
    BadUrl,
    /// A scheme other than http or https (`file`, `gopher`, `ftp`, `ws`,
    /// ...): refused whatever its destination, also as a redirect's hop.
    #[error("the scheme `{0}:` is not http or https; only HTTP requests leave the sandbox")]
    NotHttp(String),
    /// Not on the binding's list.
    #[error("{0} is not in this queue's egress list")]
    NotInBinding(String),
    /// On the binding's list but not the operator's.
    #[error("{0} is not allowed by this host's operator (--egress-allow)")]
    NotByOperator(String),
    /// The name resolved only to addresses the host refuses.
    #[error(
        "{dest} resolves to {addrs}, which this host refuses to reach (private, loopback, link-local or reserved)"
    )]
    PrivateAddress {
        /// The destination.
        dest: String,
        /// What it resolved to.
        addrs: String,
    },
    /// Only rules limited to a path prefix match the destination, and the
    /// request's path is spelled so that servers may read it differently
    /// (see `crate::url_path`).
    #[error(
        "{dest} is not in this queue's egress list: its path holds {why}, which a rule with a pathPrefix never allows"
    )]
    AmbiguousPath {
        /// The destination.
        dest: String,
        /// What makes the path ambiguous.
        why: &'static str,
    },
    /// The run's request count is used up.
    #[error("this run already made its {0} allowed HTTP requests (limit maxHttpRequests)")]
    TooManyRequests(u32),
    /// DNS gave nothing.
    #[error("{0} did not resolve")]
    Unresolved(String),
}

impl Denial {
    /// A short name for metrics: `policy`, `address`, `count`, `dns`.
    pub fn reason(&self) -> &'static str {
        match self {
            Denial::BadUrl
            | Denial::NotHttp(_)
            | Denial::NotInBinding(_)
            | Denial::AmbiguousPath { .. }
            | Denial::NotByOperator(_) => "policy",
            Denial::PrivateAddress { .. } => "address",
            Denial::TooManyRequests(_) => "count",
            Denial::Unresolved(_) => "dns",
        }
    }
}

/// The egress policy of one run: the host's operator settings and the
/// binding's rules.
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    /// The operator's settings.
    pub operator: std::sync::Arc<OperatorEgress>,
    /// The binding's rules.
    pub rules: Vec<EgressRule>,
}

impl EgressPolicy {
    /// Whether both lists allow `dest` (names are not resolved here).
    pub fn check(&self, dest: &Destination) -> Result<(), Denial> {
        if !self.rules.iter().any(|r| r.allows(dest)) {
            if let Some(why) = crate::url_path::ambiguity(&dest.path)
                && self.rules.iter().any(|r| r.allows_on_any_path(dest))
            {
                return Err(Denial::AmbiguousPath {
                    dest: dest.to_string(),
                    why,
                });
            }
            return Err(Denial::NotInBinding(dest.to_string()));
        }
        if !self.operator.allow.iter().any(|p| p.matches(dest)) {
            return Err(Denial::NotByOperator(dest.to_string()));
        }
        Ok(())
    }

    /// Whether a connection to `ip` is allowed: public, or in a network
    /// the operator allows.
    pub fn address_allowed(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.operator.networks.iter().any(|n| n.contains(&ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(url: &str) -> Destination {
        Destination::of("GET", &url.parse().unwrap()).unwrap()
    }

    #[test]
    fn patterns_parse_and_print() {
        for (text, shown) in [
            ("https://api.stripe.com", "https://api.stripe.com"),
            ("https://API.Stripe.com:443", "https://api.stripe.com"),
            ("https://*.sendgrid.net", "https://*.sendgrid.net"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://localhost:*", "http://localhost:*"),
        ] {
            let p: EgressPattern = text.parse().unwrap();
            assert_eq!(p.to_string(), shown, "{text}");
        }
        for bad in [
            "api.stripe.com",
            "ftp://x",
            "HTTPS://x.com",
            "https://",
            "https://a.*.com",
            "https://x.com/path",
            "https://x.com/",
            "https://x.com:99999",
            "https://x.com:0",
            "https://x.com:080",
            "https://*.",
            "https://-x.com",
            "http://[::1]:80",
        ] {
            assert!(bad.parse::<EgressPattern>().is_err(), "{bad}");
        }
    }

    #[test]
    fn patterns_overlap_when_some_destination_matches_both() {
        let overlaps = |a: &str, b: &str| {
            let (a, b): (EgressPattern, EgressPattern) = (a.parse().unwrap(), b.parse().unwrap());
            assert_eq!(a.overlaps(&b), b.overlaps(&a), "{a} {b}: not symmetric");
            a.overlaps(&b)
        };
        assert!(overlaps(
            "https://api.stripe.com",
            "https://api.stripe.com:443"
        ));
        assert!(overlaps("https://api.stripe.com", "https://*.stripe.com"));
        assert!(overlaps("https://*.api.stripe.com", "https://*.stripe.com"));
        assert!(overlaps("http://127.0.0.1:*", "http://127.0.0.1:8098"));
        assert!(!overlaps("https://api.stripe.com", "http://api.stripe.com"));
        assert!(!overlaps(
            "https://api.stripe.com",
            "https://api.stripe.com:8443"
        ));
        assert!(!overlaps("https://stripe.com", "https://*.stripe.com"));
        assert!(!overlaps("https://evilstripe.com", "https://*.stripe.com"));
        assert!(!overlaps("https://*.a.com", "https://*.b.com"));
    }

    #[test]
    fn subdomain_wildcards_match_subdomains_only() {
        let p: EgressPattern = "https://*.sendgrid.net".parse().unwrap();
        assert!(p.matches(&dest("https://api.sendgrid.net/v3/mail")));
        assert!(p.matches(&dest("https://a.b.sendgrid.net")));
        assert!(!p.matches(&dest("https://sendgrid.net")));
        assert!(!p.matches(&dest("https://evilsendgrid.net")));
        assert!(!p.matches(&dest("http://api.sendgrid.net")));
        assert!(!p.matches(&dest("https://api.sendgrid.net:8443")));
        let any_port: EgressPattern = "http://127.0.0.1:*".parse().unwrap();
        assert!(any_port.matches(&dest("http://127.0.0.1:5555/x")));
    }

    #[test]
    fn rules_check_methods_and_paths() {
        let rule: EgressRule = serde_json::from_value(serde_json::json!({
            "url": "https://api.stripe.com", "methods": ["POST"], "pathPrefix": "/v1/"
        }))
        .unwrap();
        let post = Destination::of(
            "post",
            &"https://api.stripe.com/v1/charges".parse().unwrap(),
        )
        .unwrap();
        assert!(rule.allows(&post));
        assert!(!rule.allows(&dest("https://api.stripe.com/v1/charges")));
        let other =
            Destination::of("POST", &"https://api.stripe.com/v2/x".parse().unwrap()).unwrap();
        assert!(!rule.allows(&other));
        let bare: EgressRule = serde_json::from_value(serde_json::json!("https://x.io")).unwrap();
        assert!(bare.allows(&dest("https://x.io/anything")));
    }

    #[test]
    fn both_lists_must_allow() {
        let policy = EgressPolicy {
            operator: std::sync::Arc::new(OperatorEgress {
                allow: vec!["https://*.example.com".parse().unwrap()],
                networks: vec![],
            }),
            rules: vec![
                EgressRule::Pattern("https://api.example.com".parse().unwrap()),
                EgressRule::Pattern("https://other.org".parse().unwrap()),
            ],
        };
        assert_eq!(policy.check(&dest("https://api.example.com")), Ok(()));
        assert!(matches!(
            policy.check(&dest("https://other.org")),
            Err(Denial::NotByOperator(_))
        ));
        assert!(matches!(
            policy.check(&dest("https://www.example.com")),
            Err(Denial::NotInBinding(_))
        ));
    }

    #[test]
    fn only_public_addresses_are_reachable_by_default() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:0001::1",
            "2001:db8::1",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            assert!(!is_public(ip), "{private} must be refused");
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            let ip: IpAddr = public.parse().unwrap();
            assert!(is_public(ip), "{public} is public");
        }
        let policy = EgressPolicy {
            operator: std::sync::Arc::new(OperatorEgress {
                allow: vec![],
                networks: vec!["127.0.0.1/32".parse().unwrap()],
            }),
            rules: vec![],
        };
        assert!(policy.address_allowed("127.0.0.1".parse().unwrap()));
        assert!(!policy.address_allowed("127.0.0.2".parse().unwrap()));
        // The mapped form of an allowed network is judged by its IPv4 address
        // only when the operator allows that form too.
        assert!(!policy.address_allowed("::ffff:127.0.0.2".parse().unwrap()));
    }
}

//! Secret placeholders in outbound requests: the [`Grant`]s a run holds,
//! their values filled in only for the destinations each secret's policy
//! allows, and their names put back for the transcript. Apart because it is
//! the one place a secret's value enters a request.

use crate::egress::Destination;
use crate::secrets::Secret;

/// A secret handed to the guest in this run, as its placeholder.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The secret's name.
    pub name: String,
    /// What the guest holds.
    pub placeholder: String,
    /// The secret.
    pub secret: Secret,
}

/// Replaces the placeholders of `grants` that may go to `dest` in `text`.
pub(super) fn substitute(
    text: &str,
    grants: &[Grant],
    dest: &Destination,
    body: bool,
) -> Option<String> {
    let mut out: Option<String> = None;
    for grant in grants {
        if body && !grant.secret.policy.in_body {
            continue;
        }
        if !grant.secret.policy.allow.iter().any(|p| p.matches(dest)) {
            continue;
        }
        let current = out.as_deref().unwrap_or(text);
        if current.contains(&grant.placeholder) {
            out = Some(current.replace(&grant.placeholder, &grant.secret.value));
        }
    }
    out
}

/// `text` with each secret placeholder of the run as `[secret:NAME]`: what
/// a transcript keeps (a placeholder is random per run; the name is what
/// the guest asked for).
pub(super) fn named_placeholders(text: &str, grants: &[Grant]) -> String {
    let mut out = text.to_string();
    for grant in grants {
        if out.contains(&grant.placeholder) {
            out = out.replace(&grant.placeholder, &format!("[secret:{}]", grant.name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::SecretPolicy;

    #[test]
    fn placeholders_are_replaced_only_for_their_destinations() {
        let grant = Grant {
            name: "STRIPE_KEY".into(),
            placeholder: "airlock-secret-abc".into(),
            secret: Secret {
                value: zeroize::Zeroizing::new("sk_live".into()),
                policy: SecretPolicy {
                    allow: vec!["https://api.stripe.com".parse().unwrap()],
                    reveal: false,
                    in_body: false,
                },
                version: 1,
                set_at_ms: 0,
            },
        };
        let stripe =
            Destination::of("POST", &"https://api.stripe.com/v1".parse().unwrap()).unwrap();
        let evil = Destination::of("POST", &"https://evil.example/x".parse().unwrap()).unwrap();
        let grants = [grant];
        assert_eq!(
            substitute("Bearer airlock-secret-abc", &grants, &stripe, false).as_deref(),
            Some("Bearer sk_live")
        );
        assert_eq!(
            substitute("Bearer airlock-secret-abc", &grants, &evil, false),
            None
        );
        assert_eq!(
            substitute("{\"k\":\"airlock-secret-abc\"}", &grants, &stripe, true),
            None,
            "bodies only for secrets sealed with inBody"
        );
    }
}

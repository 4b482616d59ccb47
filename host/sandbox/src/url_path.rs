//! Path prefixes — a binding egress rule's `pathPrefix`, a secret's
//! destination with a path (`https://api.sendgrid.com/v3/mail/send`) — and
//! the one way a request's path is compared with them.
//!
//! Servers read paths their own way: `/v3/mail/send/../../admin`,
//! `/v3/mail/send/%2e%2e/admin`, `/v3/mail/send%2F..%2Fadmin`,
//! `/v3/mail/send;x/../admin` or `/v3/mail/send\..\admin` reach `/admin`
//! on some servers and not on others. So a request path holding any such
//! spelling — a `.` or `..` segment (also percent-encoded), an encoded `/`
//! or `\`, a `\`, a `;`, or a NUL — is within no prefix: a rule with a
//! prefix does not allow it, and a secret with a path is not put on it.
//! Any other path is compared segment by segment, as written (no
//! percent-decoding: `/v3/m%61il/send` is not `/v3/mail/send`, which
//! fails closed): `/v3/mail/send` covers itself and what is below it
//! (`/v3/mail/send/batch`), not `/v3/mail/sender`; a prefix ending in `/`
//! covers what is below it.
//!
//! A prefix itself is written plainly: it starts with `/` and holds no dot
//! segment, `%`, `;`, `\`, `?`, `#` or control character ([`check_prefix`]).

/// Why `path` (a request's path, without its query) cannot be compared
/// with a prefix; `None` when it can.
pub fn ambiguity(path: &str) -> Option<&'static str> {
    if path.contains('\\') {
        return Some("a backslash");
    }
    if path.contains(';') {
        return Some("a `;`");
    }
    if path.bytes().any(|b| b.is_ascii_control()) {
        return Some("a control character");
    }
    let lower = path.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") || lower.contains("%00") {
        return Some("an encoded `/`, `\\` or NUL");
    }
    let dot_segment = lower
        .split('/')
        .any(|segment| matches!(segment.replace("%2e", ".").as_str(), "." | ".."));
    dot_segment.then_some("a `.` or `..` segment")
}

/// Whether `path` is within `prefix` (see the module docs); false for a
/// path with an [`ambiguity`].
pub fn within(prefix: &str, path: &str) -> bool {
    if ambiguity(path).is_some() {
        return false;
    }
    let path = if path.is_empty() { "/" } else { path };
    match path.strip_prefix(prefix) {
        None => false,
        Some(rest) => prefix.ends_with('/') || rest.is_empty() || rest.starts_with('/'),
    }
}

/// The characters a prefix is written with: unreserved characters,
/// sub-delimiters but `;`, `:`, `@` and `/`.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()*+,=:@/".contains(c)
}

/// Checks a prefix as written in a rule or a secret's destination: what is
/// wrong with it, if anything.
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    if !prefix.starts_with('/') {
        return Err(format!("`{prefix}` must start with `/`"));
    }
    if prefix.len() > MAX_PREFIX_LEN {
        return Err(format!("is longer than {MAX_PREFIX_LEN} characters"));
    }
    if let Some(c) = prefix.chars().find(|c| !plain(*c)) {
        return Err(format!(
            "`{prefix}` holds `{}`; write the path plainly: letters, digits and `-._~!$&'()*+,=:@/` (no percent-encoding, `;`, `\\`, query or fragment)",
            c.escape_default()
        ));
    }
    if prefix.split('/').any(|s| s == "." || s == "..") {
        return Err(format!("`{prefix}` holds a `.` or `..` segment"));
    }
    Ok(())
}

/// Longest prefix accepted.
pub const MAX_PREFIX_LEN: usize = 1024;

/// A prefix's syntax as a regular expression (for API schemas): exactly
/// what [`check_prefix`] accepts (up to [`MAX_PREFIX_LEN`] long) — segments
/// of the characters [`check_prefix`] names, none of them `.` or `..`.
pub const PREFIX_REGEX: &str = r"^(/([A-Za-z0-9_~!$&'()*+,=:@-]|\.[A-Za-z0-9_~!$&'()*+,=:@-]|\.\.[A-Za-z0-9._~!$&'()*+,=:@-])[A-Za-z0-9._~!$&'()*+,=:@-]*|/)+$";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_spellings_are_within_no_prefix() {
        for path in [
            "/v3/mail/send/../../admin",
            "/v3/mail/send/./x",
            "/v3/mail/send/%2e%2e/admin",
            "/v3/mail/send/%2E./admin",
            "/v3/mail/send/.%2e",
            "/v3/mail/send%2F..%2Fadmin",
            "/v3/mail/send%2fx",
            "/v3/mail/send%5c..%5cadmin",
            "/v3/mail/send\\..\\admin",
            "/v3/mail/send;x/../admin",
            "/v3/mail/send;jsessionid=1",
            "/v3/mail/send%00",
        ] {
            assert!(ambiguity(path).is_some(), "{path}");
            assert!(!within("/v3/mail/send", path), "{path}");
            assert!(!within("/", path), "{path}");
        }
    }

    #[test]
    fn prefixes_cover_whole_segments() {
        assert!(within("/v3/mail/send", "/v3/mail/send"));
        assert!(within("/v3/mail/send", "/v3/mail/send/batch"));
        assert!(!within("/v3/mail/send", "/v3/mail/sender"));
        assert!(!within("/v3/mail/send", "/v3/mail"));
        assert!(!within("/v3/mail/send", "/v3/m%61il/send"));
        assert!(within("/v1/", "/v1/charges"));
        assert!(!within("/v1/", "/v1"));
        assert!(within("/", "/anything"));
        assert!(within("/", ""));
        assert!(within("/v1.2/x", "/v1.2/x/y"));
        assert!(within("/a", "/a/..b"), "`..b` is a name, not a dot segment");
    }

    #[test]
    fn a_prefix_is_written_plainly() {
        for good in [
            "/",
            "/v3/mail/send",
            "/v1/",
            "/v1.2/x",
            "/a/..b/.c",
            "/@me:x",
        ] {
            assert_eq!(check_prefix(good), Ok(()), "{good}");
        }
        for bad in [
            "v3", "/v3/../x", "/v3/.", "/a%2e", "/a;b", "/a\\b", "/a?b", "/a#b", "/a\n", "/é",
        ] {
            assert!(check_prefix(bad).is_err(), "{bad}");
        }
    }
}

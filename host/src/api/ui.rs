//! The dashboard at `/ui`: a single-page app built with npm at build time
//! (`host/ui`, `make ui`) and embedded in the binary, so a host needs no
//! Node at run time.
//!
//! It is static files only. Everything it shows it reads from the public
//! `/v1` API and its SSE streams with the token the user logs in with —
//! there is no other way in — so the files are served without a token; the
//! token lives in the tab's `sessionStorage` and goes out as an
//! `Authorization` header, never in a URL. The pages may load only
//! themselves and talk only to this origin (`Content-Security-Policy`),
//! and may not be framed.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use include_dir::{Dir, include_dir};

static UI: Dir<'_> = include_dir!("$OUT_DIR/ui");

/// What the pages may do: load their own scripts, styles and images, and
/// fetch from this origin only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// `/ui` → `/ui/`, so the pages' relative links resolve.
pub async fn root() -> Redirect {
    Redirect::permanent("/ui/")
}

/// The app's page.
pub async fn index() -> Response {
    file("index.html")
}

/// One of the app's files; unknown paths get the app's page (its routes
/// live in the URL's fragment, so these are mistyped links).
pub async fn asset(Path(path): Path<String>) -> Response {
    if UI.get_file(&path).is_some() || from_disk(&path).is_some() {
        file(&path)
    } else {
        file("index.html")
    }
}

/// A development aid: with `AIRLOCK_UI_DIR` set, the files are read from
/// that folder (`host/ui/dist`) at each request instead of the embedded
/// copy, so a UI rebuild shows without rebuilding the binary.
fn from_disk(path: &str) -> Option<Vec<u8>> {
    let dir = std::env::var_os("AIRLOCK_UI_DIR")?;
    if path.split('/').any(|part| part == ".." || part.is_empty()) {
        return None;
    }
    std::fs::read(std::path::Path::new(&dir).join(path)).ok()
}

fn file(path: &str) -> Response {
    let contents = match from_disk(path) {
        Some(bytes) => bytes,
        None => match UI.get_file(path) {
            Some(file) => file.contents().to_vec(),
            None => return (StatusCode::NOT_FOUND, "not found").into_response(),
        },
    };
    let mime = match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        Some("map") => "application/json",
        _ => "application/octet-stream",
    };
    let mut response = contents.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // The page is small and changes with the binary; assets are named by
    // the build, but revalidating costs little.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

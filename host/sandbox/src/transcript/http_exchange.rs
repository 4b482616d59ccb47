//! Outbound HTTP as a transcript records it: bodies (cut at
//! [`MAX_BODY_BYTES`]), responses and header lists, and [`HttpAnswers`],
//! through which a replay answers requests from a recording instead of
//! the network.

use serde::{Deserialize, Serialize};

use super::{MAX_BODY_BYTES, MAX_HEADERS};

/// An HTTP body as recorded: its first [`MAX_BODY_BYTES`] as UTF-8 text
/// (lossy: bytes that are not UTF-8 become U+FFFD) and its full length.
/// No hash of the whole body is kept: one over a body holding a weak
/// secret would let a reader guess it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedBody {
    /// The body's first bytes as UTF-8 text (lossy when not text).
    pub text: String,
    /// Its full length, bytes.
    pub len: u64,
    /// Whether `text` holds less than the whole body.
    #[serde(default)]
    pub cut: bool,
}

impl RecordedBody {
    /// Records `bytes` (the whole body).
    pub fn of(bytes: &[u8]) -> RecordedBody {
        let mut tee = BodyTee::default();
        tee.push(bytes);
        tee.body()
    }
}

/// A body read chunk by chunk: its first [`MAX_BODY_BYTES`] and its
/// length (nothing more is held, whatever its size).
#[derive(Debug, Default)]
pub(super) struct BodyTee {
    kept: Vec<u8>,
    len: u64,
}

impl BodyTee {
    pub(super) fn push(&mut self, chunk: &[u8]) {
        let room = MAX_BODY_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        self.len += chunk.len() as u64;
    }

    pub(super) fn body(&self) -> RecordedBody {
        RecordedBody {
            text: String::from_utf8_lossy(&self.kept).into_owned(),
            len: self.len,
            cut: (self.kept.len() as u64) < self.len,
        }
    }
}

/// An HTTP response as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedResponse {
    /// Its status.
    pub status: u16,
    /// Its headers (the first [`MAX_HEADERS`]).
    pub headers: Vec<(String, String)>,
    /// Its body as the guest read it (up to where it stopped reading).
    pub body: RecordedBody,
}

/// Answers a run's outbound requests instead of the network: a replay
/// (`RunEnv::http_answers`). Each request comes as the guest wrote it —
/// method, URL, headers and body with secret placeholders named
/// (`[secret:NAME]`) — and gets a response, or the reason it has none
/// (the guest sees a transport error).
pub trait HttpAnswers: Send + Sync + std::fmt::Debug {
    /// The response to one request.
    fn answer(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &RecordedBody,
    ) -> Result<RecordedResponse, String>;
}

/// Headers as recorded: the first [`MAX_HEADERS`], values as text.
pub fn recorded_headers(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .take(MAX_HEADERS)
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

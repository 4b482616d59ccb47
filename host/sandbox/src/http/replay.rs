//! A replay's answer to an outbound request: the response comes from the
//! recorded run ([`HttpAnswers`]) instead of the network. Apart because
//! nothing here leaves the host, so no policy or cap applies.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, WasiBody};

use super::Grant;
use super::placeholders::named_placeholders;
use crate::transcript::{HttpAnswers, HttpSlot, RecordedBody, recorded_headers};

/// A replayed request's response, from `answers` (see
/// [`RunHttp::answers`](super::RunHttp::answers)); the request is read to its end and recorded.
pub(super) async fn answer_from(
    answers: Arc<dyn HttpAnswers>,
    request: http::Request<WasiBody>,
    method: String,
    grants: Vec<Grant>,
    slot: Option<HttpSlot>,
) -> super::Sent {
    let url = named_placeholders(&request.uri().to_string(), &grants);
    let headers: Vec<(String, String)> = recorded_headers(request.headers())
        .into_iter()
        .map(|(name, value)| (name, named_placeholders(&value, &grants)))
        .collect();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return Err(e),
    };
    let body =
        RecordedBody::of(named_placeholders(&String::from_utf8_lossy(&body), &grants).as_bytes());
    if let Some(slot) = &slot {
        slot.request_body(body.clone());
    }
    match answers.answer(&method, &url, &headers, &body) {
        Ok(recorded) => {
            if let Some(slot) = &slot {
                slot.response(recorded.status, recorded.headers.clone());
                slot.body_chunk(recorded.body.text.as_bytes());
            }
            let mut response = http::Response::builder().status(recorded.status);
            for (name, value) in &recorded.headers {
                // The body is the recorded text: its old length no longer
                // holds when it was cut.
                if name.eq_ignore_ascii_case("content-length")
                    || name.eq_ignore_ascii_case("transfer-encoding")
                {
                    continue;
                }
                response = response.header(name.as_str(), value.as_str());
            }
            let body = http_body_util::Full::new(Bytes::from(recorded.body.text))
                .map_err(|never| match never {})
                .boxed_unsync();
            let response = response
                .body(body)
                .map_err(|e| Error::InternalError(Some(e.to_string())))?;
            Ok((response, Box::new(async { Ok(()) })))
        }
        Err(why) => {
            if let Some(slot) = &slot {
                slot.failed(why.clone());
            }
            Err(Error::InternalError(Some(why)))
        }
    }
}

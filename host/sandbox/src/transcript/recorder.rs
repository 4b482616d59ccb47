//! The transcript of a run while it runs: [`TranscriptRecorder`] keeps
//! each call within the transcript's size cap, collects HTTP response
//! bodies as the guest reads them ([`HttpSlot`]), and at the end redacts
//! every text into the finished [`Transcript`].

use std::sync::{Arc, Mutex};

use super::http_exchange::BodyTee;
use super::{
    BatchedJob, Call, MAX_BODY_BYTES, MAX_CLOCK_READINGS, MAX_TRANSCRIPT_BYTES, RecordedBody,
    RecordedJob, RecordedOutcome, RecordedResponse, Transcript,
};

/// A run's transcript while it runs, written from the guest's calls and
/// the HTTP hooks (any thread).
#[derive(Debug, Default)]
pub struct TranscriptRecorder {
    inner: Mutex<Recording>,
}

#[derive(Debug, Default)]
struct Recording {
    calls: Vec<Slot>,
    bytes: usize,
    truncated: bool,
    /// The wait tokens handed out, by wait id: replaced everywhere by
    /// `[wait-token:ID]` (a token is a credential: whoever holds it
    /// decides the wait).
    tokens: Vec<(String, String)>,
    /// The secrets the run opened, by name: their values are replaced
    /// everywhere by `[secret:NAME]` (a service may echo one back).
    secrets: Vec<(String, zeroize::Zeroizing<String>)>,
    /// The wall-clock readings so far.
    clock: Vec<u64>,
}

/// A call, or an HTTP request whose response body is still being read.
#[derive(Debug)]
enum Slot {
    Done(Call),
    Http(Arc<Mutex<Call>>, Arc<Mutex<BodyTee>>),
}

impl TranscriptRecorder {
    /// Keeps `call`, unless the transcript is full.
    pub fn push(&self, call: Call) {
        let size = serde_json::to_string(&call).map_or(0, |t| t.len());
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !r.admit(size) {
            return;
        }
        r.calls.push(Slot::Done(call));
    }

    /// Notes a wall-clock reading the guest took (ns since the epoch).
    pub fn note_clock(&self, ns: u64) {
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if r.clock.len() < MAX_CLOCK_READINGS {
            r.clock.push(ns);
        }
    }

    /// Notes the token handed out for wait `id`, so no part of the
    /// transcript keeps it (see [`Self::finish`]).
    pub fn note_token(&self, id: &str, token: &str) {
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        r.tokens.push((id.to_string(), token.to_string()));
    }

    /// Notes the value of secret `name`, which the run opened, or the
    /// placeholder it got for it, so no part of the transcript keeps
    /// either (see [`Self::finish`]): both become `[secret:NAME]`.
    pub fn note_secret(&self, name: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        r.secrets
            .push((name.to_string(), zeroize::Zeroizing::new(value.to_string())));
    }

    /// Keeps an HTTP request (`Call::Http`); the returned handles fill in
    /// its response and collect the body the guest reads. `None` when the
    /// transcript is full.
    pub fn push_http(&self, call: Call) -> Option<HttpSlot> {
        let size = serde_json::to_string(&call).map_or(0, |t| t.len()) + MAX_BODY_BYTES;
        let mut r = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !r.admit(size) {
            return None;
        }
        let call = Arc::new(Mutex::new(call));
        let body = Arc::new(Mutex::new(BodyTee::default()));
        r.calls.push(Slot::Http(call.clone(), body.clone()));
        Some(HttpSlot { call, body })
    }

    /// The transcript of the run: its calls so far (each HTTP response
    /// body as read until now), then `outcome` (and, for a batch run, each
    /// job's end: `batch`). `redact` runs over every
    /// text recorded, after each wait token handed out is replaced by
    /// `[wait-token:ID]`, and each secret value the run opened and each
    /// placeholder it got by `[secret:NAME]`.
    pub fn finish(
        &self,
        job: RecordedJob,
        started_at: u64,
        outcome: RecordedOutcome,
        batch: Option<Vec<BatchedJob>>,
        redact: &dyn Fn(String) -> String,
    ) -> Transcript {
        let r = std::mem::take(&mut *self.inner.lock().unwrap_or_else(|p| p.into_inner()));
        let calls = r
            .calls
            .into_iter()
            .map(|slot| match slot {
                Slot::Done(call) => call,
                Slot::Http(call, body) => {
                    let mut call = call.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    if let Call::Http {
                        response: Some(response),
                        ..
                    } = &mut call
                    {
                        response.body = body.lock().unwrap_or_else(|p| p.into_inner()).body();
                    }
                    call
                }
            })
            .collect();
        let transcript = Transcript {
            job,
            started_at,
            clock: r.clock,
            calls,
            truncated: r.truncated,
            outcome,
            batch,
        };
        // Every text through the run's redaction: a value the guest
        // revealed never stays in what a reader can fetch. Each string is
        // redacted as itself, not as escaped JSON.
        let (tokens, secrets) = (r.tokens, r.secrets);
        let redact = |text: String| {
            let mut text = text;
            for (id, token) in &tokens {
                if text.contains(token.as_str()) {
                    text = text.replace(token.as_str(), &format!("[wait-token:{id}]"));
                }
            }
            for (name, value) in &secrets {
                if text.contains(value.as_str()) {
                    text = text.replace(value.as_str(), &format!("[secret:{name}]"));
                }
            }
            redact(text)
        };
        match serde_json::to_value(&transcript) {
            Ok(mut value) => {
                redact_strings(&mut value, &redact);
                serde_json::from_value(value).unwrap_or(transcript)
            }
            Err(_) => transcript,
        }
    }
}

fn redact_strings(value: &mut serde_json::Value, redact: &dyn Fn(String) -> String) {
    match value {
        serde_json::Value::String(text) => *text = redact(std::mem::take(text)),
        serde_json::Value::Array(items) => {
            for item in items {
                redact_strings(item, redact);
            }
        }
        serde_json::Value::Object(fields) => {
            for item in fields.values_mut() {
                redact_strings(item, redact);
            }
        }
        _ => {}
    }
}

impl Recording {
    fn admit(&mut self, size: usize) -> bool {
        if self.truncated || self.bytes + size > MAX_TRANSCRIPT_BYTES {
            self.truncated = true;
            return false;
        }
        self.bytes += size;
        true
    }
}

/// Where an HTTP request's response goes once it comes.
#[derive(Debug, Clone)]
pub struct HttpSlot {
    call: Arc<Mutex<Call>>,
    body: Arc<Mutex<BodyTee>>,
}

impl HttpSlot {
    /// The request's body, once the host read it.
    pub fn request_body(&self, recorded: RecordedBody) {
        if let Call::Http { body, .. } = &mut *self.call.lock().unwrap_or_else(|p| p.into_inner()) {
            *body = recorded;
        }
    }

    /// The response's status and headers came.
    pub fn response(&self, status: u16, headers: Vec<(String, String)>) {
        if let Call::Http { response, .. } =
            &mut *self.call.lock().unwrap_or_else(|p| p.into_inner())
        {
            *response = Some(RecordedResponse {
                status,
                headers,
                body: RecordedBody::of(&[]),
            });
        }
    }

    /// No response: why.
    pub fn failed(&self, why: String) {
        if let Call::Http { error, .. } = &mut *self.call.lock().unwrap_or_else(|p| p.into_inner())
        {
            *error = Some(why);
        }
    }

    /// A chunk of the response body reached the guest.
    pub fn body_chunk(&self, chunk: &[u8]) {
        self.body
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Answer;

    fn job() -> RecordedJob {
        RecordedJob {
            id: "1".into(),
            queue: "q".into(),
            name: "n".into(),
            data: "{}".into(),
            attempt: 1,
            max_attempts: 1,
            enqueued_at: 0,
            parent: None,
        }
    }

    #[test]
    fn a_transcript_stops_keeping_calls_at_its_cap_and_says_so() {
        let recorder = TranscriptRecorder::default();
        let big = "x".repeat(10_000);
        for n in 0..100 {
            recorder.push(Call::StepRecord {
                id: format!("s{n}"),
                output: big.clone(),
                error: None,
            });
        }
        let t = recorder.finish(
            job(),
            0,
            RecordedOutcome::Completed { output: "1".into() },
            None,
            &|t| t,
        );
        assert!(t.truncated);
        assert!(
            t.calls.len() < 100 && t.calls.len() > 20,
            "{}",
            t.calls.len()
        );
        assert!(serde_json::to_string(&t).unwrap().len() < MAX_TRANSCRIPT_BYTES + 4096);
    }

    #[test]
    fn a_response_body_is_kept_up_to_its_cap_with_its_length() {
        let recorder = TranscriptRecorder::default();
        let slot = recorder
            .push_http(Call::Http {
                method: "GET".into(),
                url: "http://x/".into(),
                headers: vec![],
                body: RecordedBody::of(b""),
                response: None,
                error: None,
            })
            .unwrap();
        slot.response(200, vec![("a".into(), "b".into())]);
        slot.body_chunk(&vec![b'y'; MAX_BODY_BYTES + 10]);
        let t = recorder.finish(
            job(),
            0,
            RecordedOutcome::Completed { output: "1".into() },
            None,
            &|t| t.replace("secret-value", "<secret>"),
        );
        let Call::Http {
            response: Some(r), ..
        } = &t.calls[0]
        else {
            panic!("{t:?}")
        };
        assert_eq!(
            (r.status, r.body.len, r.body.cut),
            (200, MAX_BODY_BYTES as u64 + 10, true)
        );
        assert_eq!(r.body.text.len(), MAX_BODY_BYTES);
    }

    #[test]
    fn every_text_goes_through_the_redaction() {
        let recorder = TranscriptRecorder::default();
        recorder.push(Call::KvGet {
            key: "k".into(),
            answer: Answer::Ok(Some("the secret-value here".into())),
        });
        let t = recorder.finish(
            job(),
            0,
            RecordedOutcome::Completed {
                output: "\"secret-value\"".into(),
            },
            Some(vec![BatchedJob {
                job: job(),
                outcome: RecordedOutcome::Failed {
                    kind: "guest_fatal".into(),
                    reason: "no secret-value here".into(),
                },
            }]),
            &|t| t.replace("secret-value", "<secret>"),
        );
        let text = serde_json::to_string(&t).unwrap();
        assert!(!text.contains("secret-value"), "{text}");
    }
}

//! A replayed run's outbound requests, answered from the recorded run's:
//! each new request takes the first recorded one not taken yet with the
//! same method and URL and gets its response (its body as recorded, up
//! to the transcript's cut). A request the recorded run never sent gets
//! a transport error, and the comparison lists it as new; nothing leaves
//! the host either way.

use std::sync::Mutex;

use crate::sandbox::transcript::{Call, HttpAnswers, RecordedBody, RecordedResponse, Transcript};

/// One recorded run's requests, each answered at most once.
#[derive(Debug)]
pub struct RecordedAnswers {
    requests: Mutex<Vec<Option<Recorded>>>,
}

#[derive(Debug)]
struct Recorded {
    method: String,
    url: String,
    answer: Result<RecordedResponse, String>,
}

impl RecordedAnswers {
    /// The requests of `transcript`, in order.
    pub fn new(transcript: &Transcript) -> RecordedAnswers {
        let requests = transcript
            .calls
            .iter()
            .filter_map(|call| match call {
                Call::Http {
                    method,
                    url,
                    response,
                    error,
                    ..
                } => Some(Some(Recorded {
                    method: method.clone(),
                    url: url.clone(),
                    answer: match (response, error) {
                        (Some(r), _) => Ok(r.clone()),
                        (None, Some(e)) => {
                            Err(format!("the recorded request got no response: {e}"))
                        }
                        (None, None) => Err("the recorded request got no response".into()),
                    },
                })),
                _ => None,
            })
            .collect();
        RecordedAnswers {
            requests: Mutex::new(requests),
        }
    }
}

impl HttpAnswers for RecordedAnswers {
    fn answer(
        &self,
        method: &str,
        url: &str,
        _headers: &[(String, String)],
        _body: &RecordedBody,
    ) -> Result<RecordedResponse, String> {
        let mut requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let taken = requests.iter_mut().find_map(|slot| {
            let matches = slot
                .as_ref()
                .is_some_and(|r| r.method == method && r.url == url);
            if matches { slot.take() } else { None }
        });
        match taken {
            Some(recorded) => recorded.answer,
            None => Err(format!(
                "replay: the recorded run sent no {method} {url}, so there is no response to give (nothing is sent)"
            )),
        }
    }
}

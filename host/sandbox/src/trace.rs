//! What a run did that a trace shows as spans of its own: its guest's
//! instantiation (in a fresh instance), each outbound HTTP request (sent,
//! refused or failed) and each durable step the guest ran (not one it
//! replayed). The sandbox notes them while the run goes
//! on; the host turns them into children of the run's span once it ended
//! (`airlock::traces`). A run gets a [`RunSpans`] only when the host
//! exports traces ([`crate::RunEnv::spans`]); otherwise nothing is noted.
//!
//! Everything here comes from the host's side of an import, so a guest can
//! neither skip nor forge it: a request the guest made is noted whether it
//! was answered or refused. What a span holds is what the job's log may
//! already show — method, destination host and port, the URL's path as the
//! guest wrote it (before any secret placeholder is filled in), status,
//! byte counts, the refusal's reason — never a header value, a query or a
//! body. A run notes at most [`MAX_SPANS`]; more are counted, not kept,
//! so a guest looping on requests or steps cannot grow the host's memory.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// Most spans one run keeps.
pub const MAX_SPANS: usize = 512;

/// One value of a span's attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum SpanValue {
    /// Text.
    Text(String),
    /// A whole number.
    Int(i64),
}

/// One thing a run did, with when it began and ended.
#[derive(Debug, Clone)]
pub struct RunSpan {
    /// The span's name (`POST`, `step charge-card`).
    pub name: String,
    /// What kind of span: an outbound request, a step, the instantiation.
    pub kind: RunSpanKind,
    /// When it began.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// Its attributes, named as OpenTelemetry's conventions name them
    /// where one exists (`http.request.method`, `server.address`), else
    /// `airlock.*`.
    pub attributes: Vec<(&'static str, SpanValue)>,
    /// Why it failed, if it did (a refusal, a transport error).
    pub error: Option<String>,
}

/// What a [`RunSpan`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunSpanKind {
    /// An outbound HTTP request (a client span).
    Http,
    /// A durable step the guest ran (an internal span).
    Step,
    /// The guest's instantiation in a fresh instance (an internal span; a
    /// run in a warm instance has none).
    Instantiate,
}

/// The spans of one run, noted from any thread.
#[derive(Debug, Default)]
pub struct RunSpans {
    kept: Mutex<Vec<RunSpan>>,
    dropped: AtomicU64,
}

impl RunSpans {
    /// Notes `span`, or counts it when the run has noted [`MAX_SPANS`].
    pub fn push(&self, span: RunSpan) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < MAX_SPANS {
            kept.push(span);
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The spans noted so far (in the order they ended), and how many more
    /// were dropped; leaves none behind.
    pub fn take(&self) -> (Vec<RunSpan>, u64) {
        let kept = std::mem::take(&mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()));
        (kept, self.dropped.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(n: usize) -> RunSpan {
        let now = SystemTime::now();
        RunSpan {
            name: format!("step s{n}"),
            kind: RunSpanKind::Step,
            start: now,
            end: now,
            attributes: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn a_run_keeps_at_most_max_spans_and_counts_the_rest() {
        let spans = RunSpans::default();
        for n in 0..MAX_SPANS + 3 {
            spans.push(step(n));
        }
        let (kept, dropped) = spans.take();
        assert_eq!((kept.len(), dropped), (MAX_SPANS, 3));
        assert_eq!(kept[0].name, "step s0");
        assert_eq!(spans.take().0.len(), 0, "taken once");
    }
}

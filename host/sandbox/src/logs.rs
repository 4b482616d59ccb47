//! The capped log of one run: guest `log` calls plus captured stdout/stderr.
//!
//! A guest can write without end (a log flood, a `println!` in a hot loop,
//! a buffer of nothing but newlines); the host must not buffer that without
//! end, nor write it to Redis one line at a time. The sink keeps lines while
//! both caps hold — bytes, where every line also costs
//! [`LINE_OVERHEAD_BYTES`] (so a million empty lines are not free), and a
//! count of lines — then only counts what it drops. Memory and Redis writes
//! per run are bounded by the caps whatever the guest does.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use airlock_core::clock::now_ms;
use serde::{Deserialize, Serialize};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Where a log line came from and how severe it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something odd the job survived.
    Warn,
    /// A failure.
    Error,
    /// A line the guest printed to stdout.
    Stdout,
    /// A line the guest printed to stderr.
    Stderr,
}

impl LogLevel {
    /// Lowercase name, as shown in job logs (`[warn] ...`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
            LogLevel::Stdout => "stdout",
            LogLevel::Stderr => "stderr",
        }
    }
}

/// One captured line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    /// When the guest wrote it, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Severity or stream.
    pub level: LogLevel,
    /// The text, without trailing newline.
    pub message: String,
}

impl LogLine {
    /// `[level] message`, the form written to BullMQ job logs.
    pub fn render(&self) -> String {
        format!("[{}] {}", self.level.as_str(), self.message)
    }
}

/// Called for each line the sink keeps, while the guest is still running
/// (the queue worker streams them into BullMQ's job log).
pub type LogListener = Arc<dyn Fn(&LogLine) + Send + Sync>;

/// What every kept line costs against the byte cap on top of its text:
/// roughly what storing one more entry costs (a Redis list node, the
/// `[level] ` prefix, the line's record here).
pub const LINE_OVERHEAD_BYTES: u64 = 32;

/// The capped store of a run's log lines.
pub struct LogSink {
    /// Bytes counted against the cap so far: text plus the per-line overhead.
    kept_bytes: u64,
    /// The cap on `kept_bytes`.
    cap_bytes: u64,
    /// The cap on kept lines.
    cap_lines: u32,
    /// Text bytes refused because a cap was reached.
    dropped_bytes: u64,
    /// Lines refused because a cap was reached.
    dropped_lines: u64,
    lines: Vec<LogLine>,
    /// stdout bytes after the last newline, waiting for the rest of the line.
    stdout_partial: Vec<u8>,
    /// Same for stderr.
    stderr_partial: Vec<u8>,
    listener: Option<LogListener>,
    /// Revealed secret values (name, value), replaced by `[redacted:NAME]`
    /// in every line kept from the moment they were revealed.
    redactions: Vec<(String, zeroize::Zeroizing<String>)>,
}

impl LogSink {
    /// An empty sink keeping at most `cap_lines` lines and `cap_bytes` of
    /// text plus per-line overhead.
    pub fn new(cap_bytes: u64, cap_lines: u32, listener: Option<LogListener>) -> Self {
        LogSink {
            kept_bytes: 0,
            cap_bytes,
            cap_lines,
            dropped_bytes: 0,
            dropped_lines: 0,
            lines: Vec::new(),
            stdout_partial: Vec::new(),
            stderr_partial: Vec::new(),
            listener,
            redactions: Vec::new(),
        }
    }

    /// Empties the sink for the next job of a warm instance (see
    /// `crate::warm`): none of the last job's lines, counts or partial
    /// lines, new caps and listener — but its redactions stay, because a
    /// revealed value the guest was given may still be in its memory.
    pub fn renew(&mut self, cap_bytes: u64, cap_lines: u32, listener: Option<LogListener>) {
        let redactions = std::mem::take(&mut self.redactions);
        *self = LogSink::new(cap_bytes, cap_lines, listener);
        self.redactions = redactions;
    }

    /// From now on, `value` (secret `name`'s) is redacted from this run's
    /// lines, and from what [`LogSink::redact`] is given.
    pub fn add_redaction(&mut self, name: &str, value: &str) {
        if !value.is_empty() && !self.redactions.iter().any(|(_, v)| v.as_str() == value) {
            self.redactions
                .push((name.to_string(), zeroize::Zeroizing::new(value.to_string())));
        }
    }

    /// `text` with every revealed secret value replaced by
    /// `[redacted:NAME]`; `None` when there was nothing to replace.
    pub fn redact(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for (name, value) in &self.redactions {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(value.as_str()) {
                out = Some(current.replace(value.as_str(), &format!("[redacted:{name}]")));
            }
        }
        out
    }

    /// Whether a line of `len` bytes fits under both caps.
    fn fits(&self, len: u64) -> bool {
        (self.lines.len() as u64) < u64::from(self.cap_lines)
            && self.kept_bytes + len + LINE_OVERHEAD_BYTES <= self.cap_bytes
    }

    fn drop_line(&mut self, len: u64) {
        self.dropped_bytes += len;
        self.dropped_lines += 1;
    }

    /// Keeps `message` if it fits under both caps, else counts it as
    /// dropped.
    pub fn push(&mut self, level: LogLevel, message: &str) {
        let len = message.len() as u64;
        if !self.fits(len) {
            self.drop_line(len);
            return;
        }
        self.kept_bytes += len + LINE_OVERHEAD_BYTES;
        let message = self.redact(message).unwrap_or_else(|| message.to_string());
        let line = LogLine {
            at_ms: now_ms(),
            level,
            message,
        };
        if let Some(listener) = &self.listener {
            listener(&line);
        }
        self.lines.push(line);
    }

    /// Appends raw stream bytes, emitting a line per newline.
    fn write_stream(&mut self, level: LogLevel, bytes: &[u8]) {
        let mut partial = std::mem::take(match level {
            LogLevel::Stderr => &mut self.stderr_partial,
            _ => &mut self.stdout_partial,
        });
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            if let Some(line) = chunk.strip_suffix(b"\n") {
                partial.extend_from_slice(line);
                let len = partial.len() as u64;
                if self.fits(len) {
                    let text = String::from_utf8_lossy(&partial).into_owned();
                    self.push(level, &text);
                } else {
                    // Counted without building the line: a flood of
                    // newlines costs no allocations past the caps.
                    self.drop_line(len);
                }
                partial.clear();
            } else if self.kept_bytes + (partial.len() + chunk.len()) as u64 <= self.cap_bytes {
                partial.extend_from_slice(chunk);
            } else {
                // An endless line: it could never be kept whole.
                self.dropped_bytes += chunk.len() as u64;
            }
        }
        *match level {
            LogLevel::Stderr => &mut self.stderr_partial,
            _ => &mut self.stdout_partial,
        } = partial;
    }

    /// Emits unterminated stream output, lets go of the listener and
    /// returns the kept lines and what was dropped.
    pub fn finish(&mut self) -> (Vec<LogLine>, Dropped) {
        for level in [LogLevel::Stdout, LogLevel::Stderr] {
            let partial = std::mem::take(match level {
                LogLevel::Stderr => &mut self.stderr_partial,
                _ => &mut self.stdout_partial,
            });
            if !partial.is_empty() {
                self.push(level, &String::from_utf8_lossy(&partial));
            }
        }
        let dropped = Dropped {
            bytes: self.dropped_bytes,
            lines: self.dropped_lines,
        };
        // The run is over: its listener goes now (after the partial lines
        // above reached it). A warm instance keeps this sink for its next
        // job, and a listener kept with it would keep the job's reporter
        // waiting for its channel to close — the job unfinished, its
        // worker slot taken — until that next job renewed the sink.
        self.listener = None;
        (std::mem::take(&mut self.lines), dropped)
    }
}

/// What a run's log sink refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Text bytes.
    pub bytes: u64,
    /// Lines.
    pub lines: u64,
}

/// A shared handle on a run's sink, given to WASI as stdout or stderr.
#[derive(Clone)]
pub struct CapturedStream {
    sink: Arc<Mutex<LogSink>>,
    level: LogLevel,
}

impl CapturedStream {
    /// Captures into `sink`, tagging lines with `level` (stdout or stderr).
    pub fn new(sink: Arc<Mutex<LogSink>>, level: LogLevel) -> Self {
        CapturedStream { sink, level }
    }

    fn write_bytes(&self, bytes: &[u8]) {
        if let Ok(mut sink) = self.sink.lock() {
            sink.write_stream(self.level, bytes);
        }
    }
}

impl IsTerminal for CapturedStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedStream {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// Writes never fail and never block: past the cap they are only counted,
/// so a guest's `println!` never panics because its log is full.
impl OutputStream for CapturedStream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.write_bytes(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturedStream {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for CapturedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.write_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_past_the_byte_cap_are_counted_not_kept() {
        let mut sink = LogSink::new(10 + 2 * LINE_OVERHEAD_BYTES, 100, None);
        sink.push(LogLevel::Info, "12345");
        sink.push(LogLevel::Info, "123456");
        sink.push(LogLevel::Info, "12345");
        let (lines, dropped) = sink.finish();
        assert_eq!(lines.len(), 2);
        assert_eq!(dropped, Dropped { bytes: 6, lines: 1 });
    }

    #[test]
    fn empty_lines_count_against_both_caps() {
        let mut sink = LogSink::new(1 << 20, 1000, None);
        sink.write_stream(LogLevel::Stdout, &[b'\n'; 100_000]);
        let (lines, dropped) = sink.finish();
        assert_eq!(lines.len(), 1000, "the line cap");
        assert_eq!(dropped.lines, 99_000);

        let mut sink = LogSink::new(100 * LINE_OVERHEAD_BYTES, 1_000_000, None);
        sink.write_stream(LogLevel::Stdout, &[b'\n'; 100_000]);
        assert_eq!(sink.finish().0.len(), 100, "the per-line overhead");
    }

    #[test]
    fn stream_bytes_are_split_into_lines() {
        let mut sink = LogSink::new(1000, 100, None);
        sink.write_stream(LogLevel::Stdout, b"hel");
        sink.write_stream(LogLevel::Stdout, b"lo\nwor");
        sink.write_stream(LogLevel::Stderr, b"oops\n");
        let (lines, _) = sink.finish();
        let texts: Vec<_> = lines.iter().map(|l| l.render()).collect();
        assert_eq!(texts, ["[stdout] hello", "[stderr] oops", "[stdout] wor"]);
    }
}

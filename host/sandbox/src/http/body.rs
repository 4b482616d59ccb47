//! The response body the guest reads ([`CappedBody`]): counted, cut off
//! past `maxHttpResponseBytes` or after too long without a chunk, copied
//! into the transcript, and its connection given back to the pool once
//! read to its end.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming};
use wasmtime_wasi_http::Error;

use super::HttpPool;
use super::report::Report;
use crate::bindings::HttpRefusalKind;
use crate::http_pool::{PoolKey, Sender};
use crate::transcript::HttpSlot;

/// What a response body gives back to its binding's pool once read to its
/// end: the connection's sending half.
pub(super) struct GiveBack {
    pub(super) pool: Arc<HttpPool>,
    pub(super) key: PoolKey,
    pub(super) sender: Sender,
    pub(super) addr: SocketAddr,
}

/// A response body that counts what reaches the guest and stops at the cap
/// or after `between` without a chunk.
pub(super) struct CappedBody {
    pub(super) incoming: Incoming,
    /// Bytes received so far (delivered, or the chunk that went over).
    pub(super) read: u64,
    pub(super) max: u64,
    pub(super) report: Report,
    pub(super) url: String,
    pub(super) dest: String,
    pub(super) idle: Pin<Box<tokio::time::Sleep>>,
    pub(super) between: Duration,
    /// Whether `between` is the host's cap (see [`phase_timeout`](super::send::phase_timeout)).
    pub(super) between_capped: bool,
    /// Cut off already: reported once.
    pub(super) cut: bool,
    /// The connection, for its pool once this body is read to its end (and
    /// never after a cut: a half-read connection is not reused).
    pub(super) give_back: Option<GiveBack>,
    /// The request's transcript entry, which keeps what the guest reads.
    pub(super) tee: Option<HttpSlot>,
}

impl CappedBody {
    fn read_to_end(&mut self) {
        if let Some(back) = self.give_back.take()
            && !self.cut
        {
            back.pool.put(back.key, back.sender, back.addr);
        }
    }
}

impl Body for CappedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.read += data.len() as u64;
                    if this.read > this.max {
                        // The chunk that went over never reaches the guest:
                        // it is not counted in `bytes_in`.
                        this.give_back = None;
                        if !this.cut {
                            this.cut = true;
                            let reason = format!(
                                "the response body of {} went over maxHttpResponseBytes ({} bytes)",
                                this.dest, this.max
                            );
                            this.report.cut_off(
                                &this.url,
                                HttpRefusalKind::ResponseTooLarge,
                                reason,
                            );
                        }
                        return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(this.max)))));
                    }
                    this.report
                        .stats
                        .bytes_in
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                    if let Some(tee) = &this.tee {
                        tee.body_chunk(data);
                    }
                }
                let next = tokio::time::Instant::now() + this.between;
                this.idle.as_mut().reset(next);
                if this.incoming.is_end_stream() {
                    this.read_to_end();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.give_back = None;
                Poll::Ready(Some(Err(Error::from(e))))
            }
            Poll::Ready(None) => {
                this.read_to_end();
                Poll::Ready(None)
            }
            Poll::Pending => match this.idle.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.give_back = None;
                    if this.between_capped && !this.cut {
                        this.cut = true;
                        let reason = format!(
                            "no next chunk of the response body from {} within {} ms (httpTimeoutMs, or the run's remaining time)",
                            this.dest,
                            this.between.as_millis()
                        );
                        this.report
                            .cut_off(&this.url, HttpRefusalKind::Timeout, reason);
                    }
                    Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }
}

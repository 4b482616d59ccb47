//! Keep-alive connections for guests' outbound HTTP, one pool per queue
//! binding on a host.
//!
//! Opening a connection per request costs a TCP handshake (and a TLS one
//! for `https`) every time; a handler that calls the same API in a loop
//! pays it on every call. So a connection whose response was read to its
//! end goes back to its binding's pool, and the next request to the same
//! destination takes it instead of connecting.
//!
//! What keeps this safe:
//! - **One pool per queue binding** (`RunEnv::http_pool`, made when the
//!   binding resolves): no other queue's runs, and no run under an older
//!   version of the binding (other egress rules, other operator networks),
//!   ever use a connection of this one.
//! - **The same address rules.** A request resolves its destination and
//!   checks every address exactly as without a pool (`crate::http`, step
//!   2); only a connection to one of the addresses that passed, made for
//!   the same scheme, host name (the TLS server name) and port, is taken.
//! - **Only clean connections go back**: one whose response body was read
//!   to its end, not cut off by a cap or a timeout, and not closed.
//! - **Bounded**: at most [`MAX_IDLE_PER_DESTINATION`] idle connections per
//!   destination and [`MAX_IDLE`] in all; one idle longer than
//!   [`IDLE_FOR`] is closed (on the pool's next use).
//!
//! A server may close an idle connection just as it is taken; the request
//! then fails before any response byte, and `crate::http` sends it again
//! once on a new connection (the body is held in full, so nothing is lost).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;

use crate::egress::{Destination, Scheme};

/// Most idle connections kept per destination.
pub const MAX_IDLE_PER_DESTINATION: usize = 8;
/// Most idle connections kept by one pool.
pub const MAX_IDLE: usize = 64;
/// How long a connection may sit idle before it is closed.
pub const IDLE_FOR: Duration = Duration::from_secs(30);

/// A request's sending half on a connection.
pub type Sender = SendRequest<Full<Bytes>>;

/// Where a connection goes: scheme, host name as matched (for `https`, the
/// name its certificate was checked for) and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PoolKey {
    scheme: Scheme,
    host: String,
    port: u16,
}

impl PoolKey {
    /// The key of `dest`'s connections.
    pub fn of(dest: &Destination) -> PoolKey {
        PoolKey {
            scheme: dest.scheme,
            host: dest.host.clone(),
            port: dest.port,
        }
    }
}

struct Idle {
    sender: Sender,
    addr: SocketAddr,
    since: Instant,
}

impl Idle {
    fn usable(&self) -> bool {
        !self.sender.is_closed() && self.since.elapsed() < IDLE_FOR
    }
}

/// The idle connections of one queue binding's runs (see the module docs).
#[derive(Default)]
pub struct HttpPool {
    idle: Mutex<HashMap<PoolKey, Vec<Idle>>>,
}

impl std::fmt::Debug for HttpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpPool")
            .field("idle", &self.idle_count())
            .finish()
    }
}

impl HttpPool {
    /// An idle connection to `key` made to one of `allowed` (the addresses
    /// that passed this request's check), the most recently used first.
    pub fn take(&self, key: &PoolKey, allowed: &[SocketAddr]) -> Option<(Sender, SocketAddr)> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let list = idle.get_mut(key)?;
        list.retain(Idle::usable);
        let at = list
            .iter()
            .rposition(|c| allowed.contains(&c.addr) && c.sender.is_ready())?;
        let taken = list.remove(at);
        if list.is_empty() {
            idle.remove(key);
        }
        Some((taken.sender, taken.addr))
    }

    /// Gives back a connection to `key` at `addr` whose last response was
    /// read to its end; kept if it is open and the bounds allow.
    pub fn put(&self, key: PoolKey, sender: Sender, addr: SocketAddr) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.retain(|_, list| {
            list.retain(Idle::usable);
            !list.is_empty()
        });
        let total: usize = idle.values().map(Vec::len).sum();
        let list = idle.entry(key).or_default();
        if total >= MAX_IDLE || list.len() >= MAX_IDLE_PER_DESTINATION {
            return;
        }
        list.push(Idle {
            sender,
            addr,
            since: Instant::now(),
        });
    }

    /// Idle connections kept now.
    pub fn idle_count(&self) -> usize {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.values().map(Vec::len).sum()
    }
}

//! Opening a new connection for a request: TCP to a checked address, TLS
//! for `https` (webpki roots), then the HTTP/1.1 handshake. Apart from the
//! sending so that the only code touching sockets and certificates is here.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use wasmtime_wasi_http::Error;

use crate::egress::{Destination, Scheme};
use crate::http_pool::Sender;

/// The TLS client configuration every run shares (webpki roots).
static TLS: LazyLock<Arc<rustls::ClientConfig>> = LazyLock::new(|| {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.into(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
});

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// A new connection to the first of `allowed` that answers within
/// `timeout` (each step: TCP, TLS, the HTTP/1.1 handshake), its task
/// spawned. `Err(None)`: every attempt timed out.
pub(super) async fn connect(
    dest: &Destination,
    allowed: &[SocketAddr],
    timeout: Duration,
) -> Result<
    (
        Sender,
        SocketAddr,
        tokio::task::JoinHandle<hyper::Result<()>>,
    ),
    Option<Error>,
> {
    let mut last_error = Error::ConnectionRefused;
    let mut tcp = None;
    for addr in allowed {
        match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                tcp = Some((s, *addr));
                break;
            }
            Ok(Err(e)) => last_error = Error::Connect(e),
            Err(_) => last_error = Error::ConnectionTimeout,
        }
    }
    // One entry for the request, however many addresses timed out.
    let (tcp, addr) = match tcp {
        Some(found) => found,
        None if matches!(last_error, Error::ConnectionTimeout) => return Err(None),
        None => return Err(Some(last_error)),
    };
    let _ = tcp.set_nodelay(true);
    let stream: Box<dyn Stream> = match dest.scheme {
        Scheme::Http => Box::new(tcp),
        Scheme::Https => {
            let name = match dest.host.parse::<IpAddr>() {
                Ok(ip) => rustls::pki_types::ServerName::IpAddress(ip.into()),
                Err(_) => rustls::pki_types::ServerName::try_from(dest.host.clone())
                    .map_err(|_| Some(Error::TlsCertificateError))?,
            };
            let tls = tokio::time::timeout(
                timeout,
                tokio_rustls::TlsConnector::from(TLS.clone()).connect(name, tcp),
            )
            .await
            .map_err(|_| None)?
            .map_err(|e| Some(Error::Tls(e)))?;
            Box::new(tls)
        }
    };
    let (sender, conn) = tokio::time::timeout(
        timeout,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| None)?
    .map_err(|e| Some(Error::from(e)))?;
    Ok((sender, addr, tokio::spawn(conn)))
}

//! One TLS handshake on the server side, bounded in time and counted when it fails.

use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// The handshake of one connection, or `None` when it failed or took too long (a
/// plain-HTTP request on the HTTPS port, a scanner, an unknown CA at the client).
pub async fn accept<S>(acceptor: TlsAcceptor, stream: S) -> Option<TlsStream<S>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    match tokio::time::timeout(super::HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) => {
            metrics::counter!("shardkit_tls_handshake_failures_total").increment(1);
            tracing::debug!(error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            metrics::counter!("shardkit_tls_handshake_failures_total").increment(1);
            tracing::debug!("TLS handshake timed out");
            None
        }
    }
}

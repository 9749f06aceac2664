//! HTTPS for `axum::serve`: a listener that accepts TCP connections and hands axum
//! only those whose TLS handshake finished. Handshakes run side by side, each bounded
//! by [`super::HANDSHAKE_TIMEOUT`], so a client that stalls one holds up nobody.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// A TCP listener whose connections come out as TLS streams.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<TcpStream>, SocketAddr)>>,
}

impl TlsListener {
    /// Serves TLS with `acceptor` on `tcp`.
    pub fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> Self {
        Self {
            tcp,
            acceptor,
            handshakes: JoinSet::new(),
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            tokio::select! {
                accepted = self.tcp.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let acceptor = self.acceptor.clone();
                        self.handshakes.spawn(async move {
                            super::handshake::accept(acceptor, stream).await.map(|tls| (tls, peer))
                        });
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(done) = self.handshakes.join_next(), if !self.handshakes.is_empty() => {
                    if let Ok(Some(ready)) = done {
                        return ready;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

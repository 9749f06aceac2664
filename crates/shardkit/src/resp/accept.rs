//! The Redis protocol's accept loop: one per listening port (the plain port, the TLS
//! port), every connection served by [`super::connection::serve`] and registered in
//! one client list shared by both ports.

use super::connection::Ends;
use shardkit_node::state::AppState;
use shardkit_resp::Limits;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// What a TLS port's connections go through before they speak RESP.
#[cfg(feature = "tls")]
pub type Tls = tokio_rustls::TlsAcceptor;

/// Without the `tls` feature there is no TLS port (the settings refuse one).
#[cfg(not(feature = "tls"))]
pub type Tls = std::convert::Infallible;

/// Accepts connections until told to stop, then waits for them to end. `tls`: the
/// port's handshake, run inside each connection's task so a slow client delays no
/// other.
pub async fn accept(
    listener: TcpListener,
    tls: Option<Tls>,
    state: Arc<AppState>,
    clients: Arc<super::clients::Clients>,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    shardkit_node::telemetry::add(&shardkit_node::telemetry::RESP_CONNECTIONS, 1);
                    let _ = stream.set_nodelay(true);
                    let ends = Ends { peer: Some(peer), local: stream.local_addr().ok() };
                    let state = Arc::clone(&state);
                    let clients = Arc::clone(&clients);
                    let stopped = stopped.clone();
                    match &tls {
                        None => {
                            connections.spawn(super::connection::serve(
                                stream, ends, state, clients, limits, stopped,
                            ));
                        }
                        #[cfg(feature = "tls")]
                        Some(acceptor) => {
                            let acceptor = acceptor.clone();
                            connections.spawn(async move {
                                if let Some(stream) = crate::tls::handshake::accept(acceptor, stream).await {
                                    super::connection::serve(stream, ends, state, clients, limits, stopped).await;
                                }
                            });
                        }
                        #[cfg(not(feature = "tls"))]
                        Some(never) => match *never {},
                    }
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stopped.changed() => break,
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Samples the operations per second INFO reports, until told to stop: one sampler
/// however many ports there are.
pub async fn sample_ops(mut stopped: watch::Receiver<bool>) {
    let mut sample = tokio::time::interval(super::server_info::OPS_SAMPLE_EVERY);
    loop {
        tokio::select! {
            _ = sample.tick() => super::server_info::sample_ops(),
            _ = stopped.changed() => return,
        }
    }
}

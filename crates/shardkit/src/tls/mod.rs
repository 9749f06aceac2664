//! TLS for the two frontends, as web servers and Redis offer it: HTTPS on the HTTP
//! port (`[http] tls_cert`/`tls_key`) and a TLS port for the Redis protocol (`[resp]
//! tls`, with client certificates when `tls_ca` is set). Certificates are read when
//! the server starts, so a bad file stops the start with the setting's name, and again
//! on SIGHUP, so a renewed certificate needs no restart.

pub mod certificate;
pub mod config;
pub mod handshake;
pub mod http_listener;
pub mod reload;

/// The one crypto provider of every TLS config shardkit makes (the same as the NATS
/// client's), named rather than taken from the process default so that a dependency
/// enabling another provider cannot make the choice ambiguous.
pub fn provider() -> std::sync::Arc<tokio_rustls::rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(tokio_rustls::rustls::crypto::ring::default_provider())
}

/// How long a client gets to finish its TLS handshake before the connection is closed.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

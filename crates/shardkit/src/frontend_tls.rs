//! The frontends' TLS as the server wires it, with or without the `tls` feature: built
//! with it, [`crate::tls`]; without it, a start that names a TLS setting is refused
//! with the feature to build with, instead of serving plain text where TLS was asked.

#[cfg(feature = "tls")]
pub use crate::tls::config::Frontends;

/// Without the `tls` feature: never any TLS.
#[cfg(not(feature = "tls"))]
#[derive(Default)]
pub struct Frontends {
    /// Never set.
    pub http: Option<std::convert::Infallible>,
    /// Never set.
    pub resp: Option<std::convert::Infallible>,
}

#[cfg(not(feature = "tls"))]
impl Frontends {
    /// Refuses every TLS setting, naming it.
    pub fn from_settings(settings: &shardkit_node::config::Settings) -> anyhow::Result<Self> {
        let named = [
            ("http.tls_cert", settings.http.tls_cert.is_some()),
            ("http.tls_key", settings.http.tls_key.is_some()),
            ("resp.tls", settings.resp.tls.is_some()),
            ("resp.tls_cert", settings.resp.tls_cert.is_some()),
            ("resp.tls_ca", settings.resp.tls_ca.is_some()),
        ];
        if let Some((name, _)) = named.iter().find(|(_, set)| *set) {
            anyhow::bail!("{name} needs a shardkit built with the cargo feature `tls`");
        }
        Ok(Self::default())
    }
}

/// What the HTTP port's connections go through before they speak HTTP.
#[cfg(feature = "tls")]
pub type HttpTls = tokio_rustls::TlsAcceptor;

/// Without the `tls` feature there is no HTTPS (the settings refuse it).
#[cfg(not(feature = "tls"))]
pub type HttpTls = std::convert::Infallible;

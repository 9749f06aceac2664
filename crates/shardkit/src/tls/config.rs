//! The TLS server configs of the two frontends, built from the settings before
//! anything is written, so a certificate, key or CA file that does not parse stops the
//! start with the setting's name.

use super::certificate::{CertificateFiles, Reloadable};
use shardkit_node::config::Settings;
use std::sync::Arc;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// What TLS the settings ask for: an acceptor per frontend that serves TLS, and the
/// certificates a SIGHUP reads again.
#[derive(Default)]
pub struct Frontends {
    /// HTTPS on `[http] listen`.
    pub http: Option<TlsAcceptor>,
    /// The Redis protocol on `[resp] tls`.
    pub resp: Option<TlsAcceptor>,
    /// Every certificate in use, for [`super::reload`].
    pub certificates: Vec<Arc<Reloadable>>,
}

impl Frontends {
    /// Reads every certificate, key and CA the settings name.
    pub fn from_settings(settings: &Settings) -> anyhow::Result<Self> {
        let mut out = Frontends::default();
        if let (Some(cert), Some(key)) = (&settings.http.tls_cert, &settings.http.tls_key) {
            let certificate = Reloadable::open(CertificateFiles {
                section: "http",
                cert: cert.clone(),
                key: key.clone(),
            })?;
            let mut config = builder()?
                .with_no_client_auth()
                .with_cert_resolver(certificate.clone());
            // HTTP/1.1 only: the server speaks no HTTP/2.
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            out.http = Some(TlsAcceptor::from(Arc::new(config)));
            out.certificates.push(certificate);
        }
        let resp = &settings.resp;
        if let (Some(_), Some(cert), Some(key)) = (resp.tls, &resp.tls_cert, &resp.tls_key) {
            let certificate = Reloadable::open(CertificateFiles {
                section: "resp",
                cert: cert.clone(),
                key: key.clone(),
            })?;
            let config = match &resp.tls_ca {
                None => builder()?.with_no_client_auth(),
                Some(ca) => {
                    let roots = roots("resp.tls_ca", ca)?;
                    let verifier =
                        WebPkiClientVerifier::builder_with_provider(roots, super::provider())
                            .build()
                            .map_err(|e| anyhow::anyhow!("resp.tls_ca: {e}"))?;
                    builder()?.with_client_cert_verifier(verifier)
                }
            }
            .with_cert_resolver(certificate.clone());
            out.resp = Some(TlsAcceptor::from(Arc::new(config)));
            out.certificates.push(certificate);
        }
        Ok(out)
    }
}

fn builder() -> anyhow::Result<
    tokio_rustls::rustls::ConfigBuilder<ServerConfig, tokio_rustls::rustls::WantsVerifier>,
> {
    ServerConfig::builder_with_provider(super::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| anyhow::anyhow!("cannot set up TLS: {e}"))
}

/// The CA certificates in the PEM file `path`, named by setting `name` in errors.
pub fn roots(name: &str, path: &std::path::Path) -> anyhow::Result<Arc<RootCertStore>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| anyhow::anyhow!("{name}: cannot read {}: {e}", path.display()))?;
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs);
    if added == 0 {
        anyhow::bail!(
            "{name}: {} holds no CA certificate that can be read (PEM \"BEGIN CERTIFICATE\")",
            path.display()
        );
    }
    Ok(Arc::new(store))
}

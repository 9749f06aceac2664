//! A server certificate read from its PEM files, and the resolver that hands the
//! current one to each handshake, swapped in place when the files are read again.

use parking_lot::RwLock;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;

/// Where a certificate comes from, with the settings that named the files (for errors).
#[derive(Debug, Clone)]
pub struct CertificateFiles {
    /// The section, `http` or `resp`: errors name `{section}.tls_cert` and `.tls_key`.
    pub section: &'static str,
    /// The certificate chain, leaf first (PEM).
    pub cert: PathBuf,
    /// The leaf's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

impl CertificateFiles {
    /// Reads and checks both files: a chain that is there, a key that parses, is of a
    /// kind the provider signs with, and belongs to the leaf certificate.
    pub fn load(&self) -> anyhow::Result<Arc<CertifiedKey>> {
        let section = self.section;
        let cert_name = format!("{section}.tls_cert");
        let key_name = format!("{section}.tls_key");
        let chain = CertificateDer::pem_file_iter(&self.cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| {
                anyhow::anyhow!("{cert_name}: cannot read {}: {e}", self.cert.display())
            })?;
        if chain.is_empty() {
            anyhow::bail!(
                "{cert_name}: {} holds no certificate (no PEM \"BEGIN CERTIFICATE\" block)",
                self.cert.display()
            );
        }
        let key = PrivateKeyDer::from_pem_file(&self.key).map_err(|e| {
            anyhow::anyhow!(
                "{key_name}: {} holds no private key that can be read (PEM PKCS#8, PKCS#1 \
                 or SEC1): {e}",
                self.key.display()
            )
        })?;
        let certified = CertifiedKey::from_der(chain, key, &super::provider()).map_err(|e| {
            anyhow::anyhow!(
                "{key_name}: {} does not go with {cert_name} {} or is of a kind that \
                 cannot sign: {e}",
                self.key.display(),
                self.cert.display()
            )
        })?;
        Ok(Arc::new(certified))
    }
}

/// The certificate every handshake is answered with, replaced by [`Reloadable::reload`].
#[derive(Debug)]
pub struct Reloadable {
    files: CertificateFiles,
    current: RwLock<Arc<CertifiedKey>>,
}

impl Reloadable {
    /// Reads the files now: an error stops the start.
    pub fn open(files: CertificateFiles) -> anyhow::Result<Arc<Self>> {
        let current = RwLock::new(files.load()?);
        Ok(Arc::new(Self { files, current }))
    }

    /// Reads the files again; on an error the certificate in use stays.
    pub fn reload(&self) -> anyhow::Result<()> {
        let fresh = self.files.load()?;
        *self.current.write() = fresh;
        Ok(())
    }

    /// Which section's certificate this is.
    pub fn section(&self) -> &'static str {
        self.files.section
    }
}

impl ResolvesServerCert for Reloadable {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.current.read()))
    }
}

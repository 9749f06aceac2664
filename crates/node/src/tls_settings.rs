//! Checks shared by every section that names TLS files (`[http]`, `[resp]`, `[nats]`):
//! a certificate comes with its key, and each file named is there to read, so a typo
//! is refused at start with the setting's name rather than on the first handshake.

use std::path::{Path, PathBuf};

/// `{section}.tls_cert` and `{section}.tls_key` go together.
pub fn check_pair(
    section: &str,
    cert: &Option<PathBuf>,
    key: &Option<PathBuf>,
) -> anyhow::Result<()> {
    if cert.is_some() != key.is_some() {
        anyhow::bail!(
            "{section}.tls_cert and {section}.tls_key go together: one is set without the other"
        );
    }
    Ok(())
}

/// The file named by setting `name`, if any, can be opened.
pub fn check_file(name: &str, path: &Option<PathBuf>) -> anyhow::Result<()> {
    match path {
        Some(path) => readable(name, path),
        None => Ok(()),
    }
}

/// The file named by setting `name` can be opened.
pub fn readable(name: &str, path: &Path) -> anyhow::Result<()> {
    std::fs::File::open(path)
        .map(|_| ())
        .map_err(|e| anyhow::anyhow!("{name}: cannot read {}: {e}", path.display()))
}

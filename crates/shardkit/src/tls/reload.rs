//! SIGHUP reads every certificate again, as nginx does on reload, so a renewed
//! certificate gets in without a restart. A file that no longer reads is logged and the
//! certificate in use stays: a bad renewal never takes TLS down.

use super::certificate::Reloadable;
use std::sync::Arc;

/// Reads `certificates` again, logging each outcome.
pub fn reload_all(certificates: &[Arc<Reloadable>]) {
    for certificate in certificates {
        match certificate.reload() {
            Ok(()) => tracing::info!(section = certificate.section(), "TLS certificate reloaded"),
            Err(e) => tracing::error!(
                error = %format!("{e:#}"),
                "TLS certificate not reloaded; the one in use stays"
            ),
        }
    }
}

//! One way to open a NATS connection from `[nats]`: every server of the list (the client
//! moves among them when one is lost), the credentials and the TLS the settings name.
//! Every connection the node and its CLI make goes through here, so a setting applies
//! to all of them.

use crate::nats_settings::{NatsAuth, NatsSettings};
use async_nats::{ConnectErrorKind, ConnectOptions, ServerAddr};
use std::time::Duration;

/// How long one attempt to reach a server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How often the client pings its server. The client drops a connection after three
/// pings go unanswered and moves to another server of the list; at the client's
/// default (a ping a minute) a node whose NATS server was cut off the network stayed
/// on the dead connection for minutes, its leases and heartbeats failing, while the
/// other servers were in reach. Each second, a lost server is left within about 3 s.
const PING_EVERY: Duration = Duration::from_secs(1);

/// Connects as `client_name` (shown by the NATS server's monitoring). An error names
/// the servers tried and what NATS answered: refused credentials, TLS, unreachable.
pub async fn connect(
    settings: &NatsSettings,
    client_name: &str,
) -> anyhow::Result<async_nats::Client> {
    let servers = settings
        .url
        .iter()
        .map(|u| {
            u.parse::<ServerAddr>()
                .map_err(|e| anyhow::anyhow!("nats.url {u:?} is not a NATS URL: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut options = match settings.auth()? {
        NatsAuth::None => ConnectOptions::new(),
        NatsAuth::Creds(path) => ConnectOptions::with_credentials_file(&path)
            .await
            .map_err(|e| anyhow::anyhow!("nats.creds: cannot use {}: {e}", path.display()))?,
        NatsAuth::Nkey(seed) => ConnectOptions::with_nkey(seed),
        NatsAuth::UserPassword(user, password) => {
            ConnectOptions::with_user_and_password(user, password)
        }
        NatsAuth::Token(token) => ConnectOptions::with_token(token),
    };
    options = options
        .connection_timeout(CONNECT_TIMEOUT)
        .ping_interval(PING_EVERY)
        .name(client_name);
    if let Some(ca) = &settings.tls_ca {
        options = options.add_root_certificates(ca.clone()).require_tls(true);
    }
    if let (Some(cert), Some(key)) = (&settings.tls_cert, &settings.tls_key) {
        options = options.add_client_certificate(cert.clone(), key.clone());
    }
    options.connect(servers).await.map_err(|e| {
        // A certificate the server refuses, or a server certificate this node does not
        // take (unknown CA, expired), comes back as an I/O error, not as the TLS kind.
        let text = e.to_string();
        let tls_alert = text.contains("fatal alert") || text.contains("invalid peer certificate");
        let hint = match e.kind() {
            ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
                " (check nats.creds, nats.nkey, nats.user/nats.password or nats.token)"
            }
            ConnectErrorKind::Tls => " (check nats.tls_ca, nats.tls_cert and nats.tls_key)",
            _ if tls_alert => " (check nats.tls_ca, nats.tls_cert and nats.tls_key)",
            _ => "",
        };
        let context = format!("cannot connect to NATS at {}{hint}", settings.urls_text());
        // The error itself stays in the chain: the start's retry loop tells refused
        // credentials (no retry mends them) from a server not up yet by its kind.
        anyhow::Error::new(e).context(context)
    })
}

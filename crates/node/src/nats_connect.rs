//! One way to open a NATS connection from `[nats]`: every server of the list (the client
//! moves among them when one is lost), the credentials and the TLS the settings name.
//! Every connection the node and its CLI make goes through here, so a setting applies
//! to all of them.

use crate::nats_settings::{NatsAuth, NatsSettings};
use async_nats::{ConnectErrorKind, ConnectOptions, ServerAddr};
use std::time::Duration;

/// How long one attempt to reach a server may take. Short, because after a server is
/// lost the client picks the next one at random and may pick the lost one again: at
/// 5 s a node whose server was cut off stayed without NATS long enough for the other
/// nodes to find its record unrenewed and take its groups. A server on the LAN (or a
/// region away) answers well within it; a failed start is tried again.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How often the client pings its server. The client drops a connection after three
/// pings go unanswered and moves to another server of the list; at the client's
/// default (a ping a minute) a node whose NATS server was cut off the network stayed
/// on the dead connection for minutes, its leases and heartbeats failing, while the
/// other servers were in reach. Every half second, a lost server is left within about
/// 1.5 s, and with [`CONNECT_TIMEOUT`] the node is on another within about 2.5 s,
/// inside a node record's life (`cluster::nats::registry::RECORD_LIFE`, 3 s).
const PING_EVERY: Duration = Duration::from_millis(500);

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

//! Connecting to PostgreSQL servers: one place that parses a URL, applies the connect
//! timeout, spawns the connection task and turns every failure into an error that names
//! the server (without its password).

use crate::error::{redact_url, PgError};
use std::time::Duration;
use tokio_postgres::{Client, Config, NoTls};

/// How long a connection attempt may take before the server counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Parses a PostgreSQL URL (`postgres://user@host:port/db`) with shardkit's connect timeout.
pub fn parse_config(url: &str) -> Result<Config, PgError> {
    let mut config: Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| PgError::BadUrl {
            url: redact_url(url),
            reason: e.to_string(),
        })?;
    config.connect_timeout(CONNECT_TIMEOUT);
    if config.get_application_name().is_none() {
        config.application_name("shardkit");
    }
    Ok(config)
}

/// Opens one connection (no TLS) and drives it on the current tokio runtime.
pub async fn connect(url: &str) -> Result<Client, PgError> {
    let config = parse_config(url)?;
    let server = redact_url(url);
    let connecting = config.connect(NoTls);
    let (client, connection) =
        tokio::time::timeout(CONNECT_TIMEOUT + Duration::from_secs(1), connecting)
            .await
            .map_err(|_| PgError::Unreachable {
                server: server.clone(),
                reason: "timed out".into(),
            })?
            .map_err(|e| PgError::Unreachable {
                server: server.clone(),
                reason: error_text(&e),
            })?;
    tokio::spawn(async move {
        // The connection ends when the client is dropped; an error here surfaces on the
        // next query through the client, so it needs no handling of its own.
        let _ = connection.await;
    });
    Ok(client)
}

/// A pool of connections to one server, for code that runs many statements at once.
pub fn pool(url: &str, max_size: usize) -> Result<deadpool_postgres::Pool, PgError> {
    let config = parse_config(url)?;
    let manager = deadpool_postgres::Manager::from_config(
        config,
        NoTls,
        deadpool_postgres::ManagerConfig {
            recycling_method: deadpool_postgres::RecyclingMethod::Fast,
        },
    );
    deadpool_postgres::Pool::builder(manager)
        .max_size(max_size)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(CONNECT_TIMEOUT))
        .create_timeout(Some(CONNECT_TIMEOUT))
        .build()
        .map_err(|e| PgError::BadUrl {
            url: redact_url(url),
            reason: e.to_string(),
        })
}

/// The server's own message where there is one (`tokio_postgres::Error`'s Display
/// says only "db error"), else the driver's with its cause.
pub fn error_text(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// Wraps a failed statement into [`PgError::Query`] naming the server and the step.
pub fn query_error(server: &str, what: &str, e: &tokio_postgres::Error) -> PgError {
    PgError::Query {
        server: server.to_string(),
        what: what.to_string(),
        reason: error_text(e),
    }
}

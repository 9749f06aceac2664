//! Every error of `shardkit-pg`, named for what went wrong and, where a server is
//! involved, naming that server (its URL without the password) so an operator knows
//! which machine to look at.

/// What can go wrong setting up or using PostgreSQL shards.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// A server URL that does not parse as a PostgreSQL connection string.
    #[error("server URL {url:?} is not a valid PostgreSQL URL: {reason}")]
    BadUrl {
        /// The URL as given (password removed).
        url: String,
        /// What the parser said.
        reason: String,
    },
    /// A server that could not be reached or refused the connection.
    #[error(
        "cannot connect to PostgreSQL server {server}: {reason} (is it running and reachable?)"
    )]
    Unreachable {
        /// The server (URL without password).
        server: String,
        /// What the driver said.
        reason: String,
    },
    /// A statement failed on a server.
    #[error("PostgreSQL server {server}: {what}: {reason}")]
    Query {
        /// The server (URL without password).
        server: String,
        /// What shardkit was doing.
        what: String,
        /// What the server said.
        reason: String,
    },
    /// The logical shard count must be a power of two that fits the 13 shard bits.
    #[error("--logical-shards {0} is invalid: use a power of two from 1 to 8192 (the 13 shard bits of an Instagram id)")]
    BadShardCount(u64),
    /// No servers were given.
    #[error("no servers given: pass at least one PostgreSQL URL")]
    NoServers,
    /// The same server twice.
    #[error("server {0} is given twice")]
    DuplicateServer(String),
    /// The cluster exists with another shard count: ids carry the shard number, so it
    /// can never change.
    #[error("server {server} already holds a cluster of {existing} logical shards, not {requested}; the shard count is baked into every id and cannot change (run init with --logical-shards {existing}, or use fresh databases)")]
    ShardCountMismatch {
        /// Server whose `shardkit_meta` disagrees.
        server: String,
        /// Shard count recorded there.
        existing: u32,
        /// Shard count asked for.
        requested: u32,
    },
    /// The cluster exists with another epoch or other servers.
    #[error("server {server} already holds a cluster that differs: {reason}")]
    ClusterMismatch {
        /// Server whose `shardkit_meta` disagrees.
        server: String,
        /// What differs.
        reason: String,
    },
    /// The shard map in `shardkit_meta` could not be read or built.
    #[error("shard map: {0}")]
    Map(#[from] shardkit_ring::RingError),
    /// A store could not start the runtime that drives its connections.
    #[error("cannot start the PostgreSQL store's runtime: {0}")]
    Runtime(String),
    /// The epoch is not usable (in the future, unparsable).
    #[error("epoch: {0}")]
    Epoch(String),
}

/// Removes the password from a connection URL, so that errors and the shard map can
/// name a server without leaking its secret.
pub fn redact_url(url: &str) -> String {
    // postgres://user:secret@host:5432/db -> postgres://user@host:5432/db
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        if let Some(at) = rest.rfind('@') {
            let userinfo = &rest[..at];
            let user = userinfo.split(':').next().unwrap_or("");
            return format!("{}://{}@{}", &url[..scheme_end], user, &rest[at + 1..]);
        }
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn password_is_removed() {
        assert_eq!(
            redact_url("postgres://u:pw@h:5432/db"),
            "postgres://u@h:5432/db"
        );
        assert_eq!(redact_url("postgres://h/db"), "postgres://h/db");
        assert_eq!(
            redact_url("mysql://root@127.0.0.1/test"),
            "mysql://root@127.0.0.1/test"
        );
    }
}

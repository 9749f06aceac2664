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
    /// The cluster exists with another id epoch: ids carry their time since the epoch, so
    /// it can never change.
    #[error("server {server} already holds a cluster whose id epoch is {existing} ms, not {requested} ms; the epoch is baked into every id and cannot change (leave --epoch out to keep it, or use fresh databases)")]
    EpochMismatch {
        /// Server whose `shardkit_meta` disagrees.
        server: String,
        /// Epoch recorded there, Unix ms.
        existing: u64,
        /// Epoch asked for, Unix ms.
        requested: u64,
    },
    /// Two servers given hold clusters with different id epochs: they are not one cluster.
    #[error("server {server} holds a cluster whose id epoch is {epoch} ms, but another server given holds one whose epoch is {other_epoch} ms: they are not one cluster (check --servers)")]
    EpochsDisagree {
        /// The server found to disagree.
        server: String,
        /// Its epoch, Unix ms.
        epoch: u64,
        /// The epoch a server given before it holds, Unix ms.
        other_epoch: u64,
    },
    /// `init` on an existing cluster named servers other than those its map places shards on.
    #[error("server {server} holds a shard map (version {version}) that places shards on [{placed}], not on the servers given; pass exactly those servers (to move shards to other servers, use `shardkit pg move-shard`)")]
    ServersDiffer {
        /// The server whose map was read.
        server: String,
        /// That map's version.
        version: u64,
        /// The servers the map places shards on, comma-separated.
        placed: String,
    },
    /// None of the servers given holds a cluster: `init` has not been run on them.
    #[error("no shardkit_meta found on any server given (the first is {server}): run `shardkit pg init` on them first, or check --servers")]
    NoCluster {
        /// The first server given.
        server: String,
    },
    /// The shard map places shards on a server whose URL was not given, so it cannot be
    /// reached (the map stores names without passwords, not URLs).
    #[error("the shard map places shards on server {server}, but no URL for it was given: add its URL (with its password) to --servers")]
    MissingServer {
        /// The server (URL without password) as the map names it.
        server: String,
    },
    /// A logical shard number the cluster does not have.
    #[error("logical shard {shard} does not exist: the cluster has {logical_shards} logical shards, numbered 0 to {}", logical_shards.saturating_sub(1))]
    NoSuchShard {
        /// The shard asked for.
        shard: u64,
        /// The cluster's logical shard count.
        logical_shards: u32,
    },
    /// A move whose target is the shard's current server.
    #[error("logical shard {shard} is already on server {server}: nothing to move")]
    AlreadyThere {
        /// The shard.
        shard: u32,
        /// Its server.
        server: String,
    },
    /// Another process is moving the same shard (it holds the move lock on the source).
    #[error("another move of logical shard {shard} is running (it holds the move lock on server {server}): wait for it to end; a move whose process died releases the lock when its connection closes")]
    MoveRunning {
        /// The shard.
        shard: u32,
        /// The shard's current server, where the lock is held.
        server: String,
    },
    /// The move's target already has the shard's schema, most likely left over by a move
    /// that died; copying over it could mix two copies of the shard.
    #[error("server {server} already has a schema {schema} (a leftover of an earlier move?): check it holds nothing you need, drop it (DROP SCHEMA {schema} CASCADE) and run the move again")]
    TargetHasShard {
        /// The target server.
        server: String,
        /// The shard's schema name.
        schema: String,
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

/// Removes the password from a connection URL: one copy, in `shardkit-ring`, which the
/// server uses too without this crate.
pub use shardkit_ring::redact_url;

#[cfg(test)]
mod tests {
    use super::PgError;

    /// Each failure's message says what is wrong and what to do, naming the server.
    #[test]
    fn each_failure_says_what_is_wrong_and_what_to_do() {
        let server = || "postgres://u@h:5432/db".to_string();
        let cases = [
            (
                PgError::BadShardCount(12),
                "--logical-shards 12 is invalid: use a power of two from 1 to 8192 (the 13 shard bits of an Instagram id)",
            ),
            (
                PgError::EpochMismatch { server: server(), existing: 1, requested: 2 },
                "server postgres://u@h:5432/db already holds a cluster whose id epoch is 1 ms, not 2 ms; the epoch is baked into every id and cannot change (leave --epoch out to keep it, or use fresh databases)",
            ),
            (
                PgError::EpochsDisagree { server: server(), epoch: 1, other_epoch: 2 },
                "server postgres://u@h:5432/db holds a cluster whose id epoch is 1 ms, but another server given holds one whose epoch is 2 ms: they are not one cluster (check --servers)",
            ),
            (
                PgError::ServersDiffer { server: server(), version: 3, placed: "a, b".into() },
                "server postgres://u@h:5432/db holds a shard map (version 3) that places shards on [a, b], not on the servers given; pass exactly those servers (to move shards to other servers, use `shardkit pg move-shard`)",
            ),
            (
                PgError::NoCluster { server: server() },
                "no shardkit_meta found on any server given (the first is postgres://u@h:5432/db): run `shardkit pg init` on them first, or check --servers",
            ),
            (
                PgError::MissingServer { server: server() },
                "the shard map places shards on server postgres://u@h:5432/db, but no URL for it was given: add its URL (with its password) to --servers",
            ),
            (
                PgError::NoSuchShard { shard: 9000, logical_shards: 64 },
                "logical shard 9000 does not exist: the cluster has 64 logical shards, numbered 0 to 63",
            ),
            (
                PgError::AlreadyThere { shard: 5, server: server() },
                "logical shard 5 is already on server postgres://u@h:5432/db: nothing to move",
            ),
            (
                PgError::MoveRunning { shard: 5, server: server() },
                "another move of logical shard 5 is running (it holds the move lock on server postgres://u@h:5432/db): wait for it to end; a move whose process died releases the lock when its connection closes",
            ),
            (
                PgError::TargetHasShard { server: server(), schema: "shard_0005".into() },
                "server postgres://u@h:5432/db already has a schema shard_0005 (a leftover of an earlier move?): check it holds nothing you need, drop it (DROP SCHEMA shard_0005 CASCADE) and run the move again",
            ),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
        }
    }
}

//! shardkit past one machine, on the engines users already run:
//!
//! - [`cluster`]: Instagram's logical shards as PostgreSQL schemas `shard_NNNN` spread
//!   over a few servers by a `shardkit-ring` shard map, ids made inside the database by
//!   each schema's `next_id()` ([`schema`] has the SQL and why it differs from the
//!   published function), the map recorded in `shardkit_meta`; [`mod@move_shard`] moves
//!   one logical shard to another server with a brief write pause for that shard only.
//! - [`links`]: [`PgLinkStore`], the short-link store on those shards: a link lives
//!   in the logical shard of its code's group, so a redirect reads one shard.
//! - [`tickets`]: Flickr's ticket servers on MariaDB/MySQL (`REPLACE INTO` +
//!   `LAST_INSERT_ID()`, two servers with odd and even numbers, fail-over) and a
//!   PostgreSQL sequence store, both behind `shardkit-ids`'s `TicketStore`.
//!
//! The shardkit binary includes this crate with its cargo feature `sql`.

#![warn(missing_docs)]

pub mod blocking;
pub mod cluster;
pub mod connect;
pub mod error;
pub mod keys;
pub mod links;
pub mod move_shard;
pub mod schema;
pub mod tickets;

pub use cluster::{init, Cluster, InitOptions, InitReport, ServerReport, MAX_LOGICAL_SHARDS};
pub use error::{redact_url, PgError};
pub use keys::{KeyRow, PgKeyStore};
pub use links::PgLinkStore;
pub use move_shard::{move_shard, MoveReport};
/// The driver, re-exported: [`connect::connect`] hands out its `Client`, so callers
/// (the binary's tests, tools) can name the type without a dependency of their own.
pub use tokio_postgres;

//! Redis Cluster for the counters: the key → slot function clients share with us, and
//! the `[cluster]` settings.
//!
//! - [`slot`]: CRC16 of the key or of its `{…}` hash tag, modulo 16,384.
//! - [`settings`]: `[cluster] enabled`, `name`, `announce`, `groups`.
//! - [`map`]: slot groups, their owners and replicas, and the nodes (`SlotMap`).
//! - [`route`]: where a command goes (here, `-MOVED`, `-CROSSSLOT`, `-CLUSTERDOWN`).
//! - [`replies`]: `CLUSTER SLOTS|SHARDS|NODES|INFO` written off a map, in Redis 7's
//!   shapes.
//!
//! The cluster itself (the map kept in a JetStream KV bucket, `-MOVED`,
//! `-ASK`, moves of a group by snapshot and stream) is planned in docs/design.md; until
//! it exists, `[cluster] enabled = true` is refused at start and the `CLUSTER` family
//! answers as a Redis with cluster support disabled.

pub mod map;
pub mod replies;
pub mod route;
pub mod settings;
pub mod slot;

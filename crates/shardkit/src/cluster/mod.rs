//! Redis Cluster for the counters: the key → slot function clients share with us, and
//! the `[cluster]` settings.
//!
//! - [`slot`]: CRC16 of the key or of its `{…}` hash tag, modulo 16,384.
//! - [`settings`]: `[cluster] enabled`, `name`, `announce`, `groups`.
//!
//! The cluster itself (slot groups placed on nodes through a JetStream KV map, `-MOVED`,
//! `-ASK`, moves of a group by snapshot and stream) is planned in docs/design.md; until
//! it exists, `[cluster] enabled = true` is refused at start and the `CLUSTER` family
//! answers as a Redis with cluster support disabled.

pub mod settings;
pub mod slot;

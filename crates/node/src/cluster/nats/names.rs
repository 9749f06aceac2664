//! The NATS names of a cluster's shared objects (docs/cluster.md, "NATS objects").

/// The bucket of node records of cluster `cluster`.
pub fn nodes_bucket(cluster: &str) -> String {
    format!("shardkit_nodes_{cluster}")
}

/// The bucket holding cluster `cluster`'s slot map.
pub fn map_bucket(cluster: &str) -> String {
    format!("shardkit_map_{cluster}")
}

/// The key of the slot map in its bucket.
pub const MAP_KEY: &str = "map";

/// The key of the counters' schema in the map's bucket (`cluster/schema.rs`).
pub const SCHEMA_KEY: &str = "schema";

/// A group's store name (its stream and buckets derive from it): `<cluster>-g<NNN>`.
pub fn group_store_name(cluster: &str, group: u16) -> String {
    format!("{cluster}-g{group:03}")
}

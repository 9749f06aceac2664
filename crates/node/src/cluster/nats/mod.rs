//! The cluster's shared state on NATS (feature `nats`): who is up, and the slot map.
//!
//! - [`names`]: the buckets of a cluster, named after it.
//! - [`registry`]: every node's record in a KV bucket whose values lapse unless renewed.
//! - [`liveness`]: which of those nodes are up, on this node's clock (the failover check).
//! - [`map_store`]: the slot map in a KV bucket, changed only by compare-and-set.
//! - [`node_id`]: the node's id, kept in its data directory.
//!
//! Exists so the planner (`shardkit cluster ...`) and the nodes read and change one
//! source of truth, with JetStream doing the ordering (no home-made consensus).

pub mod liveness;
pub mod map_store;
pub mod names;
pub mod node_id;
pub mod registry;
pub mod replicas;

/// JetStream over a connection made from `[nats]`, as `client_name`.
pub async fn connect(
    nats: &crate::nats_settings::NatsSettings,
    client_name: &str,
) -> anyhow::Result<async_nats::jetstream::Context> {
    let client = crate::nats_connect::connect(nats, client_name).await?;
    Ok(async_nats::jetstream::new(client))
}

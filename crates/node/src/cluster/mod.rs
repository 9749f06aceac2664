//! Redis Cluster for the counters: the key → slot function clients share with us, and
//! the `[cluster]` settings.
//!
//! - [`slot`]: CRC16 of the key or of its `{…}` hash tag, modulo 16,384.
//! - [`settings`]: `[cluster] enabled`, `name`, `announce`, `groups`.
//! - [`map`]: slot groups, their owners and replicas, and the nodes (`SlotMap`).
//! - [`route`]: where a command goes (here, `-MOVED`, `-CROSSSLOT`, `-CLUSTERDOWN`).
//! - [`live`]: the map and group stores a cluster node's requests are routed by.
//! - [`tickets`]: ticket sequences kept in the groups (`TICKET.NEXT`, `POST /api/tickets`).
//! - [`schema`]: the counters and columns every group has (`COUNTER.CREATE|ADDCOL`).
//! - [`planner`]: the placement with the fewest group moves when nodes join or leave.
//! - `nats` (feature `nats`): the node records and the slot map in JetStream KV.
//!
//! With `[cluster] enabled = true` a node joins the cluster named in the settings: the
//! map lives in a JetStream KV bucket, each group is a replicated counter store of its
//! own, and a group moves whole by handing its lease over (no `-ASK`: docs/cluster.md).
//! Without it the `CLUSTER` family answers as a Redis with cluster support disabled.

pub mod live;
pub mod map;
#[cfg(feature = "nats")]
pub mod nats;
pub mod planner;
pub mod route;
pub mod schema;
pub mod settings;
pub mod slot;
pub mod tickets;

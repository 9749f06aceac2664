//! The Redis Cluster side of the RESP frontend: the `CLUSTER` family every node answers
//! ([`commands`], with [`replies`] in Redis 7's shapes) and, on a cluster node
//! (`[cluster] enabled`), commands run by their keys' slot ([`dispatch`]) with the
//! keyspace ([`keyspace`]), schema ([`schema`]) and ticket ([`tickets`]) commands that
//! mean something else across nodes. The decisions (slot map, routing, groups) are the
//! node's `cluster` module's; these files only speak them.

pub mod commands;
pub mod dispatch;
pub mod keyspace;
pub mod replies;
pub mod schema;
pub mod tickets;

//! The Redis protocol frontend: what each command means. The bytes (parsing, reply
//! writers, glob patterns, limits) are the `shardkit_resp` crate's.
//!
//! - [`table`]: the one command table (name, arity, flags, keys, handler) that the
//!   dispatcher and `COMMAND` read; each family of commands lists its entries in its
//!   own file ([`string_commands`], [`hash_commands`], [`keyspace_commands`],
//!   [`counter_admin`], [`server_commands`], [`client_commands`], [`server_info`],
//!   [`id_commands`], [`command_info`], [`sentinel_commands`],
//!   [`cluster::commands`]).
//! - [`cluster`]: Redis Cluster's commands and, on a cluster node, commands run by slot.
//! - [`connection`]: one client's read-parse-dispatch-write loop.
//! - [`permissions`]: which key role each command needs (`-NOPERM`).
//! - [`values`]: what the counter commands share (the zero-and-absence rule, Redis's
//!   integer parsing and error texts).

pub mod accept;
pub mod client_commands;
pub mod clients;
pub mod cluster;
pub mod command_info;
pub mod connection;
pub mod counter_admin;
pub mod hash_commands;
pub mod id_commands;
pub mod incr_run;
pub mod keyspace_commands;
pub mod permissions;
pub mod role_reply;
pub mod sentinel_commands;
pub mod server_commands;
pub mod server_info;
pub mod session;
pub mod string_commands;
pub mod table;
pub mod values;

//! The Redis protocol (RESP2, and RESP3 after `HELLO 3`), our own framing: the hot path
//! of the counter service.
//!
//! - [`parse`]: turns the bytes a client sent into commands, without copying the
//!   arguments of the common (multibulk) form, with limits on every size a client
//!   announces.
//! - [`table`]: the one command table (name, arity, flags, keys, handler) that the
//!   dispatcher and `COMMAND` read; each family of commands lists its entries in its
//!   own file ([`string_commands`], [`hash_commands`], [`keyspace_commands`],
//!   [`counter_admin`], [`server_commands`], [`client_commands`], [`server_info`],
//!   [`id_commands`], [`command_info`], [`sentinel_commands`],
//!   [`cluster_commands`]).
//! - [`permissions`]: which key role each command needs (`-NOPERM`).
//! - [`clients`]: the open connections (`CLIENT LIST`/`KILL`, `INFO clients`);
//!   [`glob`]: Redis's patterns (`SCAN MATCH`, `CONFIG GET`).
//! - [`values`]: what the counter commands share (the zero-and-absence rule, Redis's
//!   integer parsing and error texts).
//! - [`reply`]: writes replies straight into the output buffer.
//!
//! Why not a general RESP crate: a command here is parsed once and answered at once,
//! so arguments can stay slices of the read buffer and the parse state can be reused
//! for every command of a connection; nothing is allocated per value.

pub mod client_commands;
pub mod clients;
pub mod cluster_commands;
pub mod cluster_dispatch;
pub mod cluster_keyspace;
pub mod cluster_schema;
pub mod cluster_tickets;
pub mod command_info;
pub mod connection;
pub mod counter_admin;
pub mod glob;
pub mod hash_commands;
pub mod id_commands;
pub mod incr_run;
pub mod keyspace_commands;
pub mod limits;
pub mod parse;
pub mod permissions;
pub mod reply;
pub mod sentinel_commands;
pub mod server_commands;
pub mod server_info;
pub mod session;
pub mod string_commands;
pub mod table;
pub mod values;

pub use limits::Limits;
pub use parse::{Command, ParseError, Parser};

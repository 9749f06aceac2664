//! The Redis protocol's wire format (RESP2, and RESP3 after `HELLO 3`), our own framing:
//! the hot path of the counter service. Only bytes live here; what a command means is
//! the server's (`shardkit::resp`).
//!
//! - [`parse`]: turns the bytes a client sent into commands, without copying the
//!   arguments of the common (multibulk) form, with [`Limits`] on every size a client
//!   announces.
//! - [`reply`]: writes replies straight into the output buffer.
//! - [`glob`]: Redis's patterns (`SCAN MATCH`, `CONFIG GET`).
//! - [`keys`]: where a command's keys are among its arguments (cluster routing).
//!
//! Why not a general RESP crate: a command here is parsed once and answered at once,
//! so arguments can stay slices of the read buffer and the parse state can be reused
//! for every command of a connection; nothing is allocated per value.

pub mod glob;
pub mod keys;
pub mod limits;
pub mod parse;
pub mod reply;

pub use limits::Limits;
pub use parse::{Command, ParseError, Parser};

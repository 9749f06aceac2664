//! The Redis protocol (RESP2), our own framing: the hot path of the counter service.
//!
//! - [`parse`]: turns the bytes a client sent into commands, without copying the
//!   arguments of the common (multibulk) form, with limits on every size a client
//!   announces.
//! - [`reply`]: writes replies straight into the output buffer.
//!
//! Why not a general RESP crate: a command here is parsed once and answered at once,
//! so arguments can stay slices of the read buffer and the parse state can be reused
//! for every command of a connection; nothing is allocated per value.

pub mod commands;
pub mod connection;
pub mod counter_commands;
pub mod limits;
pub mod parse;
pub mod reply;

pub use limits::Limits;
pub use parse::{Command, ParseError, Parser};

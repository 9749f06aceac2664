//! Small helpers every layer of shardkit shares, kept in the lowest crate so that no
//! layer reaches up for them.

#![warn(missing_docs)]

pub mod log_every;
pub mod revision_clock;

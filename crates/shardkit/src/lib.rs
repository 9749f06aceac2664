//! The parts of the `shardkit` binary that tests and fuzz targets reach directly.
//!
//! The binary's command line lives in `main.rs` and `cli/`; what is here is the
//! network-facing code that deserves its own tests: the Redis-protocol framing.

pub mod resp;

//! The frontends of the `shardkit` binary, as a library so that integration tests reach
//! them directly: the HTTP API (`http`), the Redis protocol's commands (`resp`), and the
//! wiring that binds, spawns and drains them (`server`). What they serve is
//! `shardkit_node`'s. The command line lives in `main.rs` and `cli/`.

#![warn(missing_docs)]

pub mod decoded_json;
pub mod frontend_tls;
pub mod http;
pub mod plural;
pub mod resp;
pub mod server;
#[cfg(feature = "tls")]
pub mod tls;

//! The server half of the `shardkit` binary, as a library so that integration tests
//! and fuzz targets reach it directly: settings, shared state, the HTTP API and the
//! Redis protocol. The command line lives in `main.rs` and `cli/`.

#![warn(missing_docs)]

pub mod announce;
pub mod api_keys;
pub mod byte_size;
pub mod cluster;
#[cfg(feature = "nats")]
pub mod cluster_runner;
pub mod config;
pub mod config_error;
pub mod counters;
pub mod data_dir;
pub mod decoded_json;
pub mod http;
pub mod id_format;
pub mod id_layout_record;
pub mod id_leases;
#[cfg(feature = "nats")]
pub mod nats_connect;
pub mod nats_settings;
pub mod plural;
pub mod replication;
pub mod resp;
pub mod resp_clients;
pub mod resp_runtime;
pub mod restart_in_place;
pub mod server;
pub mod state;
pub mod telemetry;

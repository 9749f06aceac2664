//! A shardkit node without its protocols: the settings, the shared state both frontends
//! serve from, and the services behind them (counters with their group commit, ticket
//! and id issuing, API keys, replication on NATS JetStream, the cluster mode, the
//! telemetry counters). It writes no RESP byte and knows no HTTP status: the frontends
//! (`crates/shardkit`'s `resp/` and `http/`) and the binary's wiring (`server.rs`) sit
//! on it.

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
pub mod http_settings;
pub mod id_format;
pub mod id_layout_record;
pub mod id_leases;
pub mod id_settings;
#[cfg(feature = "nats")]
pub mod nats_connect;
pub mod nats_settings;
pub mod replication;
pub mod resp_limits;
pub mod resp_runtime;
pub mod resp_settings;
pub mod restart_in_place;
pub mod settings_reference;
pub mod state;
pub mod telemetry;
pub mod ticket_settings;
pub mod tls_settings;

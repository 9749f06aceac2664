//! Server settings: defaults, then a TOML file, then `SHARDKIT_*` environment
//! variables, then command-line flags, each overriding the one before.
//! `shardkit serve --print-config` shows the result.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `[counters] fsync`: when the counters' local log reaches the disk (Redis's
/// `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Fsync {
    /// Before a write is acknowledged: no acknowledged write is lost.
    #[default]
    Always,
    /// Once a second: a power cut loses up to about a second.
    Everysec,
    /// When the operating system writes: fastest, a power cut loses what it held.
    No,
}

/// `[counters] log`: where the counters' log of record lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CounterLog {
    /// The data directory's segment files.
    #[default]
    Local,
    /// A NATS JetStream stream: the lease holder writes, replicas follow (feature `nats`).
    Jetstream,
}

/// `[counters] role`: whether a node with the JetStream log may lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CounterRole {
    /// Lead when the lease is free, else follow.
    #[default]
    Auto,
    /// Never lead.
    Replica,
}

/// `[links] store`: where links live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LinkStoreKind {
    /// Embedded: records in `<data>/links.segments/`, their indexes in `<data>/links.redb`.
    #[default]
    Redb,
    /// The previous embedded format (records in redb), for side-by-side measurements.
    RedbCompact,
    /// The oldest embedded format (JSON records), for side-by-side measurements.
    RedbJson,
    /// The logical shards of `links.servers`, made by `shardkit pg init` (feature `sql`).
    Postgres,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line, for log collectors.
    Json,
}

/// Everything `shardkit serve` can be configured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Data directory (time guard, tickets, counters, links).
    pub data: PathBuf,
    /// HTTP listen address.
    pub http: SocketAddr,
    /// Redis-protocol listen address.
    pub resp: SocketAddr,
    /// API key: write endpoints need `Authorization: Bearer KEY`, RESP needs `AUTH KEY`.
    /// Required when either address is not loopback.
    pub api_key: Option<String>,
    /// Log format.
    pub log_format: LogFormat,
    /// Threads of the Redis-protocol runtime (its own, apart from HTTP's). 1 by
    /// default: on 2 cores, one thread answered `INCR` 12-20% faster than two (fewer
    /// wake-ups across threads); raise it on a machine with cores to spare.
    pub resp_threads: usize,
    /// Id generation.
    pub ids: IdSettings,
    /// Ticket sequences.
    pub tickets: TicketSettings,
    /// Redis-protocol limits.
    pub resp_limits: RespLimitSettings,
    /// The counter engine.
    pub counters: CounterSettings,
    /// Short links.
    pub links: LinkSettings,
    /// The NATS server the counters' replicated log lives on (`[counters] log = "jetstream"`).
    pub nats: NatsSettings,
    /// Who may read what.
    pub access: AccessSettings,
    /// Redis Cluster mode (planned; refused when enabled until it exists).
    pub cluster: crate::cluster::settings::ClusterSettings,
    /// Short links in several regions; absent: one region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions: Option<shardkit_link_service::regions::RegionSettings>,
}

pub use crate::nats_settings::NatsSettings;

/// `[access]`: routes the operator opens to callers without a key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccessSettings {
    /// Routes open without a key even when keys are configured, as `"METHOD /path"`
    /// with the router's patterns (`"GET /api/links/{code}"`, `"GET /metrics"`); a
    /// pattern alone means GET.
    pub public: Vec<String>,
}

use shardkit_link_service::cache_size::MAX_CACHE_ENTRIES;

/// `[links]`: short links (codes, cache, limits, click flushing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkSettings {
    /// Start of every short URL, e.g. `https://sho.rt`; `http://<http address>` when absent.
    /// Long URLs pointing there are refused.
    pub base_url: Option<String>,
    /// Plain sequential codes (`a000001`, `a000002`, …) instead of scrambled ones.
    pub sequential_codes: bool,
    /// Links kept in the redirect cache (at most [`MAX_CACHE_ENTRIES`]).
    pub cache_entries: usize,
    /// Link creations per second per client address (0: no limit).
    pub create_per_second: u32,
    /// Creations a client may make at once before the rate applies.
    pub create_burst: u32,
    /// How often clicks counted in memory are written to the counter engine, ms:
    /// the most clicks a SIGKILL can lose.
    pub click_flush_ms: u64,
    /// Where links live: `redb` (embedded: records in `<data>/links.segments/`, their
    /// indexes in `<data>/links.redb`) or `postgres` (the logical shards of `servers`,
    /// made by `shardkit pg init`; needs feature `sql`). `redb-compact` and `redb-json`
    /// are the two previous embedded formats, kept for side-by-side measurements.
    pub store: LinkStoreKind,
    /// PostgreSQL server URLs of the cluster when `store` is `postgres`.
    pub servers: Vec<String>,
    /// A MaxMind DB file (GeoLite2-Country or alike) for the clicks' countries; none
    /// by default (no country recorded, nothing downloaded).
    pub geoip_db: Option<PathBuf>,
    /// Memory of the embedded link store, MiB: its page cache, which holds what
    /// resident memory the store takes whatever the number of links (16 to 1,048,576).
    pub memory_mib: u64,
}

impl LinkSettings {
    /// The embedded store's page cache in bytes (`memory_mib`).
    pub fn store_cache_bytes(&self) -> usize {
        usize::try_from(self.memory_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }
}

impl Default for LinkSettings {
    fn default() -> Self {
        Self {
            base_url: None,
            sequential_codes: false,
            cache_entries: 100_000,
            create_per_second: 100,
            create_burst: 1_000,
            click_flush_ms: 100,
            store: LinkStoreKind::Redb,
            servers: Vec::new(),
            geoip_db: None,
            memory_mib: 256,
        }
    }
}

/// `[counters]`: durability and schema behaviour of the counter engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CounterSettings {
    /// `always` (default: no acknowledged write is lost), `everysec` or `no`, as Redis's appendfsync.
    pub fsync: Fsync,
    /// Writes create missing counters (one column `value`) and columns (16 bits, max 64).
    pub auto_create: bool,
    /// How long applied transaction ids are remembered, seconds.
    pub txid_window_secs: u64,
    /// Snapshot and rotate the log after this many MiB of log.
    pub snapshot_log_mib: u64,
    /// ... and once the log since the last snapshot is this percent of that snapshot's
    /// size (Redis's `auto-aof-rewrite-percentage`), so a big store is not rewritten
    /// whole every `snapshot_log_mib`; 0: the MiB trigger alone.
    pub snapshot_growth_percent: u32,
    /// Also snapshot this many seconds after the last one if anything was written since
    /// (Redis's `save <seconds> 1`); 0 turns the timed snapshot off.
    pub snapshot_seconds: u64,
    /// The log of record: `local` (the data directory's segment files) or `jetstream`
    /// (a NATS JetStream stream: a leader that holds the store's lease writes, replicas
    /// follow; needs feature `nats`).
    pub log: CounterLog,
    /// Name of the counter store on NATS; the stream, lease bucket and subject derive
    /// from it, so several stores share one NATS. Letters, digits, `-` and `_`.
    pub store: String,
    /// Copies JetStream keeps of the stream and the lease bucket (3 in production).
    pub stream_replicas: usize,
    /// `auto` (lead when the lease is free, else follow) or `replica` (never lead).
    pub role: CounterRole,
    /// How long the leader's lease lasts without renewal, ms (renewed every third of it).
    pub lease_ms: u64,
    /// Snapshots kept (1-16), so a damaged newest one can fall back on the one before:
    /// in the data directory, with the log segments the oldest kept one needs (and the
    /// cold files it names); with the `jetstream` log also in the store's object store,
    /// the stream purged up to what the oldest of them covers. 1 keeps the directory
    /// smallest (a billion cold-tiered rows: about the newest snapshot less on disk).
    pub snapshots_kept: usize,
    /// The RESP address clients reach this node at (`host:port`), handed out by `ROLE`,
    /// `INFO replication`, Sentinel, the HTTP 421 and the members' records, the HTTP
    /// address taking its host; required with the `jetstream` log when `resp` or
    /// `http` listens on an unspecified address (`0.0.0.0`, `::`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub announce: Option<String>,
    /// The cold tier: when the engine's memory passes this size (`"2GiB"`), the least
    /// recently written partitions go to disk. None: no limit, everything in RAM.
    pub max_memory: Option<String>,
    /// The cold tier: partitions not written for this long (`"10m"`, `"1h"`) go to
    /// disk. None: never by age.
    pub cold_after: Option<String>,
    /// The cold tier's block cache (decoded blocks of cold rows), e.g. `"64MiB"`.
    pub block_cache: String,
}

impl CounterSettings {
    /// `max_memory` in bytes (None: no limit).
    pub fn max_memory_bytes(&self) -> anyhow::Result<Option<u64>> {
        let Some(text) = &self.max_memory else {
            return Ok(None);
        };
        let n = crate::byte_size::parse_byte_size(text)
            .map_err(|e| anyhow::anyhow!("counters.max_memory: {e}"))?;
        if n < 1 << 20 {
            anyhow::bail!("counters.max_memory must be at least 1MiB, got {text:?}");
        }
        Ok(Some(n))
    }

    /// `cold_after` as a duration (None: never by age).
    pub fn cold_after_duration(&self) -> anyhow::Result<Option<Duration>> {
        let Some(text) = &self.cold_after else {
            return Ok(None);
        };
        let d = humantime::parse_duration(text.trim()).map_err(|e| {
            anyhow::anyhow!(
                "counters.cold_after: {text:?} is not a duration ({e}); write e.g. \"10m\", \"1h\" or \"30s\""
            )
        })?;
        if d < Duration::from_secs(1) {
            anyhow::bail!("counters.cold_after must be at least 1s, got {text:?}");
        }
        Ok(Some(d))
    }

    /// `block_cache` in bytes.
    pub fn block_cache_bytes(&self) -> anyhow::Result<u64> {
        crate::byte_size::parse_byte_size(&self.block_cache)
            .map_err(|e| anyhow::anyhow!("counters.block_cache: {e}"))
    }
}

impl Default for CounterSettings {
    fn default() -> Self {
        Self {
            fsync: Fsync::Always,
            auto_create: true,
            txid_window_secs: 600,
            snapshot_log_mib: 64,
            snapshot_growth_percent: 100,
            snapshot_seconds: 3600,
            log: CounterLog::Local,
            store: "counters".into(),
            stream_replicas: 1,
            role: CounterRole::Auto,
            lease_ms: 3_000,
            snapshots_kept: 2,
            announce: None,
            max_memory: None,
            cold_after: None,
            block_cache: "64MiB".into(),
        }
    }
}

/// `[ids]`: the layout and clock policies of the server's id generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IdSettings {
    /// `instagram`, `snowflake`, `sonyflake`, `sonyflake-legacy` or `T/S/Q@Nms`.
    pub layout: String,
    /// RFC 3339 epoch; the layout's default (2024-01-01T00:00:00Z) when absent.
    pub epoch: Option<String>,
    /// How far ids may run ahead of the wall clock, in ms.
    pub max_lead_ms: u64,
    /// `refuse` or `wait` when the clock steps back further than that.
    pub on_clock_backwards: String,
}

/// `[tickets]`: how this server's ticket sequences are numbered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TicketSettings {
    /// Step between numbers (2 for Flickr's pair of servers).
    pub increment: u64,
    /// First number, 1 to `increment`.
    pub offset: u64,
    /// First block size of each sequence.
    pub initial_step: u64,
}

/// `[resp_limits]`: sizes a Redis client may announce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RespLimitSettings {
    /// Largest bulk string, bytes.
    pub max_bulk_len: usize,
    /// Most arguments in one command.
    pub max_array_len: usize,
    /// Most unparsed bytes held for one connection.
    pub max_buffer: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            data: PathBuf::from("./shardkit-data"),
            http: SocketAddr::from(([127, 0, 0, 1], 8080)),
            resp: SocketAddr::from(([127, 0, 0, 1], 6380)),
            api_key: None,
            log_format: LogFormat::Text,
            resp_threads: 1,
            ids: IdSettings::default(),
            tickets: TicketSettings::default(),
            resp_limits: RespLimitSettings::default(),
            counters: CounterSettings::default(),
            links: LinkSettings::default(),
            nats: NatsSettings::default(),
            access: AccessSettings::default(),
            cluster: Default::default(),
            regions: None,
        }
    }
}

impl Default for IdSettings {
    fn default() -> Self {
        Self {
            layout: "instagram".into(),
            epoch: None,
            max_lead_ms: 2_000,
            on_clock_backwards: "refuse".into(),
        }
    }
}

impl Default for TicketSettings {
    fn default() -> Self {
        Self {
            increment: 1,
            offset: 1,
            initial_step: 1_000,
        }
    }
}

impl Default for RespLimitSettings {
    fn default() -> Self {
        let limits = shardkit_resp::Limits::default();
        Self {
            max_bulk_len: limits.max_bulk_len,
            max_array_len: limits.max_array_len,
            max_buffer: limits.max_buffer,
        }
    }
}

/// Values given on the command line or in the environment; `None` leaves the file's
/// (or the default) value.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--data` / `SHARDKIT_DATA`.
    pub data: Option<PathBuf>,
    /// `--http` / `SHARDKIT_HTTP`.
    pub http: Option<SocketAddr>,
    /// `--resp` / `SHARDKIT_RESP`.
    pub resp: Option<SocketAddr>,
    /// `SHARDKIT_API_KEY` (or `--api-key`).
    pub api_key: Option<String>,
    /// `--log-format` / `SHARDKIT_LOG_FORMAT`.
    pub log_format: Option<LogFormat>,
    /// `--store` / `SHARDKIT_STORE`: where links live (`links.store`).
    pub store: Option<LinkStoreKind>,
    /// `--servers` / `SHARDKIT_PG_SERVERS`: PostgreSQL servers (`links.servers`).
    pub servers: Option<Vec<String>>,
    /// `--counters-log` / `SHARDKIT_COUNTERS_LOG` (`counters.log`).
    pub counters_log: Option<CounterLog>,
    /// `--counters-store` / `SHARDKIT_COUNTERS_STORE` (`counters.store`).
    pub counters_store: Option<String>,
    /// `--counters-role` / `SHARDKIT_COUNTERS_ROLE` (`counters.role`).
    pub counters_role: Option<CounterRole>,
    /// `--counters-lease-ms` / `SHARDKIT_COUNTERS_LEASE_MS` (`counters.lease_ms`).
    pub counters_lease_ms: Option<u64>,
    /// `--counters-stream-replicas` / `SHARDKIT_COUNTERS_STREAM_REPLICAS`.
    pub counters_stream_replicas: Option<usize>,
    /// `--counters-snapshots-kept` / `SHARDKIT_COUNTERS_SNAPSHOTS_KEPT`.
    pub counters_snapshots_kept: Option<usize>,
    /// `--counters-announce` / `SHARDKIT_COUNTERS_ANNOUNCE` (`counters.announce`).
    pub counters_announce: Option<String>,
    /// `--nats-url` / `SHARDKIT_NATS_URL` (`nats.url`), comma-separated.
    pub nats_url: Option<String>,
    /// `SHARDKIT_NATS_CREDS` (`nats.creds`).
    pub nats_creds: Option<PathBuf>,
    /// `SHARDKIT_NATS_USER` (`nats.user`).
    pub nats_user: Option<String>,
    /// `SHARDKIT_NATS_PASSWORD` (`nats.password`).
    pub nats_password: Option<String>,
    /// `SHARDKIT_NATS_TOKEN` (`nats.token`).
    pub nats_token: Option<String>,
}

impl Overrides {
    /// The NATS credentials given in the environment (`SHARDKIT_NATS_CREDS`,
    /// `SHARDKIT_NATS_USER`, `SHARDKIT_NATS_PASSWORD`, `SHARDKIT_NATS_TOKEN`): secrets
    /// never come as flags, which other users of the host can read.
    pub fn with_nats_env(mut self) -> Self {
        self.nats_creds = std::env::var_os("SHARDKIT_NATS_CREDS").map(Into::into);
        self.nats_user = std::env::var("SHARDKIT_NATS_USER").ok();
        self.nats_password = std::env::var("SHARDKIT_NATS_PASSWORD").ok();
        self.nats_token = std::env::var("SHARDKIT_NATS_TOKEN").ok();
        self
    }
}

impl Settings {
    /// Reads the TOML file (if any) over the defaults, applies the overrides, and
    /// checks the result ([`Settings::check`]).
    pub fn load(file: Option<&Path>, overrides: Overrides) -> anyhow::Result<Self> {
        let settings = Self::read(file, overrides)?;
        settings.check()?;
        Ok(settings)
    }

    /// [`Settings::load`] without the whole check: for the command line's subcommands,
    /// which read a node's file for one section (and check that section) on a host
    /// where the node's other settings may not hold.
    pub fn read(file: Option<&Path>, overrides: Overrides) -> anyhow::Result<Self> {
        let mut settings = match file {
            None => Settings::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    anyhow::anyhow!("cannot read config file {}: {e}", path.display())
                })?;
                toml::from_str(&text)
                    .map_err(|e| anyhow::anyhow!(crate::config_error::describe(path, &text, &e)))?
            }
        };
        if let Some(v) = overrides.data {
            settings.data = v;
        }
        if let Some(v) = overrides.http {
            settings.http = v;
        }
        if let Some(v) = overrides.resp {
            settings.resp = v;
        }
        if let Some(v) = overrides.api_key.filter(|k| !k.is_empty()) {
            settings.api_key = Some(v);
        }
        if let Some(v) = overrides.log_format {
            settings.log_format = v;
        }
        if let Some(v) = overrides.store {
            settings.links.store = v;
        }
        if let Some(v) = overrides.servers.filter(|s| !s.is_empty()) {
            settings.links.servers = v;
        }
        if let Some(v) = overrides.counters_log {
            settings.counters.log = v;
        }
        if let Some(v) = overrides.counters_store {
            settings.counters.store = v;
        }
        if let Some(v) = overrides.counters_role {
            settings.counters.role = v;
        }
        if let Some(v) = overrides.counters_lease_ms {
            settings.counters.lease_ms = v;
        }
        if let Some(v) = overrides.counters_stream_replicas {
            settings.counters.stream_replicas = v;
        }
        if let Some(v) = overrides.counters_announce.filter(|v| !v.is_empty()) {
            settings.counters.announce = Some(v);
        }
        if let Some(v) = overrides.counters_snapshots_kept {
            settings.counters.snapshots_kept = v;
        }
        if let Some(v) = overrides.nats_url {
            settings.nats.url = crate::nats_settings::urls_from_text(&v);
        }
        if let Some(v) = overrides.nats_creds {
            settings.nats.creds = Some(v);
        }
        if let Some(v) = overrides.nats_user.filter(|v| !v.is_empty()) {
            settings.nats.user = Some(v);
        }
        if let Some(v) = overrides.nats_password.filter(|v| !v.is_empty()) {
            settings.nats.password = Some(v);
            settings.nats.password_file = None;
        }
        if let Some(v) = overrides.nats_token.filter(|v| !v.is_empty()) {
            settings.nats.token = Some(v);
            settings.nats.token_file = None;
        }
        Ok(settings)
    }

    /// Refuses settings that would be unsafe or cannot work, saying how to fix them.
    pub fn check(&self) -> anyhow::Result<()> {
        // Every mode may reach NATS (the log, a cluster, the CLI's cluster commands).
        self.nats.check()?;
        if let Some(announce) = &self.counters.announce {
            crate::announce::check("counters.announce", announce)?;
        }
        if self.counters.log == CounterLog::Jetstream {
            crate::announce::check_reachable(
                "counters.announce",
                self.counters.announce.as_deref(),
                self.resp,
                self.http,
            )?;
        }
        if self.cluster.enabled {
            crate::announce::check_reachable(
                "cluster.announce",
                self.cluster.announce.as_deref(),
                self.resp,
                self.http,
            )?;
        }
        let exposed: Vec<String> = [("http", self.http), ("resp", self.resp)]
            .iter()
            .filter(|(_, addr)| !addr.ip().is_loopback())
            .map(|(name, addr)| format!("{name} {addr}"))
            .collect();
        if !exposed.is_empty() && self.api_key.is_none() {
            anyhow::bail!(
                "refusing to listen on a non-loopback address ({}) without an API key: set SHARDKIT_API_KEY=<secret> \
                 (or api_key in the config file), or bind to 127.0.0.1",
                exposed.join(", ")
            );
        }
        if matches!(&self.api_key, Some(k) if k.len() < 16) {
            anyhow::bail!("the API key is too short: use at least 16 characters");
        }
        if !(1..=256).contains(&self.resp_threads) {
            anyhow::bail!(
                "resp_threads must be from 1 to 256, got {}",
                self.resp_threads
            );
        }
        self.check_counter_log()?;
        self.check_cold_tier()?;
        self.cluster.check()?;
        if self.cluster.enabled && self.counters.log == CounterLog::Jetstream {
            anyhow::bail!(
                "cluster.enabled: a cluster node keeps the counters in its slot groups' logs \
                 on JetStream already; leave counters.log at \"local\" (it then holds only the \
                 node's own counters, such as link clicks)"
            );
        }
        if let Some(regions) = &self.regions {
            regions.check()?;
        }
        if !matches!(self.ids.on_clock_backwards.as_str(), "refuse" | "wait") {
            anyhow::bail!(
                "ids.on_clock_backwards must be \"refuse\" or \"wait\", got {:?}",
                self.ids.on_clock_backwards
            );
        }
        if self.links.cache_entries > MAX_CACHE_ENTRIES {
            anyhow::bail!(
                "links.cache_entries must be 0 to {MAX_CACHE_ENTRIES} (links in the redirect cache), got {}",
                self.links.cache_entries
            );
        }
        if !(16..=1 << 20).contains(&self.links.memory_mib) {
            anyhow::bail!(
                "links.memory_mib must be 16 to 1048576 (MiB of page cache for the link store), got {}",
                self.links.memory_mib
            );
        }
        match self.links.store {
            LinkStoreKind::Redb | LinkStoreKind::RedbCompact | LinkStoreKind::RedbJson => {}
            LinkStoreKind::Postgres if !cfg!(feature = "sql") => {
                anyhow::bail!(
                    "links.store \"postgres\" needs a shardkit built with the cargo feature `sql`"
                )
            }
            LinkStoreKind::Postgres if self.links.servers.is_empty() => {
                anyhow::bail!("links.store \"postgres\" needs the cluster's servers: pass --servers URL[,URL...] (or links.servers)")
            }
            LinkStoreKind::Postgres => {}
        }
        if let Some(base) = &self.links.base_url {
            shardkit_links::OwnOrigin::from_base_url(base)
                .map_err(|e| anyhow::anyhow!("links.base_url {base:?} is not a usable URL: {e}"))?;
        }
        Ok(())
    }

    /// The replicated-log settings: a mode this build has, a usable store name, a role,
    /// a lease long enough to renew.
    fn check_counter_log(&self) -> anyhow::Result<()> {
        let c = &self.counters;
        match c.log {
            CounterLog::Local => return Ok(()),
            CounterLog::Jetstream if !cfg!(feature = "nats") => anyhow::bail!(
                "counters.log \"jetstream\" needs a shardkit built with the cargo feature `nats`"
            ),
            CounterLog::Jetstream => {}
        }
        if c.store.is_empty()
            || c.store.len() > 64
            || !c
                .store
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            anyhow::bail!(
                "counters.store must be 1 to 64 letters, digits, '-' or '_', got {:?}",
                c.store
            );
        }
        if !(300..=60_000).contains(&c.lease_ms) {
            anyhow::bail!(
                "counters.lease_ms must be from 300 to 60000, got {}",
                c.lease_ms
            );
        }
        if !(1..=5).contains(&c.stream_replicas) {
            anyhow::bail!(
                "counters.stream_replicas must be from 1 to 5 (JetStream's limit), got {}",
                c.stream_replicas
            );
        }
        if !(1..=16).contains(&c.snapshots_kept) {
            anyhow::bail!(
                "counters.snapshots_kept must be from 1 to 16, got {}",
                c.snapshots_kept
            );
        }
        Ok(())
    }

    /// The cold tier's settings: sizes and a duration that parse, and not with the
    /// `jetstream` log (its snapshots, shipped to the object store, do not carry the cold
    /// blocks they name).
    fn check_cold_tier(&self) -> anyhow::Result<()> {
        let c = &self.counters;
        let tiered = c.max_memory_bytes()?.is_some() | c.cold_after_duration()?.is_some();
        c.block_cache_bytes()?;
        if tiered && c.log == CounterLog::Jetstream {
            anyhow::bail!(
                "counters.max_memory and counters.cold_after are not available with counters.log \"jetstream\" yet: the snapshots shipped to the object store do not carry the cold blocks they name; unset them or use log \"local\""
            );
        }
        Ok(())
    }

    /// The settings as TOML with the API key hidden, for `--print-config`.
    pub fn to_toml_redacted(&self) -> anyhow::Result<String> {
        let mut shown = self.clone();
        if shown.api_key.is_some() {
            shown.api_key = Some("<redacted>".into());
        }
        if let Some(regions) = shown.regions.as_mut().filter(|r| r.peer_key.is_some()) {
            regions.peer_key = Some("<redacted>".into());
        }
        shown.nats = shown.nats.redacted();
        shown.links.servers = shown
            .links
            .servers
            .iter()
            .map(|url| shardkit_ring::redact_url(url))
            .collect();
        Ok(toml::to_string_pretty(&shown)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_tier_settings_parse_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shardkit.toml");
        let load = |text: &str| {
            std::fs::write(&file, text).unwrap();
            Settings::load(Some(&file), Overrides::default())
        };
        let s = load("[counters]\nmax_memory = \"2GiB\"\ncold_after = \"10m\"\n").unwrap();
        assert_eq!(s.counters.max_memory_bytes().unwrap(), Some(2 << 30));
        assert_eq!(
            s.counters.cold_after_duration().unwrap(),
            Some(Duration::from_secs(600))
        );
        assert_eq!(s.counters.block_cache_bytes().unwrap(), 64 << 20);
        let s = load("").unwrap();
        assert_eq!(s.counters.max_memory_bytes().unwrap(), None);
        assert_eq!(s.counters.cold_after_duration().unwrap(), None);
        for (text, says) in [
            ("[counters]\nmax_memory = \"2\"\n", "counters.max_memory"),
            ("[counters]\nmax_memory = \"12KiB\"\n", "at least 1MiB"),
            (
                "[counters]\ncold_after = \"ten minutes\"\n",
                "counters.cold_after",
            ),
            ("[counters]\ncold_after = \"10ms\"\n", "at least 1s"),
            (
                "[counters]\nblock_cache = \"lots\"\n",
                "counters.block_cache",
            ),
            ("[counters]\nmax_memorie = \"2GiB\"\n", "max_memorie"),
            ("[counters]\nlog = \"nats\"\n", "setting counters.log"),
            (
                "[counters]\nfsync = \"sometimes\"\n",
                "setting counters.fsync",
            ),
            ("[counters]\nrole = \"leader\"\n", "setting counters.role"),
            ("[links]\nstore = \"sqlite\"\n", "setting links.store"),
            (
                "[counters]\nlog = \"jetstream\"\ncold_after = \"10m\"\n",
                "jetstream",
            ),
        ] {
            let err = format!("{:#}", load(text).unwrap_err());
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn flags_override_the_file_which_overrides_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shardkit.toml");
        std::fs::write(
            &file,
            "data = \"/srv/sk\"\nresp = \"127.0.0.1:7000\"\n[ids]\nlayout = \"snowflake\"\n",
        )
        .unwrap();
        let overrides = Overrides {
            resp: Some("127.0.0.1:7001".parse().unwrap()),
            ..Overrides::default()
        };
        let s = Settings::load(Some(&file), overrides).unwrap();
        assert_eq!(s.data, PathBuf::from("/srv/sk"));
        assert_eq!(s.resp, "127.0.0.1:7001".parse().unwrap());
        assert_eq!(s.http, Settings::default().http);
        assert_eq!(s.ids.layout, "snowflake");
    }

    #[test]
    fn unknown_keys_and_exposed_addresses_without_a_key_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, "htp = \"x\"\n").unwrap();
        let err = Settings::load(Some(&file), Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field"), "{err}");
        assert!(err.contains("line 1 (setting htp)"), "{err}");
        std::fs::write(
            &file,
            "data = \"x\"\n[links]\ncreate_per_second = \"lots\"\n",
        )
        .unwrap();
        let err = Settings::load(Some(&file), Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 3 (setting links.create_per_second)") && err.contains("u32"),
            "{err}"
        );
        let open = Overrides {
            http: Some("0.0.0.0:8080".parse().unwrap()),
            ..Overrides::default()
        };
        let err = Settings::load(None, open.clone()).unwrap_err().to_string();
        assert!(err.contains("SHARDKIT_API_KEY"), "{err}");
        let keyed = Overrides {
            api_key: Some("0123456789abcdef".into()),
            ..open
        };
        let s = Settings::load(None, keyed).unwrap();
        assert!(s.to_toml_redacted().unwrap().contains("<redacted>"));
    }

    #[test]
    fn regions_load_from_the_file_refuse_unknown_keys_and_hide_the_peer_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shardkit.toml");
        let regions =
            "[regions]\nthis = \"us\"\ndefault = \"us\"\npeer_key = \"0123456789abcdef\"\n\
                       [regions.peers]\ncn = \"http://10.0.0.2:8080\"\n\
                       [regions.groups]\nus = \"0-U\"\ncn = \"V-z\"\n";
        std::fs::write(&file, regions).unwrap();
        let s = Settings::load(Some(&file), Overrides::default()).unwrap();
        let r = s.regions.as_ref().unwrap();
        assert_eq!((r.remote_ttl_ms, r.peer_timeout_ms), (30_000, 1_000));
        let shown = s.to_toml_redacted().unwrap();
        assert!(
            !shown.contains("0123456789abcdef") && shown.contains("<redacted>"),
            "{shown}"
        );
        std::fs::write(
            &file,
            regions.replacen("[regions]\n", "[regions]\nttl = 5\n", 1),
        )
        .unwrap();
        let err = Settings::load(Some(&file), Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown field") && err.contains("ttl"),
            "{err}"
        );
        assert!(Settings::default()
            .to_toml_redacted()
            .unwrap()
            .find("regions")
            .is_none());
    }

    /// A redirect cache past what memory can hold is a clear error at start, not an
    /// abort when its filter is allocated (100,000,000,000 asked for 128 GiB).
    #[test]
    fn the_redirect_cache_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shardkit.toml");
        std::fs::write(&file, "[links]\ncache_entries = 100000000000\n").unwrap();
        let err = Settings::load(Some(&file), Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("links.cache_entries must be 0 to 100000000"),
            "{err}"
        );
        std::fs::write(&file, "[links]\ncache_entries = 0\n").unwrap();
        assert_eq!(
            Settings::load(Some(&file), Overrides::default())
                .unwrap()
                .links
                .cache_entries,
            0
        );
    }

    #[test]
    fn the_link_store_memory_is_bounded_and_in_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shardkit.toml");
        std::fs::write(&file, "[links]\nmemory_mib = 4\n").unwrap();
        let err = Settings::load(Some(&file), Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("links.memory_mib must be 16 to"), "{err}");
        std::fs::write(&file, "[links]\nmemory_mib = 64\n").unwrap();
        let s = Settings::load(Some(&file), Overrides::default()).unwrap();
        assert_eq!(s.links.store_cache_bytes(), 64 << 20);
        assert_eq!(LinkSettings::default().memory_mib, 256);
    }
}

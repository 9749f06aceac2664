//! Server settings: defaults, then a TOML file, then `SHARDKIT_*` environment
//! variables, then command-line flags, each overriding the one before.
//! `shardkit serve --print-config` shows the result.
//!
//! [`Settings`] only collects the sections: each section's type, defaults and checks
//! live beside the subsystem that reads it (`[counters]` in `counters::settings`,
//! `[links]` in the link service, `[nats]` in `nats_settings`, …). What is left here
//! is the top-level keys, the order of the sources, and the checks that span sections.

pub use crate::api_keys::AccessSettings;
pub use crate::counters::settings::{CounterLog, CounterRole, CounterSettings, Fsync};
pub use crate::http_settings::HttpSettings;
pub use crate::id_settings::IdSettings;
pub use crate::nats_settings::NatsSettings;
pub use crate::resp_limits::RespLimitSettings;
pub use crate::resp_settings::RespSettings;
pub use crate::ticket_settings::TicketSettings;
use serde::{Deserialize, Serialize};
pub use shardkit_link_service::settings::{LinkSettings, LinkStoreKind};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, documented::DocumentedFields)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Data directory (time guard, tickets, counters, links).
    pub data: PathBuf,
    /// HTTP listen address (`http = "ip:port"`), or `[http]` with `listen` and the
    /// proxies whose forwarding headers are believed (`trusted_proxies`).
    pub http: HttpSettings,
    /// Redis-protocol listen address (`resp = "ip:port"`), or `[resp]` with `listen`
    /// and a TLS port (`tls`, `tls_cert`, `tls_key`, `tls_ca`).
    pub resp: RespSettings,
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
impl Default for Settings {
    fn default() -> Self {
        Self {
            data: PathBuf::from("./shardkit-data"),
            http: HttpSettings::default(),
            resp: RespSettings::default(),
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
            settings.http.listen = v;
        }
        if let Some(v) = overrides.resp {
            settings.resp.listen = Some(v);
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
        if self.counters.log == CounterLog::Jetstream {
            crate::announce::check_reachable(
                "counters.announce",
                self.counters.announce.as_deref(),
                self.resp.addr(),
                self.http.listen,
            )?;
        }
        if self.cluster.enabled {
            crate::announce::check_reachable(
                "cluster.announce",
                self.cluster.announce.as_deref(),
                self.resp.addr(),
                self.http.listen,
            )?;
        }
        self.http.check()?;
        self.resp.check()?;
        let mut listening = vec![("http", self.http.listen)];
        listening.extend(self.resp.listening());
        let exposed: Vec<String> = listening
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
        self.counters.check()?;
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
        self.ids.check()?;
        if self.links.store == LinkStoreKind::Postgres && !cfg!(feature = "sql") {
            anyhow::bail!(
                "links.store \"postgres\" needs a shardkit built with the cargo feature `sql`"
            )
        }
        self.links.check()
    }

    /// The settings as TOML with the API key hidden, for `--print-config`.
    pub fn to_toml_redacted(&self) -> anyhow::Result<String> {
        let mut shown = self.clone();
        if shown.api_key.is_some() {
            shown.api_key = Some("<set>".into());
        }
        if let Some(regions) = shown.regions.as_mut().filter(|r| r.peer_key.is_some()) {
            regions.peer_key = Some("<set>".into());
        }
        shown.nats = shown.nats.redacted();
        for hook in &mut shown.links.webhooks {
            hook.secret = "<set>".into();
        }
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
    use std::time::Duration;

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
        assert_eq!(s.resp.listen, Some("127.0.0.1:7001".parse().unwrap()));
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
        assert!(s.to_toml_redacted().unwrap().contains("<set>"));
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
            !shown.contains("0123456789abcdef") && shown.contains("<set>"),
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

//! `shardkit serve`: settings from file, environment and flags; logs; the server.

use anyhow::Context;
use clap::Args;
use shardkit::server::Stopped;
use shardkit_node::config::{
    CounterLog, CounterRole, LinkStoreKind, LogFormat, Overrides, Settings,
};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Flags of `shardkit serve` (DESIGN.md's contract). Each overrides the environment
/// variable named beside it, which overrides the config file, which overrides the default.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Data directory [default: ./shardkit-data].
    #[arg(long, env = "SHARDKIT_DATA", value_name = "DIR")]
    data: Option<PathBuf>,
    /// HTTP listen address [default: 127.0.0.1:8080].
    #[arg(long, env = "SHARDKIT_HTTP", value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Redis-protocol listen address [default: 127.0.0.1:6380].
    #[arg(long, env = "SHARDKIT_RESP", value_name = "ADDR")]
    resp: Option<SocketAddr>,
    /// TOML settings file.
    #[arg(long, env = "SHARDKIT_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Log format.
    #[arg(long, env = "SHARDKIT_LOG_FORMAT", value_enum)]
    log_format: Option<LogFormat>,
    /// Where links live: `redb` (embedded, the default) or `postgres` (feature `sql`).
    #[arg(long, env = "SHARDKIT_STORE", value_enum)]
    store: Option<LinkStoreKind>,
    /// PostgreSQL servers of the cluster (`shardkit pg init`), comma-separated, for `--store postgres`.
    #[arg(
        long,
        env = "SHARDKIT_PG_SERVERS",
        value_delimiter = ',',
        value_name = "URL[,URL...]"
    )]
    servers: Option<Vec<String>>,
    /// The counters' log of record: `local` (default) or `jetstream` (feature `nats`).
    #[arg(long, env = "SHARDKIT_COUNTERS_LOG", value_enum)]
    counters_log: Option<CounterLog>,
    /// Name of the counter store on NATS (stream and lease names derive from it).
    #[arg(long, env = "SHARDKIT_COUNTERS_STORE", value_name = "NAME")]
    counters_store: Option<String>,
    /// `auto` (lead when the lease is free) or `replica` (never lead).
    #[arg(long, env = "SHARDKIT_COUNTERS_ROLE", value_enum)]
    counters_role: Option<CounterRole>,
    /// The leader's lease, ms [default: 3000].
    #[arg(long, env = "SHARDKIT_COUNTERS_LEASE_MS", value_name = "MS")]
    counters_lease_ms: Option<u64>,
    /// Copies JetStream keeps of the stream and lease [default: 1].
    #[arg(long, env = "SHARDKIT_COUNTERS_STREAM_REPLICAS", value_name = "N")]
    counters_stream_replicas: Option<usize>,
    /// Snapshots kept in the store's object store [default: 2].
    #[arg(long, env = "SHARDKIT_COUNTERS_SNAPSHOTS_KEPT", value_name = "N")]
    counters_snapshots_kept: Option<usize>,
    /// The address clients reach this node at, `host:port` (replication mode; required
    /// when listening on 0.0.0.0).
    #[arg(long, env = "SHARDKIT_COUNTERS_ANNOUNCE", value_name = "HOST:PORT")]
    counters_announce: Option<String>,
    /// NATS server URL(s), comma-separated, for `--counters-log jetstream` [default:
    /// nats://127.0.0.1:4222]. Credentials: `SHARDKIT_NATS_CREDS`, `SHARDKIT_NATS_USER`
    /// with `SHARDKIT_NATS_PASSWORD`, `SHARDKIT_NATS_TOKEN`, or `[nats]` in the config.
    #[arg(long, env = "SHARDKIT_NATS_URL", value_name = "URL")]
    nats_url: Option<String>,
    /// Print the settings in effect (API key hidden) and exit.
    #[arg(long)]
    print_config: bool,
    /// With --print-config: every key, unset ones too, each with what it does and the
    /// flag and environment variable that set it (docs/config.md is this output).
    #[arg(long, requires = "print_config")]
    all: bool,
}

/// Loads the settings and runs the server until SIGINT/SIGTERM.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let overrides = Overrides {
        data: args.data,
        http: args.http,
        resp: args.resp,
        api_key: std::env::var("SHARDKIT_API_KEY").ok(),
        log_format: args.log_format,
        store: args.store,
        servers: args.servers,
        counters_log: args.counters_log,
        counters_store: args.counters_store,
        counters_role: args.counters_role,
        counters_lease_ms: args.counters_lease_ms,
        counters_stream_replicas: args.counters_stream_replicas,
        counters_snapshots_kept: args.counters_snapshots_kept,
        counters_announce: args.counters_announce,
        nats_url: args.nats_url,
        ..Overrides::default()
    }
    .with_nats_env();
    let settings = Settings::load(args.config.as_deref(), overrides)?;
    // A typo in a setting only a frontend reads must stop the start too.
    shardkit::server::check_frontend_settings(&settings)?;
    if args.print_config {
        if args.all {
            print!(
                "{}",
                shardkit_node::settings_reference::annotated(&settings)?
            );
        } else {
            print!("{}", settings.to_toml_redacted()?);
        }
        return Ok(());
    }
    init_logging(settings.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(shardkit::server::run(settings));
    // Dropping a runtime waits, without limit, for every blocking task still running.
    // Everything durable is closed (or left safe) before `run` returns, so a blocking
    // task still running then (a request cut off by the drain timeout) must not hold
    // the exit.
    runtime.shutdown_timeout(EXIT_GRACE);
    match result? {
        Stopped::Signal => Ok(()),
        Stopped::Restart { request, listeners } => {
            let error = shardkit_node::restart_in_place::exec(request, listeners);
            // Still here: the new image could not start. Exit with the status a
            // supervisor restarts on.
            tracing::error!(error = %error, code = request.code, "cannot restart in place; exiting for a supervisor");
            std::process::exit(request.code)
        }
    }
}

/// How long the exit waits for blocking tasks still running after "stopped".
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SHARDKIT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

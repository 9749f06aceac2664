//! `INFO [section …]` and `CONFIG GET|SET|RESETSTAT`: what is really in effect and
//! what the server is doing, in Redis 7's field names where Redis has the figure, so
//! dashboards and client libraries that read them find them.
//!
//! Figures Redis has and shardkit does not (per-client buffers, allocator
//! fragmentation, keyspace hits) are left out rather than answered with a made-up
//! number; shardkit's own figures (ids, counters) get their own sections.

use super::clients::Clients;
use super::table::{Call, CommandSpec};
use parking_lot::Mutex;
use shardkit_node::state::AppState;
use shardkit_resp::glob;
use shardkit_resp::reply;
use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// `INFO` and `CONFIG`'s entries of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "info",
        arity: -1,
        flags: &["loading", "stale"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@slow", "@dangerous"],
        group: "server",
        summary: "Server, clients, memory, persistence, stats, replication, cpu, ids, counters and keyspace figures",
        run: info,
    },
    CommandSpec {
        name: "config",
        arity: -2,
        flags: &[],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@slow"],
        group: "server",
        summary: "CONFIG GET parameter [parameter ...] (the settings in effect); CONFIG RESETSTAT",
        run: config,
    },
];

/// Sections `INFO` (and `INFO default`/`all`/`everything`) answers, in order.
const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "ids",
    "counters",
    "keyspace",
];

fn info(call: &mut Call<'_, '_>) {
    let mut wanted: Vec<String> = call
        .cmd
        .args()
        .skip(1)
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    if wanted.is_empty()
        || wanted
            .iter()
            .any(|w| matches!(w.as_str(), "default" | "all" | "everything"))
    {
        wanted = SECTIONS.iter().map(|s| s.to_string()).collect();
    }
    let text = info_text(call.state, &call.session.clients, &wanted);
    reply::verbatim(call.out, text.as_bytes(), call.session.resp3);
}

/// The `INFO` text of the `wanted` sections (unknown names are skipped, as in Redis).
pub fn info_text(state: &AppState, clients: &Clients, wanted: &[String]) -> String {
    let stats = state.counter_stats();
    let mut text = String::with_capacity(2048);
    for section in SECTIONS.iter().filter(|s| wanted.iter().any(|w| w == *s)) {
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        match *section {
            "server" => server(state, &mut text),
            "clients" => {
                let _ = write!(
                    text,
                    "# Clients\r\nconnected_clients:{}\r\nblocked_clients:0\r\ntracking_clients:0\r\n",
                    clients.len()
                );
            }
            "memory" => memory(&stats, &mut text),
            "persistence" => persistence(&stats, &mut text),
            "stats" => {
                let _ = write!(
                    text,
                    "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_error_replies:{}\r\n",
                    clients.accepted(),
                    shardkit_node::telemetry::RESP_COMMANDS.load(Ordering::Relaxed),
                    ops_per_sec(),
                    shardkit_node::telemetry::RESP_ERRORS.load(Ordering::Relaxed),
                );
            }
            "replication" => text.push_str(&shardkit_node::replication::gate::info_section(
                &state.replication,
            )),
            "cpu" => cpu(&mut text),
            "ids" => {
                let _ = write!(text, "# Ids\r\nlayout:{}\r\n", state.layout);
            }
            "counters" => {
                text.push_str("# Counters\r\n");
                for c in &stats.counters {
                    let _ = write!(
                        text,
                        "counter_{}:rows={},columns={},bytes={},bytes_per_row={:.2},overflow={},hot_rows={},cold_rows={},bytes_ram={},bytes_disk={},block_cache_hits={},cold_reads={}\r\n",
                        c.name, c.rows, c.columns, c.bytes, c.bytes_per_row, c.overflow_entries,
                        c.hot_rows, c.cold_rows, c.bytes, c.bytes_disk, c.block_cache_hits, c.cold_reads
                    );
                }
            }
            "keyspace" => {
                text.push_str("# Keyspace\r\n");
                let rows: u64 = stats.counters.iter().map(|c| c.rows).sum();
                if rows > 0 {
                    let _ = write!(text, "db0:keys={rows},expires=0,avg_ttl=0\r\n");
                }
            }
            _ => {}
        }
    }
    text
}

fn server(state: &AppState, text: &mut String) {
    let uptime = state.started.elapsed().as_secs();
    let os = ["/proc/sys/kernel/ostype", "/proc/sys/kernel/osrelease"]
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .join(" ");
    let _ = write!(
        text,
        "# Server\r\nredis_version:7.2.0\r\nshardkit_version:{}\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:{}\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nexecutable:{}\r\n",
        env!("CARGO_PKG_VERSION"),
        os.trim(),
        std::env::consts::ARCH,
        usize::BITS,
        std::process::id(),
        state.settings.resp.listen.map_or(0, |a| a.port()),
        uptime / 86_400,
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
}

fn memory(stats: &shardkit_counters::Stats, text: &mut String) {
    let rss = proc_status_kib("VmRSS:") * 1024;
    let peak = proc_status_kib("VmHWM:") * 1024;
    let dataset: u64 = stats.counters.iter().map(|c| c.bytes).sum();
    let rows: u64 = stats.counters.iter().map(|c| c.rows).sum();
    let per_row = if rows == 0 {
        0.0
    } else {
        dataset as f64 / rows as f64
    };
    // shardkit does not wrap its allocator to count allocations, so `used_memory` is
    // the resident set (what the machine really gives the process).
    let _ = write!(
        text,
        "# Memory\r\nused_memory:{rss}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_peak:{peak}\r\nused_memory_dataset:{dataset}\r\ncounter_rows:{rows}\r\ncounter_bytes_per_row:{per_row:.2}\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n",
        human_bytes(rss),
    );
}

fn persistence(stats: &shardkit_counters::Stats, text: &mut String) {
    let status = if stats.last_background_error.is_some() {
        "err"
    } else {
        "ok"
    };
    let _ = write!(
        text,
        "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{status}\r\nrdb_saves:{}\r\nlog_bytes_since_snapshot:{}\r\naof_enabled:1\r\naof_rewrite_in_progress:0\r\naof_last_write_status:{status}\r\naof_fsync:{}\r\naof_last_fsync_time:{}\r\nlog_next_lsn:{}\r\n",
        stats.last_snapshot_unix_ms / 1000,
        stats.snapshots_written,
        stats.log_bytes_since_snapshot,
        appendfsync(stats.fsync),
        stats.last_fsync_unix_ms / 1000,
        stats.next_lsn,
    );
    if let Some(e) = &stats.last_background_error {
        let _ = write!(
            text,
            "last_background_error:{}\r\n",
            e.replace(['\r', '\n'], " ")
        );
    }
}

fn cpu(text: &mut String) {
    // utime and stime are fields 14 and 15 of /proc/self/stat, in clock ticks (USER_HZ,
    // 100 on Linux); the command name (field 2) may hold spaces, so count after its `)`.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let _ = write!(
        text,
        "# CPU\r\nused_cpu_sys:{:.6}\r\nused_cpu_user:{:.6}\r\n",
        ticks(12) as f64 / 100.0,
        ticks(11) as f64 / 100.0
    );
}

fn proc_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn human_bytes(bytes: u64) -> String {
    let mut value = bytes as f64;
    for unit in ["B", "K", "M", "G"] {
        if value < 1024.0 {
            return format!("{value:.2}{unit}");
        }
        value /= 1024.0;
    }
    format!("{value:.2}T")
}

/// Redis's `appendfsync` word for the counter log's fsync policy.
fn appendfsync(policy: shardkit_counters::FsyncPolicy) -> &'static str {
    match policy {
        shardkit_counters::FsyncPolicy::Always => "always",
        shardkit_counters::FsyncPolicy::EverySec => "everysec",
        shardkit_counters::FsyncPolicy::No => "no",
    }
}

/// Samples of (when, commands answered so far), one every 100 ms, the last 16 kept.
static OPS_SAMPLES: Mutex<VecDeque<(Instant, u64)>> = Mutex::new(VecDeque::new());

/// Records one sample of the command total; the server calls it every 100 ms.
pub fn sample_ops() {
    let mut samples = OPS_SAMPLES.lock();
    if samples.len() == 16 {
        samples.pop_front();
    }
    samples.push_back((
        Instant::now(),
        shardkit_node::telemetry::RESP_COMMANDS.load(Ordering::Relaxed),
    ));
}

/// How often [`sample_ops`] should run.
pub const OPS_SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// Commands per second over the sampled window (up to the last 1.6 s, as Redis).
fn ops_per_sec() -> u64 {
    let samples = OPS_SAMPLES.lock();
    match (samples.front(), samples.back()) {
        (Some(&(t0, n0)), Some(&(t1, n1))) if t1 > t0 => {
            ((n1 - n0) as f64 / (t1 - t0).as_secs_f64()).round() as u64
        }
        _ => 0,
    }
}

fn config(call: &mut Call<'_, '_>) {
    let sub = String::from_utf8_lossy(call.cmd.arg(1).unwrap_or_default()).to_ascii_lowercase();
    let resp3 = call.session.resp3;
    match sub.as_str() {
        "get" if call.cmd.len() >= 3 => {
            let params = parameters(call.state);
            let mut found: Vec<&(&str, String)> = Vec::new();
            for pattern in call.cmd.args().skip(2) {
                for p in &params {
                    if glob::matches(pattern, p.0.as_bytes(), true)
                        && !found.iter().any(|f| f.0 == p.0)
                    {
                        found.push(p);
                    }
                }
            }
            reply::map_header(call.out, found.len(), resp3);
            for (name, value) in found {
                reply::bulk(call.out, name.as_bytes());
                reply::bulk(call.out, value.as_bytes());
            }
        }
        "resetstat" if call.cmd.len() == 2 => {
            shardkit_node::telemetry::RESP_COMMANDS.store(0, Ordering::Relaxed);
            shardkit_node::telemetry::RESP_ERRORS.store(0, Ordering::Relaxed);
            OPS_SAMPLES.lock().clear();
            reply::simple(call.out, "OK");
        }
        "set" => reply::error(
            call.out,
            "ERR CONFIG SET is not supported: shardkit's settings come from its config file and flags (docs/design.md, settings)",
        ),
        "get" | "resetstat" => reply::error(
            call.out,
            &format!("ERR wrong number of arguments for 'config|{sub}' command"),
        ),
        _ => reply::error(
            call.out,
            &format!(
                "ERR unknown subcommand '{}'. Try CONFIG HELP.",
                String::from_utf8_lossy(call.cmd.arg(1).unwrap_or_default())
            ),
        ),
    }
}

/// The parameters `CONFIG GET` knows, with the values in effect.
fn parameters(state: &AppState) -> Vec<(&'static str, String)> {
    let s = &state.settings;
    let fsync = appendfsync(state.counters.engine.stats().fsync);
    vec![
        // The counter log is always on; `appendfsync` is its fsync policy.
        ("appendonly", "yes".into()),
        ("appendfsync", fsync.into()),
        // Timed snapshots are `save <seconds> 1`; the log-size trigger has no Redis
        // spelling and is its own parameter.
        (
            "save",
            match s.counters.snapshot_seconds {
                0 => String::new(),
                secs => format!("{secs} 1"),
            },
        ),
        (
            "snapshot-log-mib",
            s.counters.snapshot_log_mib.max(1).to_string(),
        ),
        // Redis's spelling of the growth trigger (percent of the last rewrite's size).
        (
            "auto-aof-rewrite-percentage",
            s.counters.snapshot_growth_percent.to_string(),
        ),
        ("databases", "1".into()),
        ("maxmemory", "0".into()),
        ("maxmemory-policy", "noeviction".into()),
        ("port", s.resp.listen.map_or(0, |a| a.port()).to_string()),
        ("tls-port", s.resp.tls.map_or(0, |a| a.port()).to_string()),
        ("bind", s.resp.addr().ip().to_string()),
        ("dir", s.data.join("counters").display().to_string()),
        ("timeout", "0".into()),
    ]
}

//! The counters' cold tier through the real server: `[counters] cold_after`
//! moves idle partitions to disk, RESP reads and writes them, `COUNTER.INFO`, `INFO` and
//! `/metrics` show them, a restart keeps them; bad settings stop the start with a clear
//! message.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::{info_field, Server};

/// 400 ids sharing their high 32 bits (one dense partition), plus 400 of another.
fn ids() -> Vec<u64> {
    let mut v = Vec::new();
    for high in [0x0100_0001u64, 0x0100_0002] {
        v.extend((0..400u64).map(|i| (high << 32) | (i * 7)));
    }
    v
}

fn counter_info(con: &mut redis::Connection) -> Vec<redis::Value> {
    redis::cmd("COUNTER.INFO").arg("cold").query(con).unwrap()
}

/// A server's data directory and config file on loopback ports, to start (and start
/// again after a restart).
struct Node {
    data: std::path::PathBuf,
    config: String,
}

impl Node {
    /// Writes `toml` as the config file in `dir`.
    fn new(dir: &std::path::Path, toml: &str) -> Node {
        let config = dir.join("shardkit.toml");
        std::fs::write(&config, toml).unwrap();
        Node {
            data: dir.join("data"),
            config: config.to_string_lossy().into_owned(),
        }
    }

    fn start(&self) -> Server {
        let args = [
            "--http",
            "127.0.0.1:0",
            "--resp",
            "127.0.0.1:0",
            "--config",
            &self.config,
        ];
        Server::try_start(&self.data, &args, &[]).unwrap()
    }
}

#[test]
fn idle_partitions_go_cold_and_are_read_written_and_kept_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::new(
        dir.path(),
        "[counters]\ncold_after = \"1s\"\nblock_cache = \"8MiB\"\n",
    );
    let server = node.start();
    let mut con = server.redis();
    let mut want = HashMap::new();
    let mut pipe = redis::pipe();
    for (n, id) in ids().into_iter().enumerate() {
        let by = (n % 300 + 1) as i64 * 3; // some past 255, none past 16 bits
        pipe.cmd("INCRBY")
            .arg(format!("cold:{id}"))
            .arg(by)
            .ignore();
        want.insert(id, by);
    }
    pipe.query::<()>(&mut con).unwrap();

    // The eviction pass runs every 250 ms with cold_after = 1s: wait (bounded) for it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_field(&counter_info(&mut con), "cold_rows") < 800 {
        assert!(Instant::now() < deadline, "{:?}", counter_info(&mut con));
        std::thread::sleep(Duration::from_millis(100));
    }
    let info = counter_info(&mut con);
    assert_eq!(info_field(&info, "rows"), 800);
    assert_eq!(info_field(&info, "hot_rows"), 0);
    assert!(info_field(&info, "bytes_disk") > 0);
    assert_eq!(info_field(&info, "bytes_ram"), info_field(&info, "bytes"));

    for (id, by) in want.iter().take(50) {
        let v: i64 = redis::cmd("GET")
            .arg(format!("cold:{id}"))
            .query(&mut con)
            .unwrap();
        assert_eq!(v, *by, "id {id}");
    }
    // An absent row of an existing counter reads 0 (README, "Zero and absence").
    let absent: Option<i64> = redis::cmd("GET")
        .arg(format!("cold:{}", (0x0100_0001u64 << 32) | 1))
        .query(&mut con)
        .unwrap();
    assert_eq!(absent, Some(0));
    let info = counter_info(&mut con);
    assert!(info_field(&info, "cold_reads") > 0);
    assert!(info_field(&info, "block_cache_hits") > 0);

    // A write to a cold row brings its partition back.
    let id = (0x0100_0002u64 << 32) | 7;
    let v: i64 = redis::cmd("INCRBY")
        .arg(format!("cold:{id}"))
        .arg(10)
        .query(&mut con)
        .unwrap();
    assert_eq!(v, want[&id] + 10);
    *want.get_mut(&id).unwrap() += 10;
    assert!(info_field(&counter_info(&mut con), "hot_rows") >= 400);

    let text: String = redis::cmd("INFO").arg("counters").query(&mut con).unwrap();
    assert!(text.contains("counter_cold:rows=800,"), "{text}");
    assert!(text.contains(",cold_rows="), "{text}");
    let metrics = reqwest::blocking::get(server.url("/metrics"))
        .unwrap()
        .text()
        .unwrap();
    for name in [
        "shardkit_counter_hot_rows{counter=\"cold\"}",
        "shardkit_counter_cold_rows{counter=\"cold\"}",
        "shardkit_counter_bytes_ram{counter=\"cold\"}",
        "shardkit_counter_bytes_disk{counter=\"cold\"}",
        "shardkit_counter_block_cache_hits_total{counter=\"cold\"}",
        "shardkit_counter_cold_reads_total{counter=\"cold\"}",
    ] {
        assert!(metrics.contains(name), "{name} missing from /metrics");
    }

    assert!(server.terminate().success());
    let server = node.start();
    let mut con = server.redis();
    for (id, by) in &want {
        let v: i64 = redis::cmd("GET")
            .arg(format!("cold:{id}"))
            .query(&mut con)
            .unwrap();
        assert_eq!(v, *by, "id {id} after the restart");
    }
    assert_eq!(info_field(&counter_info(&mut con), "rows"), 800);
}

#[test]
fn bad_cold_tier_settings_stop_the_start_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    for (text, says) in [
        ("[counters]\nmax_memory = \"2\"\n", "counters.max_memory"),
        ("[counters]\ncold_after = \"soon\"\n", "counters.cold_after"),
    ] {
        let err = Server::refused_with_config(dir.path(), text);
        assert!(err.contains(says), "{text}: {err}");
    }
}

/// `[counters] snapshots_kept` bounds the snapshots in the data directory (each clean
/// stop writes one): 1 keeps only the newest, the default 2 the one before as well, and
/// nothing written is lost either way.
#[test]
fn snapshots_kept_bounds_the_snapshots_in_the_data_directory() {
    for (toml, kept) in [("[counters]\nsnapshots_kept = 1\n", 1), ("", 2)] {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::new(dir.path(), toml);
        for round in 1..=3i64 {
            let server = node.start();
            let mut con = server.redis();
            let v: i64 = redis::cmd("INCR").arg("kept:7").query(&mut con).unwrap();
            assert_eq!(v, round, "{toml:?}");
            assert!(server.terminate().success());
        }
        let snaps: Vec<String> = std::fs::read_dir(node.data.join("counters"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("snap-") && n.ends_with(".snap"))
            .collect();
        assert_eq!(snaps.len(), kept, "{toml:?}: {snaps:?}");
        let server = node.start();
        let v: i64 = redis::cmd("GET")
            .arg("kept:7")
            .query(&mut server.redis())
            .unwrap();
        assert_eq!(v, 3, "{toml:?}");
    }
}

/// String-keyed rows go cold one by one (not by partition): written once, they are on
/// disk one to two `cold_after` later, read back through RESP, brought back by a write,
/// and kept across a restart.
#[test]
fn idle_string_keyed_rows_go_cold_and_are_read_written_and_kept_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::new(dir.path(), "[counters]\ncold_after = \"1s\"\n");
    let server = node.start();
    let mut con = server.redis();
    let key = |i: usize| format!("cold:user-{i:04}@example.com");
    let mut want: HashMap<String, i64> = HashMap::new();
    let mut pipe = redis::pipe();
    for i in 0..300 {
        let by = (i % 70 + 1) as i64 * 1000; // past 16 bits for some
        pipe.cmd("INCRBY").arg(key(i)).arg(by).ignore();
        want.insert(key(i), by);
    }
    pipe.query::<()>(&mut con).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_field(&counter_info(&mut con), "cold_rows") < 300 {
        assert!(Instant::now() < deadline, "{:?}", counter_info(&mut con));
        std::thread::sleep(Duration::from_millis(100));
    }
    let info = counter_info(&mut con);
    assert_eq!(info_field(&info, "rows"), 300);
    assert_eq!(info_field(&info, "hot_rows"), 0);
    assert!(info_field(&info, "bytes_disk") > 0);
    for (k, by) in &want {
        let v: i64 = redis::cmd("GET").arg(k).query(&mut con).unwrap();
        assert_eq!(v, *by, "{k}");
    }
    assert!(info_field(&counter_info(&mut con), "cold_reads") > 0);
    let v: i64 = redis::cmd("INCRBY")
        .arg(key(7))
        .arg(5)
        .query(&mut con)
        .unwrap();
    assert_eq!(v, want[&key(7)] + 5);
    *want.get_mut(&key(7)).unwrap() += 5;
    let info = counter_info(&mut con);
    assert_eq!(info_field(&info, "rows"), 300);
    assert!(info_field(&info, "hot_rows") >= 1);
    let gone: i64 = redis::cmd("DEL").arg(key(8)).query(&mut con).unwrap();
    assert_eq!(gone, 1);
    want.remove(&key(8));
    assert!(server.terminate().success());
    let server = node.start();
    let mut con = server.redis();
    for (k, by) in &want {
        let v: i64 = redis::cmd("GET").arg(k).query(&mut con).unwrap();
        assert_eq!(v, *by, "{k} after the restart");
    }
    let absent: i64 = redis::cmd("EXISTS").arg(key(8)).query(&mut con).unwrap();
    assert_eq!(absent, 0);
    assert_eq!(info_field(&counter_info(&mut con), "rows"), 299);
}

//! Power cuts under the whole server: `shardkit serve` keeps its data directory on a
//! LazyFS mount while threads write counters, short links, tickets, ids and API keys;
//! at a random moment the server (and a `keys add` in flight) is SIGKILLed and every byte
//! not yet fsynced is dropped, as a power cut does. The server then starts again on what
//! a disk would still hold, and each file is checked against what the docs promise:
//!
//! - counters (`fsync = "always"`): every acknowledged increment is there, none above
//!   what was tried; the snapshots (forced every second) and log reopen, and recovery
//!   sets aside at most a log tail;
//! - short links: every link whose create answered 201 redirects to its URL, and no code
//!   is minted again afterwards;
//! - tickets and ids: nothing acknowledged before the cut is issued again (tickets from
//!   `tickets.redb`, ids above the `ids.guard` mark);
//! - API keys made by `shardkit keys add` still authenticate;
//! - `regions.json` (`[regions]`) reopens and names this region.
//!
//! A SIGKILL alone leaves the page cache to be written out; here only fsynced bytes
//! survive. Without `SHARDKIT_LAZYFS` (path to a LazyFS executable) the test skips.

mod common;
#[path = "../../counters/tests/common/lazyfs.rs"]
mod lazyfs;

use common::Server;
use lazyfs::LazyFs;
use redis::Value;
use serde_json::{json, Value as Json};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Cuts, all on one data directory: each restart starts from what the last one kept.
const ROUNDS: u64 = 8;
/// The admin key: with named keys in `keys.json` every request needs one.
const ADMIN: &str = "power-loss-admin-0123456789";
/// How long any request may take before a worker gives up on it.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Rows the counter workers write: numeric ids and a few string keys, whose rows take
/// another path through the table and the snapshot.
const ROWS: u64 = 40;
/// The ids worker's shards: one over RESP, one over HTTP.
const ID_SHARDS: [u64; 2] = [77, 3];
/// The default id layout (Instagram): 41 bits of ms since 2024-01-01, then 23 bits of
/// shard and sequence; used only to report how far ids ran ahead of the clock.
const ID_EPOCH_UNIX_MS: u64 = 1_704_067_200_000;
const ID_TIME_SHIFT: u32 = 23;

/// Default settings but snapshots: every second and every MiB of log, so cuts land
/// before, during and after snapshots and rotations. `[regions]` with no peers, so the
/// start writes `regions.json`.
const CONFIG: &str = "[counters]\nsnapshot_seconds = 1\nsnapshot_log_mib = 1\n\
                      snapshot_growth_percent = 0\n\
                      [regions]\nthis = \"us\"\ndefault = \"us\"\n\
                      [regions.groups]\nus = \"0-z\"\n";

/// Row `i` of counter `pl` as a RESP key's row part.
fn row_of(i: u64) -> String {
    if i % 5 == 4 {
        format!("page{i}")
    } else {
        i.to_string()
    }
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Signals shared by the workers of one round.
#[derive(Default)]
struct Signals {
    /// Set just before the SIGKILL: a failed request after it is the cut, before it a bug.
    killing: AtomicBool,
    /// Set after the SIGKILL: workers still looping stop.
    stop: AtomicBool,
}

/// What one worker saw acknowledged (and tried) in one round.
#[derive(Default)]
struct Seen {
    /// (row, column) → (acknowledged, tried) sum of deltas.
    counters: HashMap<(String, String), (u64, u64)>,
    /// Increments acknowledged (commands, not their deltas).
    increments: u64,
    /// (code, URL) of every create answered 201.
    links: Vec<(String, String)>,
    /// (sequence, ticket) of every ticket handed out.
    tickets: Vec<(String, u64)>,
    /// (shard, id) of every id handed out.
    ids: Vec<(u64, u64)>,
    /// (name, secret) of every `keys add` that succeeded.
    keys: Vec<(String, String)>,
    /// Link creates refused by the per-address rate limit (429): not acknowledged.
    refused: u64,
    /// Anything the server should not have answered while it was up.
    errors: Vec<String>,
}

impl Seen {
    /// Records a request that failed: expected once the kill started, a bug before.
    fn failed(&mut self, signals: &Signals, what: String) {
        if !signals.killing.load(Ordering::Acquire) {
            self.errors.push(what);
        }
    }
}

/// Everything acknowledged so far, across cuts: what the restarted server must keep.
#[derive(Default)]
struct Model {
    counters: HashMap<(String, String), (u64, u64)>,
    links: HashMap<String, String>,
    /// Sequence → highest ticket handed out; every ticket ever seen, to catch a repeat.
    ticket_max: HashMap<String, u64>,
    tickets: HashSet<(String, u64)>,
    /// Shard → highest id handed out: ids of one shard only grow.
    id_max: HashMap<u64, u64>,
    keys: Vec<(String, String)>,
    acked_increments: u64,
    refused: u64,
}

impl Model {
    /// Adds what a worker saw, checking that nothing handed out repeats or goes back
    /// below what was handed out before (a restart in between included).
    fn merge(&mut self, seen: Seen, what: &str) {
        assert!(seen.errors.is_empty(), "{what}: {:?}", seen.errors);
        for (rc, (acked, tried)) in seen.counters {
            let e = self.counters.entry(rc).or_default();
            e.0 += acked;
            e.1 += tried;
        }
        for (code, url) in seen.links {
            if let Some(old) = self.links.insert(code.clone(), url.clone()) {
                panic!("{what}: code {code} minted twice: for {old} and for {url}");
            }
        }
        self.take_tickets(seen.tickets, what);
        self.take_ids(&seen.ids, false, what);
        self.keys.extend(seen.keys);
        self.refused += seen.refused;
        self.acked_increments += seen.increments;
    }

    /// Tickets handed out now must all be above every one handed out before.
    fn take_tickets(&mut self, tickets: Vec<(String, u64)>, what: &str) {
        let before = self.ticket_max.clone();
        for (seq, t) in tickets {
            let old = before.get(&seq).copied().unwrap_or(0);
            assert!(
                t > old,
                "{what}: ticket {t} of {seq} handed out, but {old} was already acknowledged"
            );
            assert!(
                self.tickets.insert((seq.clone(), t)),
                "{what}: ticket {t} of {seq} handed out twice"
            );
            let max = self.ticket_max.entry(seq).or_default();
            *max = (*max).max(t);
        }
    }

    /// The highest id handed out so far, of any shard.
    fn top_id(&self) -> u64 {
        self.id_max.values().copied().max().unwrap_or(0)
    }

    /// Ids of a shard only grow; and the first ids after a cut (`after_cut`) are above
    /// every id of every shard before it, since the restart starts at the guard's mark,
    /// which is past the time of every id handed out.
    fn take_ids(&mut self, ids: &[(u64, u64)], after_cut: bool, what: &str) {
        let top = self.top_id();
        for &(shard, id) in ids {
            let floor = self.id_max.get(&shard).copied().unwrap_or(0);
            assert!(
                id > floor,
                "{what}: id {id} of shard {shard} handed out after {floor}"
            );
            assert!(
                !after_cut || id > top,
                "{what}: id {id} handed out after the restart, but {top} was acknowledged \
                 before the cut (the time guard did not hold)"
            );
            self.id_max.insert(shard, id);
        }
    }
}

/// A RESP connection authenticated as the admin.
fn resp(addr: SocketAddr) -> redis::RedisResult<redis::Connection> {
    let client = redis::Client::open(format!("redis://{addr}/"))?;
    let mut con = client.get_connection_with_timeout(TIMEOUT)?;
    con.set_read_timeout(Some(TIMEOUT))?;
    redis::cmd("AUTH").arg(ADMIN).query::<()>(&mut con)?;
    Ok(con)
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .unwrap()
}

/// Every decimal number in a RESP reply (ids and tickets are bulk strings).
fn numbers(v: &Value, out: &mut Vec<u64>) {
    match v {
        Value::BulkString(b) => out.push(std::str::from_utf8(b).unwrap().parse().unwrap()),
        Value::Array(items) => items.iter().for_each(|i| numbers(i, out)),
        other => panic!("not a number: {other:?}"),
    }
}

/// The decimal strings of a JSON `{"ids":[…]}` answer.
fn json_ids(body: &Json) -> Vec<u64> {
    body["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids in {body}"))
        .iter()
        .map(|s| s.as_str().unwrap().parse().unwrap())
        .collect()
}

/// Pipelines of `INCR`, `HINCRBY` and `COUNTER.INCRBY` (with a txid) on counter `pl`.
fn counter_resp(addr: SocketAddr, seed: u64, tag: String, signals: &Signals) -> Seen {
    let mut seen = Seen::default();
    let mut x = seed | 1;
    let mut con = match resp(addr) {
        Ok(c) => c,
        Err(e) => {
            seen.failed(signals, format!("connect: {e}"));
            return seen;
        }
    };
    let mut n = 0u64;
    while !signals.stop.load(Ordering::Acquire) {
        let mut pipe = redis::pipe();
        let mut ops = Vec::new();
        for _ in 0..1 + xorshift(&mut x) % 32 {
            let row = row_of(xorshift(&mut x) % ROWS);
            let key = format!("pl:{row}");
            let d = 1 + xorshift(&mut x) % 5;
            n += 1;
            match xorshift(&mut x) % 3 {
                0 => {
                    pipe.cmd("INCR").arg(&key);
                    ops.push((row, "value", 1));
                }
                1 => {
                    pipe.cmd("HINCRBY").arg(&key).arg("hits").arg(d);
                    ops.push((row, "hits", d));
                }
                _ => {
                    let txid = format!("{tag}-{n}");
                    pipe.cmd("COUNTER.INCRBY")
                        .arg(&key)
                        .arg("tx")
                        .arg(d)
                        .arg(txid);
                    ops.push((row, "tx", d));
                }
            }
        }
        for (row, col, d) in &ops {
            seen.counters
                .entry((row.clone(), col.to_string()))
                .or_default()
                .1 += d;
        }
        match pipe.query::<Vec<Value>>(&mut con) {
            Ok(_) => {
                seen.increments += ops.len() as u64;
                for (row, col, d) in ops {
                    seen.counters.get_mut(&(row, col.into())).unwrap().0 += d;
                }
            }
            Err(e) => {
                seen.failed(signals, format!("pipeline: {e}"));
                break;
            }
        }
    }
    seen
}

/// `POST /api/counters/pl/{row}/incr`, column `web`: the HTTP write path.
fn counter_http(base: String, seed: u64, signals: &Signals) -> Seen {
    let mut seen = Seen::default();
    let mut x = seed | 1;
    let c = http();
    while !signals.stop.load(Ordering::Acquire) {
        let row = row_of(xorshift(&mut x) % ROWS);
        let d = 1 + xorshift(&mut x) % 3;
        let rc = (row.clone(), "web".to_string());
        seen.counters.entry(rc.clone()).or_default().1 += d;
        let r = c
            .post(format!("{base}/api/counters/pl/{row}/incr"))
            .bearer_auth(ADMIN)
            .json(&json!({ "column": "web", "by": d }))
            .send();
        match r {
            Ok(r) if r.status() == 200 => {
                seen.counters.get_mut(&rc).unwrap().0 += d;
                seen.increments += 1;
            }
            Ok(r) => seen.errors.push(format!("incr: {}", r.status())),
            Err(e) => {
                seen.failed(signals, format!("incr: {e}"));
                break;
            }
        }
    }
    seen
}

/// `POST /api/links`, a new URL each.
fn links(base: String, tag: String, signals: &Signals) -> Seen {
    let mut seen = Seen::default();
    let c = http();
    let mut i = 0;
    while !signals.stop.load(Ordering::Acquire) {
        i += 1;
        let r = c
            .post(format!("{base}/api/links"))
            .bearer_auth(ADMIN)
            .json(&json!({ "url": format!("https://example.com/pl/{tag}/{i}") }))
            .send();
        match r {
            Ok(r) if r.status() == 201 => match r.json::<Json>() {
                Ok(body) => seen.links.push((
                    body["code"].as_str().unwrap().to_string(),
                    body["url"].as_str().unwrap().to_string(),
                )),
                // The answer cut short by the kill: not acknowledged.
                Err(e) => {
                    seen.failed(signals, format!("link body: {e}"));
                    break;
                }
            },
            Ok(r) if r.status() == 429 => {
                seen.refused += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(r) => seen.errors.push(format!("create link: {}", r.status())),
            Err(e) => {
                seen.failed(signals, format!("create link: {e}"));
                break;
            }
        }
    }
    seen
}

/// `TICKET.NEXT t-resp` and `POST /api/tickets/t-http?count=3`, in turn.
fn tickets(addr: SocketAddr, base: String, signals: &Signals) -> Seen {
    let mut seen = Seen::default();
    let c = http();
    let mut con = match resp(addr) {
        Ok(c) => c,
        Err(e) => {
            seen.failed(signals, format!("connect: {e}"));
            return seen;
        }
    };
    let mut turn = 0u64;
    while !signals.stop.load(Ordering::Acquire) {
        turn += 1;
        let got = if turn.is_multiple_of(2) {
            redis::cmd("TICKET.NEXT")
                .arg("t-resp")
                .query::<Value>(&mut con)
                .map(|v| {
                    let mut n = Vec::new();
                    numbers(&v, &mut n);
                    ("t-resp", n)
                })
                .map_err(|e| e.to_string())
        } else {
            c.post(format!("{base}/api/tickets/t-http?count=3"))
                .bearer_auth(ADMIN)
                .send()
                .and_then(|r| r.error_for_status()?.json::<Json>())
                .map(|b| ("t-http", json_ids(&b)))
                .map_err(|e| e.to_string())
        };
        match got {
            Ok((seq, ts)) => seen
                .tickets
                .extend(ts.into_iter().map(|t| (seq.to_string(), t))),
            Err(e) => {
                seen.failed(signals, format!("ticket: {e}"));
                break;
            }
        }
    }
    seen
}

/// `ID.NEXT 77 100000` and `POST /api/ids?shard=3&count=1000`, in turn: big batches run
/// the ids ahead of the clock (up to `max_lead_ms`), which only the guard covers.
fn ids(addr: SocketAddr, base: String, signals: &Signals) -> Seen {
    let mut seen = Seen::default();
    let c = http();
    let mut con = match resp(addr) {
        Ok(c) => c,
        Err(e) => {
            seen.failed(signals, format!("connect: {e}"));
            return seen;
        }
    };
    let mut turn = 0u64;
    while !signals.stop.load(Ordering::Acquire) {
        turn += 1;
        let got = if turn.is_multiple_of(2) {
            redis::cmd("ID.NEXT")
                .arg(ID_SHARDS[0])
                .arg(100_000)
                .query::<Value>(&mut con)
                .map(|v| {
                    let mut n = Vec::new();
                    numbers(&v, &mut n);
                    (ID_SHARDS[0], n)
                })
                .map_err(|e| e.to_string())
        } else {
            c.post(format!("{base}/api/ids?count=1000&shard={}", ID_SHARDS[1]))
                .bearer_auth(ADMIN)
                .send()
                .and_then(|r| r.error_for_status()?.json::<Json>())
                .map(|b| (ID_SHARDS[1], json_ids(&b)))
                .map_err(|e| e.to_string())
        };
        match got {
            Ok((shard, n)) => seen.ids.extend(n.into_iter().map(|id| (shard, id))),
            Err(e) => {
                seen.failed(signals, format!("ids: {e}"));
                break;
            }
        }
    }
    seen
}

/// `shardkit keys add` now and then, beside the server (it reloads `keys.json`); a run
/// still going at the cut is SIGKILLed with it.
fn keys(data: &Path, tag: String, signals: &Signals) -> Seen {
    let mut seen = Seen::default();
    let mut i = 0;
    while !signals.stop.load(Ordering::Acquire) {
        i += 1;
        let name = format!("k-{tag}-{i}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_shardkit"))
            .args(["keys", "add", &name, "--role", "ids", "--data"])
            .arg(data)
            .env_remove("SHARDKIT_DATA")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if signals.stop.load(Ordering::Acquire) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let Some(status) = status else { break };
        let out = child.wait_with_output().unwrap();
        if status.success() {
            let secret = String::from_utf8(out.stdout).unwrap().trim().to_string();
            seen.keys.push((name, secret));
        } else {
            seen.errors.push(format!(
                "keys add {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    seen
}

/// Starts the server on `data`; `Err` with its output if it does not come up.
fn start(data: &Path, config: &Path) -> Result<Server, String> {
    Server::try_start(
        data,
        &[
            "--http",
            "127.0.0.1:0",
            "--resp",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ],
        &[("SHARDKIT_API_KEY", ADMIN)],
    )
}

/// What one restart showed, for the round's line.
struct Restart {
    /// The counters were loaded from a snapshot (and the log after it).
    from_snapshot: bool,
    /// Snapshot files in `counters/`.
    snapshots: usize,
    /// Log bytes recovery cut (the unsynced tail).
    cut_bytes: u64,
    /// How long ids were refused after the start (the guard's mark further ahead of the
    /// clock than `max_lead_ms`), and the first refusal.
    ids_refused: Duration,
    ids_error: Option<String>,
}

/// The `counters recovered` report the server logged at start: it must have set aside
/// no more than a log tail (snapshots are fsynced before they are renamed into place).
fn recovery(server: &Server, what: &str) -> (bool, u64) {
    let log = server.log.lock().unwrap();
    let line = log
        .iter()
        .find(|l| l.contains("counters recovered"))
        .unwrap_or_else(|| panic!("{what}: no `counters recovered` line in {log:?}"));
    let dropped = line
        .split_once("dropped: [")
        .map(|(_, rest)| rest.split_once("], orphan_frames").unwrap().0)
        .unwrap_or_else(|| panic!("{what}: no dropped list in {line}"));
    let mut cut = 0;
    for entry in dropped.split("Dropped {").skip(1) {
        let file = entry.split('"').nth(1).unwrap_or("");
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        assert!(
            name.starts_with("log-"),
            "{what}: recovery set aside more than a log tail: {entry}"
        );
        cut += entry
            .split("bytes: ")
            .nth(1)
            .and_then(|b| b.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|b| b.parse::<u64>().ok())
            .unwrap_or(0);
    }
    (line.contains("snapshot: Some("), cut)
}

/// Checks everything the model says must have survived, and probes tickets and ids
/// once more (they must be above everything acknowledged before the cut).
fn check(server: &Server, data: &Path, m: &mut Model, what: &str) -> Restart {
    let (from_snapshot, cut_bytes) = recovery(server, what);
    let snapshots = std::fs::read_dir(data.join("counters"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.starts_with("snap-") && name.ends_with(".snap")
        })
        .count();
    let mut con = resp(server.resp).unwrap();
    // Ids first, before the clock catches up with the guard's mark: refused while the
    // mark is further ahead of the clock than `max_lead_ms` (a crash leaves it written
    // a window ahead); then above every id acknowledged before the cut.
    let started = Instant::now();
    let mut ids_error = None;
    let first = loop {
        match redis::cmd("ID.NEXT")
            .arg(ID_SHARDS[0])
            .query::<Value>(&mut con)
        {
            Ok(v) => break v,
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains("behind the last issued id"),
                    "{what}: ID.NEXT after the restart: {e}"
                );
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "{what}: ids still refused after 10 s: {e}"
                );
                ids_error.get_or_insert(e);
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    let ids_refused = started.elapsed();
    let mut got = Vec::new();
    numbers(&first, &mut got);
    let mut got: Vec<(u64, u64)> = got.into_iter().map(|id| (ID_SHARDS[0], id)).collect();
    let c = http();
    let body: Json = c
        .post(server.url(&format!("/api/ids?shard={}", ID_SHARDS[1])))
        .bearer_auth(ADMIN)
        .send()
        .unwrap()
        .json()
        .unwrap();
    got.extend(json_ids(&body).into_iter().map(|id| (ID_SHARDS[1], id)));
    m.take_ids(&got, true, what);
    // Counters: acknowledged ≤ value ≤ tried, per row and column.
    let rows: HashSet<&String> = m.counters.keys().map(|(r, _)| r).collect();
    for row in rows {
        let got: HashMap<String, u64> = redis::cmd("HGETALL")
            .arg(format!("pl:{row}"))
            .query(&mut con)
            .unwrap();
        for col in ["value", "hits", "tx", "web"] {
            let (lo, hi) = m
                .counters
                .get(&(row.clone(), col.to_string()))
                .copied()
                .unwrap_or_default();
            let v = got.get(col).copied().unwrap_or(0);
            assert!(
                (lo..=hi).contains(&v),
                "{what}: pl:{row} {col} = {v}, acknowledged {lo}, tried {hi}"
            );
        }
    }
    // Links: every acknowledged create redirects to its URL.
    for (code, url) in &m.links {
        let r = c.get(server.url(&format!("/{code}"))).send().unwrap();
        let location = r
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_string());
        assert!(
            r.status().is_redirection() && location.as_deref() == Some(url.as_str()),
            "{what}: link {code} (to {url}) answers {} {location:?}",
            r.status()
        );
    }
    // API keys: each made before the cut still authenticates.
    for (name, secret) in &m.keys {
        let r = c
            .post(server.url("/api/ids?count=1"))
            .bearer_auth(secret)
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{what}: key {name} no longer works");
    }
    // regions.json: written at the first start with `[regions]`, it must still parse.
    let claim: Json = serde_json::from_slice(&std::fs::read(data.join("regions.json")).unwrap())
        .unwrap_or_else(|e| panic!("{what}: regions.json does not parse: {e}"));
    assert_eq!(claim["region"], "us", "{what}: regions.json is {claim}");
    // Tickets: the next of each sequence is above all acknowledged.
    let mut t = Vec::new();
    numbers(
        &redis::cmd("TICKET.NEXT")
            .arg("t-resp")
            .query(&mut con)
            .unwrap(),
        &mut t,
    );
    let mut probe: Vec<(String, u64)> = t.into_iter().map(|t| ("t-resp".into(), t)).collect();
    let body: Json = c
        .post(server.url("/api/tickets/t-http"))
        .bearer_auth(ADMIN)
        .send()
        .unwrap()
        .json()
        .unwrap();
    probe.extend(json_ids(&body).into_iter().map(|t| ("t-http".into(), t)));
    m.take_tickets(probe, what);
    Restart {
        from_snapshot,
        snapshots,
        cut_bytes,
        ids_refused,
        ids_error,
    }
}

#[test]
fn power_cut_under_mixed_load_keeps_every_promised_file() {
    let Some(bin) = lazyfs::binary("power loss of the server") else {
        return;
    };
    let test_started = Instant::now();
    let mut fs = LazyFs::mount(&bin);
    let data = fs.path().join("data");
    // Outside the mount: the settings are not subject to the cut.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("shardkit.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let seed0 = unix_ms();
    println!("seed {seed0}");
    let mut x = seed0 | 1;
    let mut m = Model::default();
    let mut server = start(&data, &config).expect("first start");
    let (mut loaded_from_snapshot, mut cut_bytes) = (0, 0);
    for round in 0..ROUNDS {
        let what = format!("round {round} (seed {seed0})");
        // The first round outlasts the timed snapshot, so at least one restart reads one.
        let load = Duration::from_millis(match round {
            0 => 1500 + xorshift(&mut x) % 1000,
            _ => 200 + xorshift(&mut x) % 2300,
        });
        let signals = Arc::new(Signals::default());
        let (resp_addr, base) = (server.resp, server.url(""));
        let mut workers: Vec<std::thread::JoinHandle<Seen>> = Vec::new();
        for w in 0..2u64 {
            let (s, seed, tag) = (
                Arc::clone(&signals),
                seed0 ^ (round << 8 | w),
                format!("r{round}w{w}"),
            );
            workers.push(std::thread::spawn(move || {
                counter_resp(resp_addr, seed, tag, &s)
            }));
            let (s, b, tag) = (Arc::clone(&signals), base.clone(), format!("r{round}w{w}"));
            workers.push(std::thread::spawn(move || links(b, tag, &s)));
        }
        let (s, b) = (Arc::clone(&signals), base.clone());
        workers.push(std::thread::spawn(move || {
            counter_http(b, seed0 ^ round, &s)
        }));
        let (s, b) = (Arc::clone(&signals), base.clone());
        workers.push(std::thread::spawn(move || tickets(resp_addr, b, &s)));
        let (s, b) = (Arc::clone(&signals), base.clone());
        workers.push(std::thread::spawn(move || ids(resp_addr, b, &s)));
        let (s, d) = (Arc::clone(&signals), data.clone());
        workers.push(std::thread::spawn(move || {
            keys(&d, format!("r{round}"), &s)
        }));
        std::thread::sleep(load);
        // The cut: the server and any `keys add` die, then the unsynced bytes go.
        signals.killing.store(true, Ordering::Release);
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        let cut_at = unix_ms();
        signals.stop.store(true, Ordering::Release);
        let before = (m.links.len(), m.keys.len(), m.acked_increments);
        for w in workers {
            let seen = w.join().unwrap();
            m.merge(seen, &what);
        }
        fs.cut_power();
        drop(server);
        let lead = (m.top_id() >> ID_TIME_SHIFT) + ID_EPOCH_UNIX_MS;
        let lead = lead as i64 - cut_at as i64;
        let restarting = Instant::now();
        server = start(&data, &config).unwrap_or_else(|out| {
            panic!("{what}: the server does not start after the cut:\n{out}")
        });
        let restart_ms = restarting.elapsed().as_millis();
        let r = check(&server, &data, &mut m, &what);
        loaded_from_snapshot += u64::from(r.from_snapshot);
        cut_bytes += r.cut_bytes;
        println!(
            "round {round}: cut after {load:?} of load: +{} increments, +{} links, +{} keys \
             acknowledged; ids {lead} ms ahead of the clock at the cut; restart {restart_ms} \
             ms, counters from {} ({} snapshot files), log tail cut {} bytes; {}; all \
             intact",
            m.acked_increments - before.2,
            m.links.len() - before.0,
            m.keys.len() - before.1,
            if r.from_snapshot {
                "a snapshot + log"
            } else {
                "the log alone"
            },
            r.snapshots,
            r.cut_bytes,
            match r.ids_error {
                None => "ids served at once".to_string(),
                Some(e) => format!("ids refused for {:?} after the start: {e}", r.ids_refused),
            },
        );
    }
    assert!(
        loaded_from_snapshot > 0,
        "no restart loaded a snapshot: the forced snapshots did not happen"
    );
    assert!(!m.links.is_empty() && !m.keys.is_empty() && m.acked_increments > 0);
    let status = server.terminate();
    assert!(status.success(), "clean stop: {status}");
    println!(
        "{ROUNDS} cuts in {:?}: {} increments ({} rows x columns), {} links ({} refused by \
         the rate limit), {} tickets, ids up to {}, {} keys acknowledged, none lost; {} \
         restarts loaded a snapshot; log tails cut {cut_bytes} bytes in all",
        test_started.elapsed(),
        m.acked_increments,
        m.counters.len(),
        m.links.len(),
        m.refused,
        m.tickets.len(),
        m.top_id(),
        m.keys.len(),
        loaded_from_snapshot,
    );
}

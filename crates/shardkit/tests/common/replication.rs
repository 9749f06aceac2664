//! What the replication tests share: a node on a JetStream log, its role, waiting for
//! a condition, and the failover load (clients incrementing with txids, each retrying
//! an unacknowledged increment with the same txid on whichever node takes it).

use super::nats::Nats;
use super::Server;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Something nodes reach NATS at: one server, or a cluster.
pub trait NatsUrl {
    /// The `[nats] url` a node is given (node `i` of a test may get its own server).
    fn url_for(&self, node: usize) -> String;
}

impl NatsUrl for Nats {
    fn url_for(&self, _: usize) -> String {
        self.url.clone()
    }
}

/// Starts a node on the JetStream log of `nats`, store `test`.
pub fn node(data: &Path, nats: &dyn NatsUrl, role: &str, lease_ms: u64) -> Server {
    node_with(data, nats, 0, role, lease_ms, &[])
}

/// Starts node number `n` (pointed at `nats.url_for(n)`) with `extra` settings in the
/// environment, trying again for up to 30 s while it cannot start (a new NATS cluster
/// has no JetStream until it has elected its meta leader).
pub fn node_with(
    data: &Path,
    nats: &dyn NatsUrl,
    n: usize,
    role: &str,
    lease_ms: u64,
    extra: &[(&str, &str)],
) -> Server {
    let lease = lease_ms.to_string();
    let url = nats.url_for(n);
    let mut env = vec![
        ("SHARDKIT_COUNTERS_LOG", "jetstream"),
        ("SHARDKIT_NATS_URL", url.as_str()),
        ("SHARDKIT_COUNTERS_STORE", "test"),
        ("SHARDKIT_COUNTERS_ROLE", role),
        ("SHARDKIT_COUNTERS_LEASE_MS", lease.as_str()),
    ];
    env.extend_from_slice(extra);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match Server::try_start(
            data,
            &["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"],
            &env,
        ) {
            Ok(server) => return server,
            Err(log) => {
                assert!(Instant::now() < deadline, "the node did not start: {log}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// A connection with short timeouts, or `None` while the node does not answer.
pub fn quick(addr: SocketAddr) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://{addr}/")).ok()?;
    let con = client
        .get_connection_with_timeout(Duration::from_millis(500))
        .ok()?;
    con.set_read_timeout(Some(Duration::from_millis(1_000)))
        .ok()?;
    Some(con)
}

/// `ROLE`'s first element, or `None` while the node does not answer.
pub fn role(server: &Server) -> Option<String> {
    let mut con = quick(server.resp)?;
    let reply: redis::Value = redis::cmd("ROLE").query(&mut con).ok()?;
    match reply {
        redis::Value::Array(items) => match items.first() {
            Some(redis::Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        },
        _ => None,
    }
}

/// Polls `check` every 20 ms for up to `secs` seconds.
pub fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `GET key`, `None` if the node does not answer or has no such key.
pub fn get(server: &Server, key: &str) -> Option<i64> {
    let mut con = quick(server.resp)?;
    redis::cmd("GET").arg(key).query(&mut con).ok()
}

/// Sends `sig` (`-STOP`, `-CONT`, ...) to the node's process.
pub fn signal(server: &Server, sig: &str) {
    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args([sig, &pid])
        .status()
        .unwrap()
        .success());
}

/// SIGKILLs the node and reaps it; answers when.
pub fn kill(server: &mut Server) -> Instant {
    server.child.kill().unwrap();
    let at = Instant::now();
    let _ = server.child.wait();
    at
}

/// Counter and column the load increments (`GET load:1:hits` reads it).
pub const LOAD_KEY: (&str, &str) = ("load:1", "hits");

/// One acknowledged increment: when, and which address took it.
#[derive(Debug, Clone, Copy)]
pub struct Ack {
    /// When the reply arrived.
    pub at: Instant,
    /// Index in the address list of the node that answered.
    pub node: usize,
}

/// `clients` threads each sending `each` increments of 1 (`COUNTER.INCRBY load:1 hits
/// 1 <txid>`, txids unique), trying the addresses in turn until one acknowledges;
/// an unacknowledged increment is sent again with its txid, never a new one.
pub struct Load {
    threads: Vec<JoinHandle<Vec<Ack>>>,
}

impl Load {
    /// Starts the clients.
    pub fn start(addrs: Vec<SocketAddr>, clients: usize, each: usize) -> Load {
        let threads = (0..clients)
            .map(|c| {
                let addrs = addrs.clone();
                std::thread::spawn(move || client(&addrs, c, each))
            })
            .collect();
        Load { threads }
    }

    /// Waits for every client; answers every acknowledgement.
    pub fn finish(self) -> Vec<Ack> {
        let mut all: Vec<Ack> = self
            .threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.sort_by_key(|a| a.at);
        all
    }
}

fn client(addrs: &[SocketAddr], c: usize, each: usize) -> Vec<Ack> {
    let mut acks = Vec::with_capacity(each);
    // The connection in use and which address it goes to.
    let mut current: Option<(usize, redis::Connection)> = None;
    let mut next_addr = 0;
    for n in 0..each {
        let txid = format!("c{c}-{n}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(
                Instant::now() < deadline,
                "increment {txid} never acknowledged"
            );
            if current.is_none() {
                let i = next_addr % addrs.len();
                next_addr += 1;
                current = quick(addrs[i]).map(|con| {
                    let _ = con.set_read_timeout(Some(Duration::from_secs(3)));
                    (i, con)
                });
                if current.is_none() {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
            }
            let (i, con) = current.as_mut().unwrap();
            let done: redis::RedisResult<i64> = redis::cmd("COUNTER.INCRBY")
                .arg(LOAD_KEY.0)
                .arg(LOAD_KEY.1)
                .arg(1)
                .arg(&txid)
                .query(con);
            match done {
                Ok(_) => {
                    acks.push(Ack {
                        at: Instant::now(),
                        node: *i,
                    });
                    break;
                }
                Err(_) => {
                    // Refused (a replica), failed or timed out: the same txid, elsewhere.
                    current = None;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
    acks
}

/// The load's total on a node (`GET load:1:hits`).
pub fn load_total(server: &Server) -> Option<i64> {
    get(server, &format!("{}:{}", LOAD_KEY.0, LOAD_KEY.1))
}

/// Time from `killed` to the first increment a node other than `dead` acknowledged.
pub fn failover_time(acks: &[Ack], killed: Instant, dead: usize) -> Duration {
    acks.iter()
        .find(|a| a.at > killed && a.node != dead)
        .map(|a| a.at - killed)
        .expect("an increment was acknowledged after the kill")
}

/// Prints the last lines of each node's log if the test is failing when it is dropped
/// (hold one for the test's length: `let _logs = LogsOnFailure::of(&nodes);`).
pub struct LogsOnFailure(Vec<(String, std::sync::Arc<std::sync::Mutex<Vec<String>>>)>);

impl LogsOnFailure {
    /// Watches the logs of `nodes`.
    pub fn of(nodes: &[Server]) -> Self {
        Self(
            nodes
                .iter()
                .map(|n| (n.resp.to_string(), std::sync::Arc::clone(&n.log)))
                .collect(),
        )
    }
}

impl Drop for LogsOnFailure {
    fn drop(&mut self) {
        // SHARDKIT_TEST_LOGS=1 prints them whole on success too (to see where time goes).
        let always = std::env::var_os("SHARDKIT_TEST_LOGS").is_some();
        if !std::thread::panicking() && !always {
            return;
        }
        for (i, (addr, log)) in self.0.iter().enumerate() {
            let Ok(log) = log.lock() else { continue };
            let from = if always {
                0
            } else {
                log.len().saturating_sub(40)
            };
            eprintln!("--- node {i} ({addr}) log tail ---");
            for line in &log[from..] {
                eprintln!("{}", line.trim_end());
            }
        }
    }
}

/// The inode of the socket listening on `addr` (an IPv4 address), from
/// `/proc/net/tcp`: the same number before and after a restart in place means the
/// socket was handed over rather than bound again.
pub fn listening_socket(addr: SocketAddr) -> Option<u64> {
    let SocketAddr::V4(v4) = addr else {
        return None;
    };
    // /proc/net/tcp writes the address as the host-order u32 in hex, then the port.
    let local = format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(v4.ip().octets()),
        v4.port()
    );
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl, local_address, rem_address, st (0A: LISTEN), …, inode (the tenth).
        (fields.get(1) == Some(&local.as_str()) && fields.get(3) == Some(&"0A"))
            .then(|| fields.get(9)?.parse().ok())
            .flatten()
    })
}

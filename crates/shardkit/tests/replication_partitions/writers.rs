//! The partition test's clients: each sends `COUNTER.INCRBY <key> hits 1 <txid>` over
//! a few keys in turn, paced, until a deadline, and keeps what it knows of every
//! increment: acknowledged, or sent without an acknowledgement (it may have been
//! applied: indeterminate). An unacknowledged increment is sent again with the same
//! txid, never a new one, so each one counts at most once however often it is retried.
//!
//! Two ways to pick the node: always one address (a client on the leader's host that
//! knows only its local node), or the address Sentinel names before every attempt (a
//! client following failovers as redis-py's `Sentinel` does).

use crate::common::hosts::nodes::redis_url;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The counter rows written, each a key of its own.
pub const KEYS: [&str; 3] = ["part:a", "part:b", "part:c"];
/// The column incremented.
pub const COLUMN: &str = "hits";

/// At most one attempt per this long: 200 writes/s per writer.
const PACE: Duration = Duration::from_millis(5);
/// Pause after a failed attempt, so a writer facing a down node does not spin.
const BACKOFF: Duration = Duration::from_millis(20);
/// Attempts per writer at most, whatever the deadline.
const MAX_ATTEMPTS: usize = 20_000;
/// Connect timeout of a write connection.
const CONNECT: Duration = Duration::from_millis(500);
/// How long a write waits for its reply before it counts as unanswered.
const REPLY: Duration = Duration::from_secs(2);
/// Connect and reply timeout of a Sentinel question.
const ASK: Duration = Duration::from_millis(300);

/// Where a writer sends its increments.
#[derive(Debug, Clone)]
pub enum Target {
    /// Always this node.
    Fixed(SocketAddr),
    /// Whichever node `SENTINEL get-master-addr-by-name <master>` names, asked of
    /// these nodes (starting with the last that answered) before every attempt.
    Sentinel {
        /// The nodes to ask.
        sentinels: Vec<SocketAddr>,
        /// The master's name (the store's).
        master: String,
    },
}

/// What a writer knows at its deadline.
#[derive(Debug, Clone)]
pub struct Written {
    /// The writer's name in reports.
    pub name: String,
    /// When it started.
    pub from: Instant,
    /// When it stopped.
    pub to: Instant,
    /// When each acknowledgement arrived, in order.
    pub acks: Vec<Instant>,
    /// Acknowledged increments per key (index in [`KEYS`]).
    pub acked: [i64; KEYS.len()],
    /// Increments sent but never acknowledged, per key.
    pub indeterminate: [i64; KEYS.len()],
    /// Attempts refused with `READONLY` (certainly not applied).
    pub readonly: u64,
    /// Attempts that failed otherwise (no reply, error reply, broken connection).
    pub failed: u64,
    /// Attempts not sent: the node did not take the connection.
    pub unreachable: u64,
    /// Attempts not sent: no sentinel named a master.
    pub no_master: u64,
}

impl Written {
    /// The longest stretch without an acknowledgement, from its start to its stop.
    pub fn longest_gap(&self) -> Duration {
        let mut at = self.from;
        let mut longest = Duration::ZERO;
        for &t in self.acks.iter().chain(std::iter::once(&self.to)) {
            longest = longest.max(t.saturating_duration_since(at));
            at = t;
        }
        longest
    }
}

/// One increment under way: its key, txid, and whether an attempt may have applied it.
struct Pending {
    key: usize,
    txid: String,
    maybe_applied: bool,
}

/// Writes until `until` (or [`MAX_ATTEMPTS`]); txids are `<prefix>-<n>`.
pub fn run(name: &str, prefix: &str, target: Target, until: Instant) -> Written {
    let mut out = Written {
        name: name.to_string(),
        from: Instant::now(),
        to: until,
        acks: Vec::new(),
        acked: [0; KEYS.len()],
        indeterminate: [0; KEYS.len()],
        readonly: 0,
        failed: 0,
        unreachable: 0,
        no_master: 0,
    };
    let mut writes: HashMap<SocketAddr, redis::Connection> = HashMap::new();
    let mut asker = Asker::default();
    let mut pending: Option<Pending> = None;
    let mut n = 0usize;
    for _ in 0..MAX_ATTEMPTS {
        let started = Instant::now();
        if started >= until {
            break;
        }
        let write = pending.get_or_insert_with(|| {
            n += 1;
            Pending {
                key: n % KEYS.len(),
                txid: format!("{prefix}-{n}"),
                maybe_applied: false,
            }
        });
        let addr = match &target {
            Target::Fixed(addr) => Some(*addr),
            Target::Sentinel { sentinels, master } => asker.master(sentinels, master),
        };
        let Some(addr) = addr else {
            out.no_master += 1;
            std::thread::sleep(BACKOFF);
            continue;
        };
        let con = match writes.entry(addr) {
            std::collections::hash_map::Entry::Occupied(e) => Some(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(e) => {
                connect(addr, CONNECT, REPLY).map(|c| e.insert(c))
            }
        };
        let Some(con) = con else {
            // Nothing was sent.
            out.unreachable += 1;
            asker.move_on();
            std::thread::sleep(BACKOFF);
            continue;
        };
        let reply: redis::RedisResult<redis::Value> = redis::cmd("COUNTER.INCRBY")
            .arg(KEYS[write.key])
            .arg(COLUMN)
            .arg(1)
            .arg(&write.txid)
            .query(con);
        match reply {
            Ok(_) => {
                out.acks.push(Instant::now());
                out.acked[write.key] += 1;
                pending = None;
                pace(started);
            }
            Err(e) if e.code() == Some("READONLY") => {
                // Refused before it ran: not applied. The connection stays usable.
                out.readonly += 1;
                asker.move_on();
                std::thread::sleep(BACKOFF);
            }
            Err(_) => {
                // No reply, an error reply or a broken connection: it may have been
                // applied, and the connection may be out of step; the same txid again.
                write.maybe_applied = true;
                out.failed += 1;
                writes.remove(&addr);
                asker.move_on();
                std::thread::sleep(BACKOFF);
            }
        }
    }
    if let Some(p) = pending.filter(|p| p.maybe_applied) {
        out.indeterminate[p.key] += 1;
    }
    out.to = Instant::now().max(until);
    out
}

/// Sleeps what is left of this attempt's [`PACE`].
fn pace(started: Instant) {
    if let Some(rest) = PACE.checked_sub(started.elapsed()) {
        std::thread::sleep(rest);
    }
}

/// An authenticated connection to `addr` with the given timeouts, if it answers.
pub fn connect(addr: SocketAddr, connect: Duration, reply: Duration) -> Option<redis::Connection> {
    let client = redis::Client::open(redis_url(addr)).ok()?;
    let con = client.get_connection_with_timeout(connect).ok()?;
    con.set_read_timeout(Some(reply)).ok()?;
    con.set_write_timeout(Some(reply)).ok()?;
    Some(con)
}

/// Asks Sentinel for the master, as a Sentinel client does: the sentinel that
/// answered last first, the next one when it fails or its master did.
#[derive(Default)]
struct Asker {
    first: usize,
    cons: HashMap<SocketAddr, redis::Connection>,
}

impl Asker {
    /// The master's address as the first sentinel that names one says.
    fn master(&mut self, sentinels: &[SocketAddr], name: &str) -> Option<SocketAddr> {
        for k in 0..sentinels.len() {
            let i = (self.first + k) % sentinels.len();
            let at = sentinels[i];
            let con = match self.cons.entry(at) {
                std::collections::hash_map::Entry::Occupied(e) => Some(e.into_mut()),
                std::collections::hash_map::Entry::Vacant(e) => {
                    connect(at, ASK, ASK).map(|c| e.insert(c))
                }
            };
            let Some(con) = con else { continue };
            let reply: redis::RedisResult<redis::Value> = redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(name)
                .query(con);
            match reply {
                Ok(redis::Value::Array(fields)) => {
                    if let Some(addr) = master_addr(&fields) {
                        self.first = i;
                        return Some(addr);
                    }
                }
                Ok(_) => {}
                Err(_) => {
                    self.cons.remove(&at);
                }
            }
        }
        None
    }

    /// The last master failed: start with the next sentinel next time.
    fn move_on(&mut self) {
        self.first += 1;
    }
}

/// `[ip, port]` of a `get-master-addr-by-name` reply.
fn master_addr(fields: &[redis::Value]) -> Option<SocketAddr> {
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        redis::Value::Int(n) => Some(n.to_string()),
        _ => None,
    };
    match fields {
        [ip, port] => format!("{}:{}", text(ip)?, text(port)?).parse().ok(),
        _ => None,
    }
}

//! What the partition test reads from the nodes, from its own namespace over the
//! bridge: each node's values of the written keys, its `COUNTER.DIGEST` and its role;
//! and the waits built on them (a leader to start a round from, nodes that settled).

use crate::common::hosts::nodes::Node;
use crate::verdict::{never_right, Totals};
use crate::writers::{self, COLUMN, KEYS};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// One node's answers at one moment.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET <key>:hits` per key (`Some(0)` for a missing row; `None`: no answer).
    pub values: [Option<i64>; KEYS.len()],
    /// `COUNTER.DIGEST`: applied lsn and digest, or what went wrong.
    pub digest: Result<(i64, String), String>,
    /// `ROLE`'s first element, if it answered.
    pub role: Option<String>,
    /// The first error a `GET` answered (a node refusing reads says why).
    pub get_error: Option<String>,
}

/// What node `addr` answers now.
pub fn read(addr: SocketAddr) -> Seen {
    let mut seen = Seen {
        values: [None; KEYS.len()],
        digest: Err("no connection".into()),
        role: None,
        get_error: Some("no connection".into()),
    };
    let timeout = Duration::from_secs(1);
    let Some(mut con) = writers::connect(addr, timeout, timeout) else {
        return seen;
    };
    seen.get_error = None;
    for (k, key) in KEYS.iter().enumerate() {
        let value: redis::RedisResult<Option<i64>> = redis::cmd("GET")
            .arg(format!("{key}:{COLUMN}"))
            .query(&mut con);
        match value {
            Ok(v) => seen.values[k] = Some(v.unwrap_or(0)),
            Err(e) => {
                seen.get_error.get_or_insert(e.to_string());
            }
        }
    }
    seen.digest = match redis::cmd("COUNTER.DIGEST").query::<redis::Value>(&mut con) {
        Ok(redis::Value::Array(fields)) => match fields.as_slice() {
            [redis::Value::Int(lsn), redis::Value::BulkString(hex)] => {
                Ok((*lsn, String::from_utf8_lossy(hex).into_owned()))
            }
            _ => Err(format!("unexpected reply {fields:?}")),
        },
        Ok(other) => Err(format!("unexpected reply {other:?}")),
        Err(e) => Err(e.to_string()),
    };
    seen.role = role_of(&mut con);
    seen
}

/// Reads every node until all answer, agree on every key and on the digest, and one
/// node has been the only leader for `steady`, or `within` passed; answers the last
/// reading, and what any reading showed that waiting cannot excuse
/// ([`never_right`]).
pub fn settle(
    tag: &str,
    nodes: &[Node],
    totals: &Totals,
    steady: Duration,
    within: Duration,
) -> (Vec<Seen>, Vec<String>) {
    let deadline = Instant::now() + within;
    // The one leader and since when it has been seen as such, poll after poll.
    let mut leading: Option<(usize, Instant)> = None;
    let mut found = BTreeMap::new();
    loop {
        let seen: Vec<Seen> = nodes.iter().map(|n| read(n.resp)).collect();
        never_right(tag, nodes, &seen, totals, &mut found);
        let values_agree = seen
            .iter()
            .all(|s| s.values.iter().all(Option::is_some) && s.values == seen[0].values);
        // A node without the command will not come to agree by waiting.
        let digests_done = seen.iter().any(|s| unknown_command(&s.digest))
            || seen
                .iter()
                .all(|s| s.digest.is_ok() && s.digest == seen[0].digest);
        let masters: Vec<usize> = (0..seen.len())
            .filter(|&i| seen[i].role.as_deref() == Some("master"))
            .collect();
        leading = match (leading, masters.as_slice()) {
            (Some((was, since)), [now]) if was == *now => Some((was, since)),
            (_, [now]) => Some((*now, Instant::now())),
            _ => None,
        };
        let is_steady = leading.is_some_and(|(_, since)| since.elapsed() >= steady);
        if (values_agree && digests_done && is_steady) || Instant::now() >= deadline {
            return (seen, found.into_values().collect());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn unknown_command(digest: &Result<(i64, String), String>) -> bool {
    matches!(digest, Err(e) if e.to_ascii_lowercase().contains("unknown command"))
}

/// The index of the one node whose `ROLE` is `master`, waiting up to `within`.
pub fn wait_leader(nodes: &[Node], within: Duration) -> Option<usize> {
    let deadline = Instant::now() + within;
    loop {
        let masters: Vec<usize> = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| read_role(n.resp).as_deref() == Some("master"))
            .map(|(i, _)| i)
            .collect();
        if let [one] = masters.as_slice() {
            return Some(*one);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every node's role, for a failure message.
pub fn roles(nodes: &[Node]) -> String {
    nodes
        .iter()
        .map(|n| {
            format!(
                "{}={}",
                n.name,
                read_role(n.resp).as_deref().unwrap_or("none")
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn read_role(addr: SocketAddr) -> Option<String> {
    let timeout = Duration::from_millis(500);
    let mut con = writers::connect(addr, timeout, timeout)?;
    role_of(&mut con)
}

/// `ROLE`'s first element (`master`, `slave`), if the node answers.
fn role_of(con: &mut redis::Connection) -> Option<String> {
    match redis::cmd("ROLE").query::<redis::Value>(con).ok()? {
        redis::Value::Array(items) => match items.first() {
            Some(redis::Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        },
        _ => None,
    }
}

/// What `INFO replication` of the node at `addr` says now (its role, lease, applied lsn
/// and durability), or why it could not be asked.
pub fn info_replication(addr: SocketAddr) -> String {
    let timeout = Duration::from_secs(1);
    let Some(mut con) = writers::connect(addr, timeout, timeout) else {
        return "no connection".into();
    };
    redis::cmd("INFO")
        .arg("replication")
        .query::<String>(&mut con)
        .unwrap_or_else(|e| format!("error: {e}"))
}

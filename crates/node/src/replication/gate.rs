//! The write gate: what a node in its replication role refuses (writes on a replica,
//! reads on a replica that diverged), as texts both frontends answer with.

use super::{Role, Status};

/// Redis's answer to a write sent to a replica, word for word.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";

/// Commands that change state: refused on a replica. Tickets are refused too (a
/// replica holds no ticket lease yet); ids are not: every node issues them from the id
/// shards it leases (`crate::id_leases`).
const WRITES: &[&str] = &[
    "SET",
    "INCR",
    "INCRBY",
    "DECR",
    "DECRBY",
    "DEL",
    "UNLINK",
    "HSET",
    "HINCRBY",
    "HDEL",
    "HMSET",
    "HSETNX",
    "MSET",
    "MSETNX",
    "FLUSHDB",
    "FLUSHALL",
    "GETSET",
    "GETDEL",
    "SETNX",
    "INCRBYFLOAT",
    "COUNTER.CREATE",
    "COUNTER.ADDCOL",
    "COUNTER.INCRBY",
    "TICKET.NEXT",
];

/// The error to answer instead of running command `name`, if this node may not write.
pub fn refuse(status: &Status, name: &[u8]) -> Option<&'static str> {
    if status.writable()
        || !WRITES
            .iter()
            .any(|w| name.eq_ignore_ascii_case(w.as_bytes()))
    {
        return None;
    }
    if name.eq_ignore_ascii_case(b"TICKET.NEXT") {
        return Some("READONLY tickets are issued by the leader only; send TICKET.NEXT to the leader (ROLE names it)");
    }
    Some(READONLY)
}

/// The error a read of counters gets while this node's copy of the log diverged (it
/// is starting over): a value that is in no agreed log is never served.
pub fn refuse_read(status: &Status) -> Option<String> {
    if !status.is_diverged() {
        return None;
    }
    let why = status.diverged().unwrap_or_default();
    Some(format!(
        "LOADING this replica's copy of the counters diverged from the log ({why}); it is starting over from the newest snapshot: read from another node"
    ))
}

/// `None` when this node may write; else `Some(the leader's HTTP address, if known)`,
/// for the 421 a write sent here gets.
pub fn http_leader(status: &Status) -> Option<Option<String>> {
    match status.role() {
        Role::Standalone | Role::Leader => None,
        Role::Replica { leader } => Some(leader.map(|l| l.http)),
        Role::Deposed => Some(None),
    }
}

/// The `# Replication` section of `INFO`, Redis's field names where they apply, plus
/// the stream figures: applied sequence and lag in records and milliseconds.
pub fn info_section(status: &Status) -> String {
    let (seq, lag, lag_ms) = status.progress();
    let mut s = String::from("# Replication\r\n");
    match status.role() {
        Role::Standalone => s.push_str("role:master\r\nconnected_slaves:0\r\nlog:local\r\n"),
        Role::Leader => {
            let replicas = known_replicas(status);
            s.push_str(&format!(
                "role:master\r\nconnected_slaves:{}\r\n",
                replicas.len()
            ));
            for (i, (host, port, offset)) in replicas.into_iter().enumerate() {
                s.push_str(&format!(
                    "slave{i}:ip={host},port={port},state=online,offset={offset},lag={}\r\n",
                    seq.saturating_sub(offset)
                ));
            }
            s.push_str("log:jetstream\r\n");
        }
        Role::Replica { leader } => {
            let (host, port) = split_addr(leader.as_ref().map(|l| l.resp.as_str()));
            let up = if leader.is_some() && status.link_up() {
                "up"
            } else {
                "down"
            };
            s.push_str(&format!(
                "role:slave\r\nmaster_host:{host}\r\nmaster_port:{port}\r\nmaster_link_status:{up}\r\nlog:jetstream\r\n"
            ));
        }
        Role::Deposed => {
            s.push_str("role:slave\r\nmaster_link_status:down\r\ndeposed:1\r\nlog:jetstream\r\n")
        }
    }
    s.push_str(&format!(
        "stream_applied_seq:{seq}\r\nlag_records:{lag}\r\nlag_ms:{lag_ms}\r\n"
    ));
    if let Some(head) = status.head() {
        s.push_str(&format!(
            "log_term:{}\r\nlog_chain_seq:{}\r\nlog_chain:{}\r\n",
            head.term,
            head.seq,
            super::log_chain::hex(head.chain)
        ));
    }
    if let Some((version, warning)) = status.durability() {
        s.push_str(&format!("nats_version:{version}\r\n"));
        match warning {
            Some(w) => s.push_str(&format!(
                "log_durability:at_risk\r\nlog_durability_warning:{}\r\n",
                w.replace(['\r', '\n'], " ")
            )),
            None => s.push_str("log_durability:sync_interval_unchecked\r\n"),
        }
    }
    match status.diverged() {
        Some(why) => s.push_str(&format!(
            "diverged:1\r\ndiverged_reason:{}\r\n",
            why.replace(['\r', '\n'], " ")
        )),
        None => s.push_str("diverged:0\r\n"),
    }
    s.push_str(&format!(
        "restarts_in_place:{}\r\n",
        crate::restart_in_place::count()
    ));
    s
}

/// The replicas a leader knows of (the members announcing `slave`): host, port and
/// applied stream sequence.
pub fn known_replicas(status: &Status) -> Vec<(String, i64, u64)> {
    status
        .members
        .snapshot(status.members.now_ms())
        .into_iter()
        .filter(|s| s.member.node != status.me.node && s.member.role == "slave")
        .map(|s| {
            let (host, port) = split_addr(Some(&s.member.resp));
            (host, port, s.member.applied_seq)
        })
        .collect()
}

/// `host:port` taken apart for a reply (`?` and 0 when unknown).
pub fn split_addr(addr: Option<&str>) -> (String, i64) {
    match addr.and_then(|a| a.rsplit_once(':')) {
        Some((host, port)) => (host.to_string(), port.parse().unwrap_or(0)),
        None => ("?".to_string(), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::LeaderAddr;

    fn node(role: Role) -> Status {
        Status::new(
            role,
            LeaderAddr {
                node: "n".into(),
                resp: "127.0.0.1:6380".into(),
                http: "127.0.0.1:8080".into(),
            },
        )
    }

    #[test]
    fn replicas_refuse_writes_and_leaders_take_them() {
        let replica = node(Role::Replica { leader: None });
        assert_eq!(refuse(&replica, b"incr"), Some(READONLY));
        assert_eq!(refuse(&replica, b"COUNTER.INCRBY"), Some(READONLY));
        assert!(refuse(&replica, b"TICKET.NEXT")
            .unwrap()
            .starts_with("READONLY "));
        assert_eq!(refuse(&replica, b"ID.NEXT"), None);
        assert_eq!(refuse(&replica, b"GET"), None);
        assert_eq!(refuse(&replica, b"HGETALL"), None);
        for writable in [Role::Leader, Role::Standalone] {
            assert_eq!(refuse(&node(writable), b"INCR"), None);
        }
        assert_eq!(refuse(&node(Role::Deposed), b"SET"), Some(READONLY));
    }

    #[test]
    fn info_and_the_421_name_the_leader() {
        let leader = LeaderAddr {
            node: "x".into(),
            resp: "10.0.0.1:7000".into(),
            http: "10.0.0.1:8000".into(),
        };
        let replica = node(Role::Replica {
            leader: Some(leader),
        });
        replica.set_progress(42, 0, 0);
        assert_eq!(http_leader(&replica), Some(Some("10.0.0.1:8000".into())));
        let info = info_section(&replica);
        assert!(
            info.contains("master_host:10.0.0.1\r\nmaster_port:7000"),
            "{info}"
        );
        assert_eq!(http_leader(&node(Role::Leader)), None);
    }
}

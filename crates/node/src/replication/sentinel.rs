//! The Sentinel view of a counter store: its master, replicas and sentinels, with the
//! fields Redis Sentinel reports for each (`sentinel.c`, `addReplySentinelRedisInstance`),
//! built from the lease (who leads, as [`Status`] knows it) and the membership
//! announcements. Every node is a sentinel of its store, so clients that discover a
//! master through Sentinel (redis-py's `Sentinel`, ioredis's `sentinels`) find the
//! leader and follow a failover without new code.
//!
//! Figures Sentinel measures by pinging (`last-ok-ping-reply`, `info-refresh`, ...)
//! are the age of a node's last announcement; a node silent for longer than
//! `down-after-milliseconds` (the lease) is `s_down`.

use super::members::{Member, Seen};
use super::{Role, Status};

/// One instance as Sentinel describes it: field names and values in Redis's order.
pub type Instance = Vec<(&'static str, String)>;

/// The store as Sentinel would report it.
#[derive(Debug, Default)]
pub struct View {
    /// The master, if a node holds the lease or was last seen leading.
    pub master: Option<Instance>,
    /// The master's `ip` and `port`, for `get-master-addr-by-name`.
    pub master_addr: Option<(String, u16)>,
    /// The other nodes, as replicas of the master.
    pub replicas: Vec<Instance>,
    /// Every node but this one, each a sentinel.
    pub sentinels: Vec<Instance>,
}

/// A node with its age, this node included.
struct Node {
    member: Member,
    age_ms: u64,
}

/// Builds the view of store `store` (its name is the master's name) with `lease_ms`
/// as the down-after period; `may_lead`: whether this node stands for the lease.
pub fn view(status: &Status, store: &str, lease_ms: u64, may_lead: bool) -> View {
    let now = status.members.now_ms();
    let role = status.role();
    let me = Node {
        member: Member {
            node: status.me.node.clone(),
            resp: status.me.resp.clone(),
            http: status.me.http.clone(),
            role: role_name(&role).to_string(),
            applied_seq: status.progress().0,
            may_lead,
        },
        age_ms: 0,
    };
    let mut nodes = vec![me];
    nodes.extend(
        status
            .members
            .snapshot(now)
            .into_iter()
            .filter(|s| s.member.node != status.me.node)
            .map(|s: Seen| Node {
                age_ms: s.age_ms(now),
                member: s.member,
            }),
    );
    let down = |n: &Node| n.age_ms > lease_ms;
    // The lease holder, else (lease lapsed, failover under way) the last node seen
    // leading, reported down as Sentinel reports a master it lost.
    let (master, lost) = match &role {
        Role::Standalone | Role::Leader => (Some(0), false),
        Role::Replica {
            leader: Some(leader),
        } => match nodes.iter().position(|n| n.member.node == leader.node) {
            Some(i) => (Some(i), false),
            None => {
                nodes.push(Node {
                    member: Member {
                        node: leader.node.clone(),
                        resp: leader.resp.clone(),
                        http: leader.http.clone(),
                        role: "master".into(),
                        applied_seq: 0,
                        may_lead: true,
                    },
                    age_ms: 0,
                });
                (Some(nodes.len() - 1), false)
            }
        },
        Role::Replica { leader: None } | Role::Deposed => {
            let last = nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| n.member.role == "master")
                .min_by_key(|(_, n)| n.age_ms)
                .map(|(i, _)| i);
            (last, true)
        }
    };
    let live_others = nodes[1..].iter().filter(|n| !down(n)).count();
    let mut view = View::default();
    let master_addr = master.map(|i| split_addr(&nodes[i].member.resp));
    if let Some(i) = master {
        let m = &nodes[i];
        let mut fields = common(
            store.to_string(),
            m,
            if lost || down(m) {
                "s_down,o_down,master"
            } else {
                "master"
            },
            lease_ms,
        );
        let replicas = nodes.len() - 1;
        fields.extend([
            ("info-refresh", m.age_ms.to_string()),
            ("role-reported", "master".to_string()),
            ("role-reported-time", m.age_ms.to_string()),
            ("config-epoch", "0".to_string()),
            ("num-slaves", replicas.to_string()),
            ("num-other-sentinels", live_others.to_string()),
            ("quorum", (nodes.len() / 2 + 1).to_string()),
            ("failover-timeout", (2 * lease_ms).to_string()),
            ("parallel-syncs", "1".to_string()),
        ]);
        view.master = Some(fields);
    }
    let (master_host, master_port) = master_addr.clone().unwrap_or(("?".into(), 0));
    for (i, n) in nodes.iter().enumerate() {
        if i != 0 {
            let mut fields = common(n.member.node.clone(), n, "sentinel", lease_ms);
            fields.extend([
                ("last-hello-message", n.age_ms.to_string()),
                ("voted-leader", "?".to_string()),
                ("voted-leader-epoch", "0".to_string()),
            ]);
            view.sentinels.push(fields);
        }
        if Some(i) == master {
            continue;
        }
        let (host, port) = split_addr(&n.member.resp);
        let linked = n.member.role == "slave" && !down(n) && master.is_some() && !lost;
        let mut fields = common(format!("{host}:{port}"), n, "slave", lease_ms);
        fields.extend([
            ("info-refresh", n.age_ms.to_string()),
            (
                "role-reported",
                if n.member.role == "master" {
                    "master"
                } else {
                    "slave"
                }
                .to_string(),
            ),
            ("role-reported-time", n.age_ms.to_string()),
            ("master-link-down-time", "0".to_string()),
            (
                "master-link-status",
                if linked { "ok" } else { "err" }.into(),
            ),
            ("master-host", master_host.clone()),
            ("master-port", master_port.to_string()),
            (
                "slave-priority",
                if n.member.may_lead { "100" } else { "0" }.into(),
            ),
            ("slave-repl-offset", n.member.applied_seq.to_string()),
            ("replica-announced", "1".to_string()),
        ]);
        view.replicas.push(fields);
    }
    view.master_addr = master_addr;
    view
}

/// The fields every instance has, up to `down-after-milliseconds`.
fn common(name: String, n: &Node, kind: &str, lease_ms: u64) -> Instance {
    let (ip, port) = split_addr(&n.member.resp);
    let down = n.age_ms > lease_ms;
    let flags = if down && !kind.starts_with("s_down") {
        format!("s_down,{kind}")
    } else {
        kind.to_string()
    };
    let mut fields = vec![
        ("name", name),
        ("ip", ip),
        ("port", port.to_string()),
        ("runid", n.member.node.clone()),
        ("flags", flags.clone()),
        ("link-pending-commands", "0".to_string()),
        ("link-refcount", "1".to_string()),
        ("last-ping-sent", "0".to_string()),
        ("last-ok-ping-reply", n.age_ms.to_string()),
        ("last-ping-reply", n.age_ms.to_string()),
    ];
    if flags.starts_with("s_down") {
        let since = n.age_ms.saturating_sub(lease_ms).to_string();
        fields.push(("s-down-time", since.clone()));
        if flags.contains("o_down") {
            fields.push(("o-down-time", since));
        }
    }
    fields.push(("down-after-milliseconds", lease_ms.to_string()));
    fields
}

/// `host:port` (or `[v6]:port`) as Sentinel's `ip` and `port`.
fn split_addr(addr: &str) -> (String, u16) {
    match addr.rsplit_once(':') {
        Some((host, port)) => (
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port.parse().unwrap_or(0),
        ),
        None => (addr.to_string(), 0),
    }
}

/// How a node names its role in its announcement.
pub fn role_name(role: &Role) -> &'static str {
    match role {
        Role::Standalone | Role::Leader => "master",
        Role::Replica { .. } => "slave",
        Role::Deposed => "deposed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::members::now_ms;
    use crate::replication::LeaderAddr;

    fn addr(node: &str, port: u16) -> LeaderAddr {
        LeaderAddr {
            node: node.into(),
            resp: format!("127.0.0.1:{port}"),
            http: "127.0.0.1:1".into(),
        }
    }

    fn field<'a>(instance: &'a Instance, name: &str) -> &'a str {
        &instance.iter().find(|(k, _)| *k == name).unwrap().1
    }

    fn announce(status: &Status, node: &str, port: u16, role: &str, age_ms: u64) {
        let a = addr(node, port);
        status.members.record(
            Member {
                node: a.node,
                resp: a.resp,
                http: a.http,
                role: role.into(),
                applied_seq: 7,
                may_lead: role != "slave",
            },
            now_ms() - age_ms,
        );
    }

    #[test]
    fn a_replica_reports_the_lease_holder_as_master_and_the_others_as_replicas() {
        let status = Status::new(
            Role::Replica {
                leader: Some(addr("L", 7001)),
            },
            addr("me", 7002),
        );
        announce(&status, "L", 7001, "master", 10);
        announce(&status, "R", 7003, "slave", 5_000);
        let v = view(&status, "counters", 1_000, true);
        let master = v.master.unwrap();
        assert_eq!(field(&master, "name"), "counters");
        assert_eq!(field(&master, "flags"), "master");
        assert_eq!(field(&master, "num-other-sentinels"), "1", "R is down");
        assert_eq!(v.master_addr, Some(("127.0.0.1".into(), 7001)));
        assert_eq!(v.replicas.len(), 2);
        let me = &v.replicas[0];
        assert_eq!(field(me, "name"), "127.0.0.1:7002");
        assert_eq!(field(me, "master-link-status"), "ok");
        assert_eq!(field(me, "master-port"), "7001");
        assert_eq!(field(&v.replicas[1], "flags"), "s_down,slave");
        assert_eq!(field(&v.replicas[1], "slave-priority"), "0");
        assert_eq!(v.sentinels.len(), 2, "every node but this one");
        assert!(v.sentinels.iter().all(|s| field(s, "runid") != "me"));
    }

    #[test]
    fn with_the_lease_lapsed_the_last_master_is_reported_down() {
        let status = Status::new(Role::Replica { leader: None }, addr("me", 7002));
        announce(&status, "L", 7001, "master", 100);
        let v = view(&status, "counters", 1_000, true);
        let master = v.master.unwrap();
        assert_eq!(field(&master, "flags"), "s_down,o_down,master");
        assert_eq!(field(&master, "port"), "7001");
        let alone = Status::new(Role::Replica { leader: None }, addr("me", 7002));
        assert!(view(&alone, "counters", 1_000, true).master.is_none());
        let leader = Status::new(Role::Leader, addr("me", 7002));
        let v = view(&leader, "counters", 1_000, true);
        assert_eq!(v.master_addr, Some(("127.0.0.1".into(), 7002)));
        assert!(v.replicas.is_empty() && v.sentinels.is_empty());
    }
}

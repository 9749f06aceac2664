//! `ROLE`, as Redis answers it, from the node's replication status.

use bytes::BytesMut;
use shardkit_node::replication::gate::{known_replicas, split_addr};
use shardkit_node::replication::{Role, Status};
use shardkit_resp::reply;

/// `ROLE`, as Redis answers it: `master <offset> [[host, port, offset], ...]` or `slave
/// <host> <port> <state> <offset>`. Offsets are stream sequences; a master lists the
/// replicas announced in the members bucket.
pub fn role_reply(status: &Status, out: &mut BytesMut) {
    let (seq, lag, _) = status.progress();
    match status.role() {
        Role::Standalone | Role::Leader => {
            let replicas = known_replicas(status);
            reply::array_header(out, 3);
            reply::bulk(out, b"master");
            reply::integer(out, seq as i64);
            reply::array_header(out, replicas.len());
            for (host, port, offset) in replicas {
                reply::array_header(out, 3);
                reply::bulk(out, host.as_bytes());
                reply::bulk_integer(out, port);
                reply::bulk_integer(out, offset as i64);
            }
        }
        Role::Replica { leader } => {
            let (host, port) = split_addr(leader.as_ref().map(|l| l.resp.as_str()));
            reply::array_header(out, 5);
            reply::bulk(out, b"slave");
            reply::bulk(out, host.as_bytes());
            reply::integer(out, port);
            let link: &[u8] = if leader.is_none() || !status.link_up() {
                b"connect"
            } else if lag > 0 {
                b"sync"
            } else {
                b"connected"
            };
            reply::bulk(out, link);
            reply::integer(out, seq as i64);
        }
        Role::Deposed => {
            reply::array_header(out, 5);
            reply::bulk(out, b"slave");
            reply::bulk(out, b"?");
            reply::integer(out, 0);
            reply::bulk(out, b"connect");
            reply::integer(out, seq as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardkit_node::replication::LeaderAddr;

    #[test]
    fn a_replica_names_its_leader_as_redis_does() {
        let me = LeaderAddr {
            node: "n".into(),
            resp: "127.0.0.1:6380".into(),
            http: "127.0.0.1:8080".into(),
        };
        let leader = LeaderAddr {
            node: "x".into(),
            resp: "10.0.0.1:7000".into(),
            http: "10.0.0.1:8000".into(),
        };
        let replica = Status::new(
            Role::Replica {
                leader: Some(leader),
            },
            me,
        );
        replica.set_progress(42, 0, 0);
        let mut out = BytesMut::new();
        role_reply(&replica, &mut out);
        assert_eq!(
            &out[..],
            b"*5\r\n$5\r\nslave\r\n$8\r\n10.0.0.1\r\n:7000\r\n$9\r\nconnected\r\n:42\r\n"
        );
    }
}

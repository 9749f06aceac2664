//! Every deliberate difference from Redis (the README's table) has a test of its own,
//! against a private Redis where Redis's side is shown; plus the command table
//! (`COMMAND`), `HELLO`, and `FLUSHDB` surviving a restart.

mod common;

use common::raw_resp::{RawClient, RedisServer, Reply};
use common::Server;

fn bulk(text: &str) -> Reply {
    Reply::Bulk(Some(text.as_bytes().to_vec()))
}

fn both() -> (tempfile::TempDir, Server, RawClient, RedisServer, RawClient) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let ours = RawClient::connect(server.resp);
    let redis = RedisServer::start();
    let theirs = RawClient::connect(redis.addr);
    (dir, server, ours, redis, theirs)
}

#[test]
fn zero_is_absence_but_a_read_of_an_existing_counter_answers_0() {
    let (_dir, _server, mut ours, _redis, mut theirs) = both();
    for c in [&mut ours, &mut theirs] {
        assert_eq!(c.cmd("SET z:1 0"), Reply::Simple("OK".into()));
        assert_eq!(c.cmd("GET z:1"), bulk("0"));
    }
    // Redis stores the zero; shardkit stores nothing, and says so.
    assert_eq!(theirs.cmd("EXISTS z:1"), Reply::Int(1));
    assert_eq!(ours.cmd("EXISTS z:1"), Reply::Int(0));
    // A row never written, of a counter that exists: Redis nil, shardkit "0".
    assert_eq!(theirs.cmd("GET z:2"), Reply::Bulk(None));
    assert_eq!(ours.cmd("GET z:2"), bulk("0"));
    // A counter that does not exist is nil on both.
    for c in [&mut ours, &mut theirs] {
        assert_eq!(c.cmd("GET nosuch:1"), Reply::Bulk(None));
        assert_eq!(c.cmd("HGET nosuch:1 f"), Reply::Bulk(None));
    }
    // A decrement down to 0 leaves nothing stored.
    assert_eq!(ours.cmd("INCR z:3"), Reply::Int(1));
    assert_eq!(ours.cmd("DECR z:3"), Reply::Int(0));
    assert_eq!(ours.cmd("EXISTS z:3"), Reply::Int(0));
    assert_eq!(ours.cmd("GET z:3"), bulk("0"));
    // Hash fields: a zero field does not exist.
    assert_eq!(ours.cmd("HSET zh:1 a 0 b 2"), Reply::Int(2));
    assert_eq!(theirs.cmd("HSET zh:1 a 0 b 2"), Reply::Int(2));
    assert_eq!(theirs.cmd("HEXISTS zh:1 a"), Reply::Int(1));
    assert_eq!(ours.cmd("HEXISTS zh:1 a"), Reply::Int(0));
    assert_eq!(theirs.cmd("HLEN zh:1"), Reply::Int(2));
    assert_eq!(ours.cmd("HLEN zh:1"), Reply::Int(1));
    assert_eq!(ours.cmd("HGET zh:1 a"), bulk("0"));
}

#[test]
fn counts_never_go_negative() {
    let (_dir, _server, mut ours, _redis, mut theirs) = both();
    assert_eq!(theirs.cmd("DECR n:1"), Reply::Int(-1));
    let Reply::Error(e) = ours.cmd("DECR n:1") else {
        panic!("a decrement below zero is refused")
    };
    assert!(
        e.starts_with("ERR ") && e.contains("would go below zero"),
        "{e}"
    );
    assert_eq!(ours.cmd("GET n:1"), bulk("0"));
    assert_eq!(theirs.cmd("SET n:2 -5"), Reply::Simple("OK".into()));
    let Reply::Error(e) = ours.cmd("SET n:2 -5") else {
        panic!("a negative value is refused")
    };
    assert!(e.contains("below zero"), "{e}");
    assert!(matches!(ours.cmd("HINCRBY nh:1 a -1"), Reply::Error(_)));
}

#[test]
fn values_are_integers_only() {
    let (_dir, _server, mut ours, _redis, mut theirs) = both();
    assert_eq!(theirs.cmd("SET v:1 hello"), Reply::Simple("OK".into()));
    let not_integer = Reply::Error("ERR value is not an integer or out of range".into());
    for line in [
        "SET v:1 hello",
        "SET v:1 05",
        "MSET v:1 1 v:2 x",
        "HSET vh:1 a x",
        "HSETNX vh:1 a 1.5",
    ] {
        assert_eq!(ours.cmd(line), not_integer, "{line}");
    }
    // MSET checks every pair before writing any.
    assert_eq!(ours.cmd("GET v:1"), Reply::Bulk(None));
}

#[test]
fn set_refuses_expiry_options_counters_do_not_expire() {
    let (_dir, _server, mut ours, _redis, mut theirs) = both();
    assert_eq!(theirs.cmd("SET e:1 5 EX 10"), Reply::Simple("OK".into()));
    for line in ["SET e:1 5 EX 10", "SET e:1 5 PX 10", "SET e:1 5 NX EXAT 1"] {
        let Reply::Error(e) = ours.cmd(line) else {
            panic!("{line} is refused")
        };
        assert!(e.contains("do not expire"), "{e}");
    }
    assert_eq!(ours.cmd("GET e:1"), Reply::Bulk(None), "nothing written");
}

#[test]
fn hash_fields_come_in_column_order() {
    let (_dir, _server, mut ours, _redis, mut theirs) = both();
    for c in [&mut ours, &mut theirs] {
        c.cmd("HSET o:1 b 1");
        c.cmd("HSET o:2 a 1 b 2");
    }
    // Column b was created first, so it comes first in every row of the counter.
    assert_eq!(
        theirs.cmd("HKEYS o:2"),
        Reply::Array(Some(vec![bulk("a"), bulk("b")]))
    );
    assert_eq!(
        ours.cmd("HKEYS o:2"),
        Reply::Array(Some(vec![bulk("b"), bulk("a")]))
    );
}

#[test]
fn hello_answers_redis_7s_fourteen_fields() {
    let (_dir, _server, mut ours, _redis, mut theirs) = both();
    let keys = |reply: Reply| -> Vec<Reply> {
        let Reply::Array(Some(items)) = reply else {
            panic!("HELLO answers an array")
        };
        assert_eq!(items.len(), 14);
        items.into_iter().step_by(2).collect()
    };
    assert_eq!(keys(ours.cmd("HELLO 2")), keys(theirs.cmd("HELLO 2")));
    let Reply::Array(Some(first)) = ours.cmd("HELLO") else {
        panic!()
    };
    let mut other = RawClient::connect(_server.resp);
    let Reply::Array(Some(second)) = other.cmd("HELLO") else {
        panic!()
    };
    assert_eq!(first[6], bulk("id"));
    assert_ne!(first[7], second[7], "each connection has its own id");
    assert_eq!(other.cmd("CLIENT ID"), second[7]);
    assert_eq!(first[13], Reply::Array(Some(vec![])), "no modules");
}

#[test]
fn command_info_matches_redis_for_every_command_both_have() {
    let (_dir, _server, mut ours, _redis, mut theirs) = both();
    let Reply::Array(Some(names)) = ours.cmd("COMMAND LIST") else {
        panic!()
    };
    let Reply::Int(count) = ours.cmd("COMMAND COUNT") else {
        panic!()
    };
    assert_eq!(count as usize, names.len());
    let mut compared = 0;
    for name in names {
        let name = name.text().unwrap();
        let Reply::Array(Some(mut mine)) = ours.cmd(&format!("COMMAND INFO {name}")) else {
            panic!()
        };
        let Some(Reply::Array(Some(info))) = mine.pop() else {
            panic!("{name}")
        };
        assert_eq!(info.len(), 10, "{name}");
        let Reply::Array(Some(mut redis)) = theirs.cmd(&format!("COMMAND INFO {name}")) else {
            panic!()
        };
        match redis.pop() {
            // Name, arity, flags, keys and ACL categories as Redis's own.
            Some(Reply::Array(Some(real))) => {
                assert_eq!(info[..7], real[..7], "{name}");
                compared += 1;
            }
            // SENTINEL: Redis has it in Sentinel mode only (tests/sentinel.rs compares).
            _ => assert!(
                name.contains('.') || name == "sentinel",
                "{name} is ours alone"
            ),
        }
    }
    assert!(compared >= 40, "{compared}");
    assert_eq!(
        ours.cmd("COMMAND INFO nosuch"),
        Reply::Array(Some(vec![Reply::Bulk(None)]))
    );
    let Reply::Array(Some(docs)) = ours.cmd("COMMAND DOCS get") else {
        panic!()
    };
    assert_eq!(docs[0], bulk("get"));
    let Reply::Array(Some(map)) = &docs[1] else {
        panic!()
    };
    assert_eq!(map[0], bulk("summary"));
    for line in ["COMMAND FOO", "COMMAND COUNT x"] {
        assert_eq!(ours.cmd(line), theirs.cmd(line), "{line}");
    }
}

#[test]
fn flushdb_is_durable_and_needs_the_key_when_one_is_set() {
    let dir = tempfile::tempdir().unwrap();
    {
        let server = Server::start(dir.path(), &[("SHARDKIT_API_KEY", "k3y-for-tests-only")]);
        let mut c = RawClient::connect(server.resp);
        assert!(matches!(c.cmd("FLUSHDB"), Reply::Error(e) if e.starts_with("NOAUTH")));
        assert_eq!(c.cmd("AUTH k3y-for-tests-only"), Reply::Simple("OK".into()));
        assert_eq!(c.cmd("INCRBY f:1 5"), Reply::Int(5));
        assert_eq!(c.cmd("HINCRBY g:1 a 7"), Reply::Int(7));
        assert_eq!(c.cmd("FLUSHALL SYNC"), Reply::Simple("OK".into()));
        assert_eq!(c.cmd("INCR f:2"), Reply::Int(1));
        assert_eq!(c.cmd("DBSIZE"), Reply::Int(1));
        let logged = || {
            server
                .log
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("flushed"))
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !logged() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(logged(), "the flush is logged");
        server.terminate();
    }
    let server = Server::start(dir.path(), &[]);
    let mut c = RawClient::connect(server.resp);
    assert_eq!(
        c.cmd("GET f:1"),
        bulk("0"),
        "the flush survived the restart"
    );
    assert_eq!(c.cmd("HGETALL g:1"), Reply::Array(Some(vec![])));
    assert_eq!(
        c.cmd("GET f:2"),
        bulk("1"),
        "a write after the flush survived too"
    );
    assert_eq!(c.cmd("DBSIZE"), Reply::Int(1));
}

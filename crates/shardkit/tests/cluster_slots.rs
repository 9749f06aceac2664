//! Redis Cluster's key → slot function against a real Redis 7 with `cluster-enabled`,
//! hash-tagged counter keys end to end, and the `CLUSTER` family answered as a Redis
//! without cluster support answers it (byte for byte, against a real one).

mod common;

use common::raw_resp::{RawClient, RedisServer, Reply};
use common::Server;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use shardkit_node::cluster::slot::key_slot;

/// A private Redis 7 with `cluster-enabled`, its nodes file in `dir`, announcing
/// 127.0.0.1 (so its replies name the address ours do).
fn cluster_redis(dir: &std::path::Path) -> RedisServer {
    let conf = dir.join("nodes.conf");
    RedisServer::start_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        conf.to_str().unwrap(),
        "--cluster-announce-ip",
        "127.0.0.1",
    ])
}

#[test]
fn our_slot_of_any_key_is_redis_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let redis = cluster_redis(dir.path());
    let client = std::cell::RefCell::new(RawClient::connect(redis.addr));
    // Keys of any bytes, with braces often, so every hash-tag case comes up.
    let key = prop::collection::vec(
        prop_oneof![
            3 => Just(b'{'),
            3 => Just(b'}'),
            2 => Just(b':'),
            10 => any::<u8>(),
        ],
        0..24,
    );
    let mut runner = TestRunner::new(Config {
        cases: 2_000,
        ..Config::default()
    });
    runner
        .run(&key, |key| {
            let theirs = client.borrow_mut().call(&[b"CLUSTER", b"KEYSLOT", &key]);
            prop_assert_eq!(theirs, Reply::Int(i64::from(key_slot(&key))), "{:?}", key);
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_hash_tagged_id_names_the_same_row_over_resp() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = RawClient::connect(server.resp);
    assert_eq!(c.cmd("INCRBY weibo:{123}:likes 5"), Reply::Int(5));
    assert_eq!(c.cmd("HINCRBY weibo:{123} likes 2"), Reply::Int(7));
    assert_eq!(
        c.cmd("GET weibo:123:likes"),
        Reply::Bulk(Some(b"7".to_vec()))
    );
    assert_eq!(
        c.cmd("HGET weibo:123 likes"),
        Reply::Bulk(Some(b"7".to_vec()))
    );
    assert_eq!(c.cmd("INCR weibo:{123}"), Reply::Int(1));
    assert_eq!(c.cmd("GET weibo:123"), Reply::Bulk(Some(b"1".to_vec())));
    // The HTTP API takes the tagged id too.
    let row: serde_json::Value =
        reqwest::blocking::get(server.url("/api/counters/weibo/%7B123%7D"))
            .unwrap()
            .json()
            .unwrap();
    assert_eq!(row["values"]["likes"], 7, "{row}");
    // A tag spanning colons is one string row.
    assert_eq!(c.cmd("INCR pv:{home:page}:views"), Reply::Int(1));
    assert_eq!(
        c.cmd("HGET pv:{home:page} views"),
        Reply::Bulk(Some(b"1".to_vec()))
    );
}

#[test]
fn cluster_commands_answer_as_a_redis_without_cluster_support() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let redis = RedisServer::start();
    let mut ours = RawClient::connect(server.resp);
    let mut theirs = RawClient::connect(redis.addr);
    for line in [
        "CLUSTER INFO",
        "CLUSTER SLOTS",
        "CLUSTER SHARDS",
        "CLUSTER NODES",
        "CLUSTER MYID",
        "CLUSTER KEYSLOT foo",
        "ASKING",
        "READONLY",
        "READWRITE",
        "CLUSTER",
        "ASKING extra",
    ] {
        let (a, a_bytes) = ours.raw(&line.split(' ').map(str::as_bytes).collect::<Vec<_>>());
        let (b, b_bytes) = theirs.raw(&line.split(' ').map(str::as_bytes).collect::<Vec<_>>());
        assert_eq!(a, b, "{line}");
        assert_eq!(a_bytes, b_bytes, "{line}");
    }
}

#[test]
fn cluster_replies_are_redis_7s_byte_for_byte() {
    use shardkit::resp::cluster::replies;
    use shardkit_node::cluster::map::{NodeInfo, SlotMap};
    let dir = tempfile::tempdir().unwrap();
    let redis = cluster_redis(dir.path());
    let mut c = RawClient::connect(redis.addr);
    assert_eq!(
        c.cmd("CLUSTER ADDSLOTSRANGE 0 8191"),
        Reply::Simple("OK".into())
    );
    let Reply::Bulk(Some(id)) = c.cmd("CLUSTER MYID") else {
        panic!("CLUSTER MYID")
    };
    let id = String::from_utf8(id).unwrap();
    // The same cluster as a map: two groups, the first served by that node.
    let node = NodeInfo {
        id: id.clone(),
        host: "127.0.0.1".into(),
        port: redis.addr.port(),
        http: String::new(),
    };
    let map = SlotMap {
        version: 0,
        groups: 2,
        owner: vec![Some(id.clone()), None],
        replicas: vec![vec![], vec![]],
        nodes: [(id.clone(), node)].into_iter().collect(),
    };
    let ours = |write: &dyn Fn(&mut bytes::BytesMut)| {
        let mut out = bytes::BytesMut::new();
        write(&mut out);
        out.to_vec()
    };
    let theirs = |c: &mut RawClient, line: &str| {
        c.raw(&line.split(' ').map(str::as_bytes).collect::<Vec<_>>())
            .1
    };
    assert_eq!(
        String::from_utf8_lossy(&ours(&|o| replies::slots(&map, o))),
        String::from_utf8_lossy(&theirs(&mut c, "CLUSTER SLOTS"))
    );
    assert_eq!(
        String::from_utf8_lossy(&ours(&|o| replies::shards(&map, false, o))),
        String::from_utf8_lossy(&theirs(&mut c, "CLUSTER SHARDS"))
    );
    assert_eq!(
        String::from_utf8_lossy(&ours(&|o| replies::nodes(&map, &id, o))),
        String::from_utf8_lossy(&theirs(&mut c, "CLUSTER NODES"))
    );
    assert_eq!(
        String::from_utf8_lossy(&ours(&|o| replies::info(&map, o))),
        String::from_utf8_lossy(&theirs(&mut c, "CLUSTER INFO"))
    );
}

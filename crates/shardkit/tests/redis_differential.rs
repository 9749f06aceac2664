//! The same command sequences go to shardkit and to a private Redis 7; their replies
//! must be equal byte for byte, except where the README's table of deliberate
//! differences says otherwise. The comparator applies exactly those rows:
//!
//! - zero is absence: after each command every zero Redis holds in the keys it touched
//!   is deleted (shardkit stores no zero), and a cell read may answer `"0"` where Redis
//!   answers nil (an unwritten row of an existing counter);
//! - counts never go negative: where shardkit refuses a decrement below zero, Redis's
//!   negative result is undone;
//! - `HGETALL`/`HKEYS`/`HVALS` list fields in column order, Redis in insertion order:
//!   compared as sorted lists.
//!
//! Each of those rows has a test of its own in `resp_differences.rs`.

mod common;

use common::raw_resp::{RawClient, RedisServer, Reply};
use common::Server;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Keys of three shapes, kept apart so no key is used both as a string and a hash:
/// `s:<id>` (column `value`), `t:<id>:n` (column `n`), hashes `h:<id>` (fields a b c).
const STRING_KEYS: &[&str] = &["s:1", "s:2", "s:3", "t:1:n", "t:2:n"];
const HASH_KEYS: &[&str] = &["h:1", "h:2", "h:3"];
const FIELDS: &[&str] = &["a", "b", "c"];

fn edge_value() -> impl Strategy<Value = i64> {
    prop_oneof![
        0i64..4,
        Just((1 << 15) - 1),
        Just(1 << 15),
        Just((1 << 16) - 1),
        Just(1 << 16),
        Just((1 << 31) - 1),
        Just(1 << 31),
        Just((1 << 32) - 1),
        Just(1 << 32),
        Just(i64::MAX - 1),
        Just(i64::MAX),
    ]
}

/// A value for SET/MSET/HSET: an integer from 0 up (negatives are their own test).
fn value() -> impl Strategy<Value = String> {
    edge_value().prop_map(|v| v.to_string())
}

/// A delta: near the edges, either sign, and text Redis refuses as an integer.
fn delta() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => edge_value().prop_map(|v| v.to_string()),
        6 => edge_value().prop_map(|v| (-v).to_string()),
        1 => Just(i64::MIN.to_string()),
        1 => prop::sample::select(vec!["05", "-0", "+1", " 1", "1 ", "9223372036854775808", "1.5", ""]).prop_map(str::to_string),
    ]
}

fn skey() -> impl Strategy<Value = String> {
    prop::sample::select(STRING_KEYS).prop_map(str::to_string)
}

fn hkey() -> impl Strategy<Value = String> {
    prop::sample::select(HASH_KEYS).prop_map(str::to_string)
}

fn field() -> impl Strategy<Value = String> {
    prop::sample::select(FIELDS).prop_map(str::to_string)
}

fn any_key() -> impl Strategy<Value = String> {
    prop_oneof![skey(), hkey()]
}

fn words(parts: Vec<String>) -> Vec<String> {
    parts
}

/// One command over the supported set, as its arguments.
fn command() -> impl Strategy<Value = Vec<String>> {
    let set_opts = prop::sample::select(vec![
        vec![],
        vec!["NX"],
        vec!["XX"],
        vec!["GET"],
        vec!["NX", "GET"],
        vec!["XX", "GET"],
    ]);
    prop_oneof![
        skey().prop_map(|k| words(vec!["GET".into(), k])),
        skey().prop_map(|k| words(vec!["INCR".into(), k])),
        skey().prop_map(|k| words(vec!["DECR".into(), k])),
        (skey(), delta()).prop_map(|(k, d)| vec!["INCRBY".into(), k, d]),
        (skey(), delta()).prop_map(|(k, d)| vec!["DECRBY".into(), k, d]),
        (skey(), value(), set_opts).prop_map(|(k, v, o)| {
            let mut c = vec!["SET".to_string(), k, v];
            c.extend(o.into_iter().map(str::to_string));
            c
        }),
        skey().prop_map(|k| vec!["GETDEL".into(), k]),
        prop::collection::vec(skey(), 1..4).prop_map(|ks| [vec!["MGET".to_string()], ks].concat()),
        prop::collection::vec((skey(), value()), 1..3).prop_map(|kv| {
            let mut c = vec!["MSET".to_string()];
            kv.into_iter().for_each(|(k, v)| c.extend([k, v]));
            c
        }),
        prop::collection::vec((skey(), value()), 1..3).prop_map(|kv| {
            let mut c = vec!["MSETNX".to_string()];
            kv.into_iter().for_each(|(k, v)| c.extend([k, v]));
            c
        }),
        (
            prop::sample::select(vec!["DEL", "UNLINK", "EXISTS", "TOUCH"]),
            prop::collection::vec(any_key(), 1..4)
        )
            .prop_map(|(c, ks)| [vec![c.to_string()], ks].concat()),
        (hkey(), field(), delta()).prop_map(|(k, f, d)| vec!["HINCRBY".into(), k, f, d]),
        (hkey(), field()).prop_map(|(k, f)| vec!["HGET".into(), k, f]),
        (hkey(), field()).prop_map(|(k, f)| vec!["HEXISTS".into(), k, f]),
        (hkey(), field()).prop_map(|(k, f)| vec!["HSTRLEN".into(), k, f]),
        (hkey(), prop::collection::vec(field(), 1..4)).prop_map(|(k, fs)| [
            vec!["HMGET".to_string(), k],
            fs
        ]
        .concat()),
        (hkey(), prop::collection::vec(field(), 1..4)).prop_map(|(k, fs)| [
            vec!["HDEL".to_string(), k],
            fs
        ]
        .concat()),
        (
            prop::sample::select(vec!["HGETALL", "HKEYS", "HVALS", "HLEN"]),
            hkey()
        )
            .prop_map(|(c, k)| vec![c.to_string(), k]),
        (
            prop::sample::select(vec!["HSET", "HMSET"]),
            hkey(),
            prop::collection::vec((field(), value()), 1..3)
        )
            .prop_map(|(c, k, fv)| {
                let mut cmd = vec![c.to_string(), k];
                fv.into_iter().for_each(|(f, v)| cmd.extend([f, v]));
                cmd
            }),
        (hkey(), field(), value()).prop_map(|(k, f, v)| vec!["HSETNX".into(), k, f, v]),
    ]
}

/// Both servers, side by side.
struct Pair {
    ours: RawClient,
    redis: RawClient,
}

impl Pair {
    /// Sends `args` to both and checks the replies under the documented differences.
    fn check(&mut self, args: &[String]) -> Result<(), String> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let (ours, ours_raw) = self.ours.raw(&bytes);
        let (theirs, theirs_raw) = self.redis.raw(&bytes);
        let name = args[0].to_ascii_uppercase();
        let same = ours_raw == theirs_raw || documented(&name, &ours, &theirs);
        let negative_undone = self.undo_negative(args, &ours, &theirs);
        self.drop_redis_zeros(args);
        if same || negative_undone {
            Ok(())
        } else {
            Err(format!(
                "{args:?}\n  shardkit: {}\n  redis:    {}",
                String::from_utf8_lossy(&ours_raw).escape_debug(),
                String::from_utf8_lossy(&theirs_raw).escape_debug()
            ))
        }
    }

    /// Where shardkit refused to go below zero and Redis went there, puts Redis back.
    fn undo_negative(&mut self, args: &[String], ours: &Reply, theirs: &Reply) -> bool {
        let (Reply::Error(e), Reply::Int(now)) = (ours, theirs) else {
            return false;
        };
        if !e.contains("would go below zero") || *now >= 0 {
            return false;
        }
        let name = args[0].to_ascii_uppercase();
        let delta: i128 = match name.as_str() {
            "INCR" => 1,
            "DECR" => -1,
            "INCRBY" => args[2].parse().unwrap(),
            "DECRBY" => -args[2].parse::<i128>().unwrap(),
            "HINCRBY" => args[3].parse().unwrap(),
            _ => return false,
        };
        let old = (i128::from(*now) - delta).to_string();
        if name == "HINCRBY" {
            self.redis.call(&[
                b"HSET",
                args[1].as_bytes(),
                args[2].as_bytes(),
                old.as_bytes(),
            ]);
        } else {
            self.redis
                .call(&[b"SET", args[1].as_bytes(), old.as_bytes()]);
        }
        true
    }

    /// shardkit stores no zero: remove Redis's zeros from the keys the command named.
    fn drop_redis_zeros(&mut self, args: &[String]) {
        for key in args.iter().skip(1) {
            if STRING_KEYS.contains(&key.as_str()) {
                if self.redis.call(&[b"GET", key.as_bytes()]).text().as_deref() == Some("0") {
                    self.redis.call(&[b"DEL", key.as_bytes()]);
                }
            } else if HASH_KEYS.contains(&key.as_str()) {
                if let Reply::Array(Some(items)) = self.redis.call(&[b"HGETALL", key.as_bytes()]) {
                    for pair in items.chunks(2) {
                        if pair[1].text().as_deref() == Some("0") {
                            let field = pair[0].text().unwrap();
                            self.redis
                                .call(&[b"HDEL", key.as_bytes(), field.as_bytes()]);
                        }
                    }
                }
            }
        }
    }
}

/// The README's deliberate differences that can show in a reply.
fn documented(name: &str, ours: &Reply, theirs: &Reply) -> bool {
    match name {
        // A cell read answers "0" for an unwritten row of an existing counter.
        "GET" | "GETDEL" | "SET" | "HGET" | "MGET" | "HMGET" => zero_for_nil(ours, theirs),
        // Column order, not insertion order.
        "HGETALL" => sorted_pairs(ours) == sorted_pairs(theirs),
        "HKEYS" | "HVALS" => sorted(ours) == sorted(theirs),
        _ => false,
    }
}

fn zero_for_nil(ours: &Reply, theirs: &Reply) -> bool {
    match (ours, theirs) {
        (Reply::Bulk(Some(zero)), Reply::Bulk(None)) => zero == b"0",
        (Reply::Array(Some(a)), Reply::Array(Some(b))) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y || zero_for_nil(x, y))
        }
        _ => false,
    }
}

fn sorted(reply: &Reply) -> Option<Vec<Vec<u8>>> {
    let Reply::Array(Some(items)) = reply else {
        return None;
    };
    let mut all: Vec<Vec<u8>> = items.iter().map(Reply::to_bytes).collect();
    all.sort();
    Some(all)
}

fn sorted_pairs(reply: &Reply) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let Reply::Array(Some(items)) = reply else {
        return None;
    };
    let mut pairs: Vec<_> = items
        .chunks(2)
        .map(|p| (p[0].to_bytes(), p[1].to_bytes()))
        .collect();
    pairs.sort();
    Some(pairs)
}

fn fresh_pair(server: &Server, redis: &RedisServer) -> Pair {
    let mut pair = Pair {
        ours: RawClient::connect(server.resp),
        redis: RawClient::connect(redis.addr),
    };
    for client in [&mut pair.ours, &mut pair.redis] {
        assert_eq!(client.cmd("FLUSHALL"), Reply::Simple("OK".into()));
    }
    pair
}

#[test]
fn generated_sequences_answer_as_redis_does() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let redis = RedisServer::start();
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(command(), 1..40), |commands| {
            let mut pair = fresh_pair(&server, &redis);
            for args in &commands {
                pair.check(args).map_err(TestCaseError::fail)?;
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn hand_written_edge_cases_answer_as_redis_does() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let redis = RedisServer::start();
    let mut pair = fresh_pair(&server, &redis);
    let max = i64::MAX.to_string();
    let lines: Vec<String> = vec![
        // Overflow is refused and changes nothing.
        format!("SET s:1 {max}"),
        "INCR s:1".into(),
        format!("INCRBY s:1 {max}"),
        "GET s:1".into(),
        format!("INCRBY s:2 {max}"),
        "INCRBY s:2 1".into(),
        "DECRBY s:2 -1".into(),
        format!("DECRBY s:2 {}", i64::MIN),
        "GET s:2".into(),
        format!("HINCRBY h:1 a {max}"),
        format!("HINCRBY h:1 a {max}"),
        "HGET h:1 a".into(),
        // Integers as strict as Redis.
        "INCRBY s:3 05".into(),
        "INCRBY s:3 -0".into(),
        "INCRBY s:3 +1".into(),
        "INCRBY s:3 9223372036854775808".into(),
        "HINCRBY h:2 a 05".into(),
        // Arity errors and the command table.
        "GET".into(),
        "GET s:1 s:2".into(),
        "INCRBY s:1".into(),
        "HSET h:1 a".into(),
        "HSET h:1 a 1 b".into(),
        "MSET s:1 1 s:2".into(),
        "HGETALL".into(),
        "NOSUCH a b".into(),
        "nosuch".into(),
        "SET s:1 1 NX XX".into(),
        "SET s:1 1 BOGUS".into(),
        "PING".into(),
        "PING hello".into(),
        "ECHO hi".into(),
        "SELECT 0".into(),
        "SELECT 05".into(),
        "FLUSHDB NOW".into(),
        // Hashes answer only fields that hold a value.
        "HINCRBY h:3 a 1".into(),
        "HINCRBY h:3 b 2".into(),
        "HINCRBY h:3 c 3".into(),
        "HDEL h:3 a c".into(),
        "HGETALL h:3".into(),
        "HLEN h:3".into(),
        "HKEYS h:3".into(),
        "HVALS h:3".into(),
        "HEXISTS h:3 b".into(),
        "HEXISTS h:3 a".into(),
        "HSTRLEN h:3 b".into(),
        "HSETNX h:3 b 9".into(),
        "HSETNX h:3 a 9".into(),
        "HMSET h:3 a 1 c 4".into(),
        "HSET h:3 a 1 c 5 z 2".into(),
        "GETDEL s:1".into(),
        "GETDEL s:1".into(),
        "MSET s:1 4 s:2 5".into(),
        "MSETNX s:1 6 s:3 7".into(),
        "MGET s:1 s:2 s:3".into(),
        "SET s:1 8 GET".into(),
        "SET s:1 9 XX GET".into(),
        "SET s:1 10 NX".into(),
        "EXISTS s:1 s:2 s:3 h:3".into(),
        "TOUCH s:1 s:3".into(),
        "UNLINK s:1 s:3".into(),
        "DEL s:2 h:3".into(),
        "EXISTS s:1 s:2 h:3".into(),
    ];
    let mut failures = Vec::new();
    for line in &lines {
        let args: Vec<String> = line.split(' ').map(str::to_string).collect();
        if let Err(e) = pair.check(&args) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

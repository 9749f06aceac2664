//! A pipeline answers exactly as the same commands sent one at a time.
//!
//! Pipelined increments of one counter and column reach the engine together
//! (`resp/incr_run.rs`), so this drives two servers with the same random sequences of
//! increments mixed with reads, errors, other counters and columns, unknown commands
//! and bad arguments: one server gets each sequence in a single write, the other one
//! command at a time. Every reply must be equal, in order, and the stored values too.

mod common;

use common::raw_resp::{RawClient, Reply};
use common::Server;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn command() -> impl Strategy<Value = Vec<String>> {
    let key = prop::sample::select(vec!["p:1", "p:2", "p:1:likes", "q:1", "p:7", "bad"]);
    let hkey = prop::sample::select(vec!["p:1", "q:1", "nocolon"]);
    let field = prop::sample::select(vec!["value", "likes", "views"]);
    let delta = prop_oneof![
        6 => (-3i64..6).prop_map(|d| d.to_string()),
        1 => Just(i64::MAX.to_string()),
        1 => Just("x".to_string()),
    ];
    prop_oneof![
        8 => key.clone().prop_map(|k| vec!["INCR".into(), k.into()]),
        4 => (key.clone(), delta.clone()).prop_map(|(k, d)| vec!["INCRBY".into(), k.into(), d]),
        3 => key.clone().prop_map(|k| vec!["DECR".into(), k.into()]),
        3 => (key.clone(), delta.clone()).prop_map(|(k, d)| vec!["DECRBY".into(), k.into(), d]),
        4 => (hkey.clone(), field.clone(), delta).prop_map(|(k, f, d)| vec!["HINCRBY".into(), k.into(), f.into(), d]),
        2 => key.clone().prop_map(|k| vec!["GET".into(), k.into()]),
        1 => (hkey, field).prop_map(|(k, f)| vec!["HGET".into(), k.into(), f.into()]),
        1 => Just(vec!["INCR".into()]),
        1 => Just(vec!["NOSUCH".into(), "p:1".into()]),
        1 => Just(vec!["PING".into()]),
    ]
}

fn as_args(commands: &[Vec<String>]) -> Vec<Vec<Vec<u8>>> {
    commands
        .iter()
        .map(|c| c.iter().map(|a| a.as_bytes().to_vec()).collect())
        .collect()
}

#[test]
fn a_pipeline_answers_as_the_same_commands_one_at_a_time() {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (piped, single) = (
        Server::start(dir_a.path(), &[]),
        Server::start(dir_b.path(), &[]),
    );
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(command(), 1..60), |commands| {
            let args = as_args(&commands);
            let mut a = RawClient::connect(piped.resp);
            let mut b = RawClient::connect(single.resp);
            for c in [&mut a, &mut b] {
                c.cmd("FLUSHALL");
            }
            let together = a.pipeline(&args);
            let alone: Vec<Reply> = args
                .iter()
                .map(|c| {
                    let c: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
                    b.call(&c)
                })
                .collect();
            for (i, (x, y)) in together.iter().zip(&alone).enumerate() {
                prop_assert_eq!(x, y, "reply {} to {:?} in {:?}", i, commands[i], commands);
            }
            for key in ["p:1", "p:2", "p:1:likes", "q:1", "p:7"] {
                prop_assert_eq!(a.cmd(&format!("GET {key}")), b.cmd(&format!("GET {key}")));
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_long_pipeline_of_increments_counts_every_one_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = RawClient::connect(server.resp);
    // 3,000 increments over 100 ids: several runs of the longest length, many stripes.
    let commands: Vec<Vec<Vec<u8>>> = (0..3_000u64)
        .map(|i| {
            vec![
                b"INCR".to_vec(),
                format!("hits:{}", (i * 37) % 100).into_bytes(),
            ]
        })
        .collect();
    let replies = c.pipeline(&commands);
    let mut seen = [0i64; 100];
    for (i, reply) in replies.iter().enumerate() {
        let id = (i as u64 * 37 % 100) as usize;
        seen[id] += 1;
        assert_eq!(reply, &Reply::Int(seen[id]), "reply {i}");
    }
    drop(c);
    // After a restart (the log replayed), every row holds its 30.
    server.terminate();
    let server = Server::start(dir.path(), &[]);
    let mut c = RawClient::connect(server.resp);
    for id in 0..100 {
        assert_eq!(
            c.cmd(&format!("GET hits:{id}")),
            Reply::Bulk(Some(b"30".to_vec()))
        );
    }
}

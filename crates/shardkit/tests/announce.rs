//! The addresses a replication-mode node hands out: bound to 0.0.0.0 it refuses to
//! start without `counters.announce` (clients would be told to dial 0.0.0.0), and with
//! it Sentinel and `INFO replication` give the announced address.

#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use common::Server;

const KEY: &str = "announce-test-key-0123456789";

#[test]
fn a_node_on_all_interfaces_needs_an_announce_and_hands_it_out() {
    let nats = Nats::start();
    let dir = tempfile::tempdir().unwrap();
    let env = |extra: Option<(&'static str, &'static str)>| {
        let mut env = vec![
            ("SHARDKIT_COUNTERS_LOG", "jetstream"),
            ("SHARDKIT_NATS_URL", nats.url.as_str()),
            ("SHARDKIT_API_KEY", KEY),
        ];
        env.extend(extra);
        env
    };
    let args = ["--http", "0.0.0.0:0", "--resp", "0.0.0.0:0"];
    let refused = Server::try_start(&dir.path().join("bare"), &args, &env(None))
        .err()
        .expect("a node on 0.0.0.0 without an announce started");
    assert!(
        refused.contains("counters.announce") && refused.contains("0.0.0.0"),
        "{refused}"
    );
    assert!(
        !dir.path().join("bare").exists(),
        "a refused start wrote its data directory"
    );
    let bad = Server::try_start(
        &dir.path().join("bad"),
        &args,
        &env(Some(("SHARDKIT_COUNTERS_ANNOUNCE", "db1.example"))),
    )
    .err()
    .expect("an announce without a port was taken");
    assert!(bad.contains("counters.announce must be host:port"), "{bad}");

    let server = Server::try_start(
        &dir.path().join("node"),
        &args,
        &env(Some(("SHARDKIT_COUNTERS_ANNOUNCE", "db1.example:6390"))),
    )
    .expect("starts with an announce");
    let mut con = redis::Client::open(format!("redis://:{KEY}@127.0.0.1:{}/", server.resp.port()))
        .unwrap()
        .get_connection()
        .unwrap();
    // Once it leads, Sentinel names it by its announced address.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let addr: Option<Vec<String>> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg("counters")
            .query(&mut con)
            .unwrap_or(None);
        if let Some(addr) = addr {
            assert_eq!(addr, vec!["db1.example".to_string(), "6390".to_string()]);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never led");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

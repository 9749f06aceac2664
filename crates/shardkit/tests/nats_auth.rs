//! NATS as operators run it: a node given several servers starts while the first is
//! down; a NATS with users takes the node's password (from the environment or a file)
//! and refuses a wrong one with an error naming the setting; a NATS with mutual TLS
//! takes the node's certificate; `--print-config` never shows a secret.

#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use common::pki::Pki;
use common::Server;
use std::path::Path;
use std::process::Command;

/// Starts a replication-mode node on `nats_url` with `env` added.
fn node(data: &Path, nats_url: &str, env: &[(&str, &str)]) -> Result<Server, String> {
    let mut all = vec![
        ("SHARDKIT_COUNTERS_LOG", "jetstream"),
        ("SHARDKIT_NATS_URL", nats_url),
        ("SHARDKIT_COUNTERS_LEASE_MS", "1000"),
    ];
    all.extend_from_slice(env);
    Server::try_start(
        data,
        &["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"],
        &all,
    )
}

/// An increment through the node, read back: the node is writing to JetStream.
fn writes(server: &Server) {
    let mut con = server.redis();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        match redis::cmd("INCR").arg("t:1:n").query::<i64>(&mut con) {
            Ok(n) => {
                assert_eq!(n, 1);
                return;
            }
            // The lease is taken a moment after the start.
            Err(e) if std::time::Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Err(e) => panic!("the node never took a write: {e}"),
        }
    }
}

fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_node_given_several_servers_starts_while_the_first_is_down() {
    let nats = Nats::start();
    let dir = tempfile::tempdir().unwrap();
    let urls = format!("nats://127.0.0.1:{},{}", dead_port(), nats.url);
    let server = node(dir.path(), &urls, &[]).expect("starts on the second server");
    writes(&server);
}

#[test]
fn a_nats_with_users_takes_the_password_and_refuses_a_wrong_one_by_name() {
    let nats = Nats::start_with("authorization { user: node, password: s3cret-pw }");
    let dir = tempfile::tempdir().unwrap();
    let wrong = node(
        &dir.path().join("wrong"),
        &nats.url,
        &[
            ("SHARDKIT_NATS_USER", "node"),
            ("SHARDKIT_NATS_PASSWORD", "nope"),
        ],
    );
    let stderr = match wrong {
        Ok(_) => panic!("a wrong password was taken"),
        Err(stderr) => stderr,
    };
    assert!(
        stderr.contains("authorization violation") && stderr.contains("nats.user"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("s3cret-pw") && !stderr.contains("nope"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("wrong").exists(),
        "a refused start wrote its data directory"
    );
    let none = node(&dir.path().join("none"), &nats.url, &[]);
    assert!(none.is_err(), "no credentials were taken");

    // The password from a file named in the config.
    let secret = dir.path().join("password");
    std::fs::write(&secret, "s3cret-pw\n").unwrap();
    let config = dir.path().join("shardkit.toml");
    std::fs::write(
        &config,
        format!("[nats]\nuser = \"node\"\npassword_file = {:?}\n", secret),
    )
    .unwrap();
    let server = node(
        &dir.path().join("right"),
        &nats.url,
        &[("SHARDKIT_CONFIG", config.to_str().unwrap())],
    )
    .expect("the right password is taken");
    writes(&server);
}

#[test]
fn print_config_shows_secrets_as_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["serve", "--print-config", "--data"])
        .arg(dir.path())
        .env("SHARDKIT_NATS_URL", "nats://a:4222,nats://b:4222")
        .env("SHARDKIT_NATS_USER", "node")
        .env("SHARDKIT_NATS_PASSWORD", "hunter2-secret")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(r#"password = "<set>""#), "{text}");
    assert!(!text.contains("hunter2-secret"), "{text}");
    assert!(
        text.contains(r#""nats://a:4222","#) && text.contains(r#""nats://b:4222","#),
        "{text}"
    );

    let bad = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["serve", "--print-config", "--data"])
        .arg(dir.path())
        .env("SHARDKIT_NATS_URL", "nats://a:4222,http://b:80")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("nats.url \"http://b:80\""), "{stderr}");
}

#[test]
fn a_nats_with_mutual_tls_takes_the_nodes_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::make(dir.path());
    let nats = Nats::start_with(&format!(
        "tls {{ cert_file: {:?}, key_file: {:?}, ca_file: {:?}, verify: true, timeout: 5 }}",
        pki.server_cert, pki.server_key, pki.ca
    ));
    let config = |name: &str, body: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("[nats]\n{body}")).unwrap();
        path
    };
    let without_cert = config("ca-only.toml", &format!("tls_ca = {:?}\n", pki.ca));
    let refused = node(
        &dir.path().join("no-cert"),
        &nats.url,
        &[("SHARDKIT_CONFIG", without_cert.to_str().unwrap())],
    );
    let stderr = refused
        .err()
        .expect("a node without a client certificate was let in");
    assert!(stderr.contains("nats.tls_cert"), "{stderr}");
    assert!(
        !dir.path().join("no-cert").exists(),
        "a refused start wrote its data directory: {stderr}"
    );
    // A server certificate from a CA the node does not trust is refused by the node.
    let other = Pki::make(&dir.path().join("other-ca"));
    let wrong_ca = config(
        "wrong-ca.toml",
        &format!(
            "tls_ca = {:?}\ntls_cert = {:?}\ntls_key = {:?}\n",
            other.ca, other.client_cert, other.client_key
        ),
    );
    let stderr = node(
        &dir.path().join("wrong-ca"),
        &nats.url,
        &[("SHARDKIT_CONFIG", wrong_ca.to_str().unwrap())],
    )
    .err()
    .expect("a server certificate from an unknown CA was trusted");
    assert!(stderr.contains("certificate"), "{stderr}");
    let mutual = config(
        "mutual.toml",
        &format!(
            "tls_ca = {:?}\ntls_cert = {:?}\ntls_key = {:?}\n",
            pki.ca, pki.client_cert, pki.client_key
        ),
    );
    let server = node(
        &dir.path().join("mutual"),
        &nats.url,
        &[("SHARDKIT_CONFIG", mutual.to_str().unwrap())],
    )
    .expect("the node's certificate is taken");
    writes(&server);
}

#[test]
fn a_nats_with_an_expired_certificate_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::make_expired(dir.path());
    let nats = Nats::start_with(&format!(
        "tls {{ cert_file: {:?}, key_file: {:?}, timeout: 5 }}",
        pki.server_cert, pki.server_key
    ));
    let config = dir.path().join("shardkit.toml");
    std::fs::write(&config, format!("[nats]\ntls_ca = {:?}\n", pki.ca)).unwrap();
    let data = dir.path().join("data");
    let stderr = node(
        &data,
        &nats.url,
        &[("SHARDKIT_CONFIG", config.to_str().unwrap())],
    )
    .err()
    .expect("an expired server certificate was trusted");
    assert!(
        stderr.contains("nats.tls_ca") && stderr.to_lowercase().contains("expired"),
        "{stderr}"
    );
    assert!(
        !data.exists(),
        "a refused start wrote its data directory: {stderr}"
    );
}

//! TLS where web servers and Redis have it, tried with the clients people use: HTTPS on
//! the HTTP port (curl; short URLs come out `https://`; a renewed certificate is taken
//! on SIGHUP and a broken one is not), the Redis protocol on a TLS port beside or
//! instead of the plain one (redis-cli `--tls`, redis-py `ssl=True`, ioredis `tls`),
//! client certificates required when `[resp] tls_ca` is set, `https://` peers between
//! regions trusting `[regions] tls_ca`, and files that do not parse refused at start by
//! the setting's name with nothing written. The CA and certificates are made by the
//! test.

#![cfg(feature = "tls")]

mod common;

use common::delay_proxy::DelayProxy;
use common::pki::Pki;
use common::Server;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const KEY: &str = "tls-test-key-0123456789";

fn text(output: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `curl` with the CA `ca` (and only it) trusted; its output.
fn curl(ca: &Path, args: &[&str]) -> Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(ca)
        .args(args)
        .output()
        .expect("curl runs")
}

/// The command printed `expected` (trimmed); else a panic with all it said.
fn says(out: &Output, expected: &str) {
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        expected,
        "{}",
        text(out)
    );
}

/// The command did not print `refused` (a connection that must not be served).
fn says_not(out: &Output, refused: &str) {
    assert_ne!(
        String::from_utf8_lossy(&out.stdout).trim(),
        refused,
        "{}",
        text(out)
    );
}

fn curl_ok(ca: &Path, url: &str) -> Result<String, String> {
    let out = curl(ca, &["-f", url]);
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(text(&out))
    }
}

/// Where `scripts/client-deps` installs redis-py and ioredis.
fn clients_dir() -> PathBuf {
    std::env::var_os("SHARDKIT_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/shardkit/clients")
        })
}

#[test]
fn https_serves_with_curl_and_takes_a_renewed_certificate_on_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let first = Pki::make(&dir.path().join("first"));
    // The files the server is given; a renewal overwrites them.
    let cert = dir.path().join("https.pem");
    let key = dir.path().join("https-key.pem");
    std::fs::copy(&first.server_cert, &cert).unwrap();
    std::fs::copy(&first.server_key, &key).unwrap();
    let server = Server::start_with_config(
        dir.path(),
        &format!("[http]\ntls_cert = {cert:?}\ntls_key = {key:?}\n"),
    );
    let https = |path: &str| format!("https://127.0.0.1:{}{path}", server.http.port());
    assert!(curl_ok(&first.ca, &https("/healthz"))
        .unwrap()
        .contains("\"ok\""));
    // Plain HTTP on the HTTPS port gets no HTTP answer.
    let plain = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "5",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .arg(format!("http://127.0.0.1:{}/healthz", server.http.port()))
        .output()
        .unwrap();
    assert_ne!(
        String::from_utf8_lossy(&plain.stdout),
        "200",
        "{}",
        text(&plain)
    );
    // A short URL built from the request's Host says https.
    let created = curl(
        &first.ca,
        &[
            "-f",
            "-H",
            "content-type: application/json",
            "-d",
            r#"{"url":"https://example.com/tls"}"#,
            &https("/api/links"),
        ],
    );
    assert!(created.status.success(), "{}", text(&created));
    let body: serde_json::Value = serde_json::from_slice(&created.stdout).unwrap();
    let short = body["short_url"].as_str().unwrap();
    assert!(
        short.starts_with(&format!("https://127.0.0.1:{}/", server.http.port())),
        "{body}"
    );
    // A CA the server's certificate is not from: refused by the client.
    let other = Pki::make(&dir.path().join("second"));
    assert!(curl_ok(&other.ca, &https("/healthz")).is_err());

    // Renewed (here: from another CA, so the switch shows), then SIGHUP.
    std::fs::copy(&other.server_cert, &cert).unwrap();
    std::fs::copy(&other.server_key, &key).unwrap();
    sighup(&server);
    wait_until("the renewed certificate is served", || {
        curl_ok(&other.ca, &https("/healthz")).is_ok()
    });
    assert!(curl_ok(&first.ca, &https("/healthz")).is_err());

    // A renewal that went wrong (a key that does not parse): the one in use stays.
    std::fs::write(
        &key,
        "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    sighup(&server);
    wait_until("the failed reload is logged", || {
        server
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("not reloaded") && l.contains("http.tls_key"))
    });
    assert!(curl_ok(&other.ca, &https("/healthz"))
        .unwrap()
        .contains("\"ok\""));
}

fn sighup(server: &Server) {
    let status = Command::new("kill")
        .args(["-HUP", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A server with the Redis protocol on a TLS port beside the plain one.
fn resp_tls_server(dir: &Path, pki: &Pki, extra: &str) -> (Server, u16) {
    let server = Server::start_with_config(
        dir,
        &format!(
            "api_key = \"{KEY}\"\n[resp]\nlisten = \"127.0.0.1:0\"\ntls = \"127.0.0.1:0\"\n\
             tls_cert = {:?}\ntls_key = {:?}\n{extra}",
            pki.server_cert, pki.server_key
        ),
    );
    let line = server
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("shardkit listening"))
        .cloned()
        .unwrap();
    let start = line.find("resp_tls=").unwrap() + "resp_tls=".len();
    let addr: std::net::SocketAddr = line[start..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (server, addr.port())
}

/// `redis-cli --tls` to `port`, trusting `pki`'s CA, showing `client`'s certificate if
/// given, logged in with the key.
fn redis_cli(port: u16, pki: &Pki, client: Option<&Pki>, args: &[&str]) -> Output {
    let mut cmd = Command::new("redis-cli");
    cmd.args([
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--tls",
        "--cacert",
    ])
    .arg(&pki.ca);
    if let Some(client) = client {
        cmd.arg("--cert")
            .arg(&client.client_cert)
            .arg("--key")
            .arg(&client.client_key);
    }
    cmd.args(["--user", "default", "--pass", KEY, "--no-auth-warning"])
        .args(args)
        .output()
        .expect("redis-cli runs")
}

#[test]
fn the_redis_protocol_over_tls_with_redis_cli_redis_py_and_ioredis() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::make(&dir.path().join("pki"));
    let (server, tls_port) = resp_tls_server(dir.path(), &pki, "");
    let out = redis_cli(tls_port, &pki, None, &["INCRBY", "tls:cli", "5"]);
    says(&out, "5");
    // The plain port still serves, and sees the same counters.
    let mut plain = server.redis();
    let () = redis::cmd("AUTH").arg(KEY).query(&mut plain).unwrap();
    let n: i64 = redis::cmd("GET").arg("tls:cli").query(&mut plain).unwrap();
    assert_eq!(n, 5);
    // CONFIG GET tls-port answers the TLS port, as Redis does.
    let port: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("tls-port")
        .query(&mut plain)
        .unwrap();
    assert_eq!(port, ["tls-port".to_string(), tls_port.to_string()]);

    let deps = clients_dir();
    assert!(
        deps.join("stamp").exists(),
        "needs the pinned clients: run `bash scripts/client-deps` (the test command does)"
    );
    let py = Command::new(deps.join("venv/bin/python"))
        .args([
            "-c",
            "import sys, redis\n\
             r = redis.Redis(host='127.0.0.1', port=int(sys.argv[1]), password=sys.argv[2], \
             ssl=True, ssl_ca_certs=sys.argv[3])\n\
             print(r.incrby('tls:py', 7), r.incrby('tls:py', 1))\n",
            &tls_port.to_string(),
            KEY,
            pki.ca.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    says(&py, "7 8");
    let js = Command::new("node")
        .env("NODE_PATH", deps.join("node/node_modules"))
        .args([
            "-e",
            "const Redis = require('ioredis'); const fs = require('fs');\n\
             const [port, key, ca] = process.argv.slice(1);\n\
             const r = new Redis({host: '127.0.0.1', port: Number(port), password: key, \
             tls: {ca: fs.readFileSync(ca), servername: 'localhost'}, maxRetriesPerRequest: 1});\n\
             (async () => { const a = await r.incrby('tls:js', 3); const b = await r.incrby('tls:js', 4);\n\
             console.log(a, b); r.disconnect(); })().catch(e => { console.error(e); process.exit(1); });\n",
            &tls_port.to_string(),
            KEY,
            pki.ca.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    says(&js, "3 7");
    // A client that does not trust the server's CA gets nothing.
    let other = Pki::make(&dir.path().join("other"));
    let out = redis_cli(tls_port, &other, None, &["PING"]);
    says_not(&out, "PONG");
    let values: Vec<i64> = ["tls:cli", "tls:py", "tls:js"]
        .iter()
        .map(|k| redis::cmd("GET").arg(k).query(&mut plain).unwrap())
        .collect();
    assert_eq!(values, [5, 8, 7]);
}

#[test]
fn a_tls_port_with_a_ca_takes_only_clients_with_a_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::make(&dir.path().join("pki"));
    let (_server, tls_port) =
        resp_tls_server(dir.path(), &pki, &format!("tls_ca = {:?}\n", pki.ca));
    let without = redis_cli(tls_port, &pki, None, &["PING"]);
    says_not(&without, "PONG");
    let with = redis_cli(tls_port, &pki, Some(&pki), &["PING"]);
    says(&with, "PONG");
    // A certificate from another CA is no better than none.
    let other = Pki::make(&dir.path().join("other"));
    let foreign = redis_cli(tls_port, &pki, Some(&other), &["PING"]);
    says_not(&foreign, "PONG");
}

#[test]
fn a_tls_only_resp_serves_no_plain_port() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::make(&dir.path().join("pki"));
    let config = dir.path().join("shardkit.toml");
    std::fs::write(
        &config,
        format!(
            "api_key = \"{KEY}\"\n[resp]\ntls = \"127.0.0.1:0\"\ntls_cert = {:?}\ntls_key = {:?}\n",
            pki.server_cert, pki.server_key
        ),
    )
    .unwrap();
    // No --resp flag: it would name a plain port.
    let server = Server::try_start(
        &dir.path().join("data"),
        &[
            "--http",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    )
    .unwrap();
    // The node reports the TLS port as its address; it answers TLS there.
    let out = redis_cli(server.resp.port(), &pki, None, &["PING"]);
    says(&out, "PONG");
    let line = server
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("shardkit listening"))
        .cloned()
        .unwrap();
    assert!(
        line.contains(&format!("resp_tls={}", server.resp)),
        "{line}"
    );
    // Nothing listens on the default plain port on its behalf.
    let plain = Command::new("redis-cli")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.resp.port().to_string(),
            "PING",
        ])
        .output()
        .unwrap();
    assert_ne!(String::from_utf8_lossy(&plain.stdout).trim(), "PONG");
}

#[test]
fn tls_files_that_do_not_parse_are_refused_by_name_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::make(&dir.path().join("pki"));
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "this is not PEM\n").unwrap();
    let bad_key = dir.path().join("bad-key.pem");
    std::fs::write(
        &bad_key,
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let other = Pki::make(&dir.path().join("other"));
    let cases = [
        (
            format!(
                "[http]\ntls_cert = {:?}\ntls_key = {:?}\n",
                pki.server_cert, bad_key
            ),
            "http.tls_key",
        ),
        (
            format!(
                "[http]\ntls_cert = {:?}\ntls_key = {:?}\n",
                garbage, pki.server_key
            ),
            "http.tls_cert",
        ),
        (
            // A key that is not the certificate's.
            format!(
                "[http]\ntls_cert = {:?}\ntls_key = {:?}\n",
                pki.server_cert, other.server_key
            ),
            "http.tls_key",
        ),
        (
            format!("[http]\ntls_cert = {:?}\n", pki.server_cert),
            "http.tls_key",
        ),
        (
            format!(
                "[http]\ntls_cert = \"/nonexistent/cert.pem\"\ntls_key = {:?}\n",
                pki.server_key
            ),
            "http.tls_cert",
        ),
        (
            format!(
                "[resp]\nlisten = \"127.0.0.1:0\"\ntls = \"127.0.0.1:0\"\ntls_cert = {:?}\n\
                 tls_key = {:?}\ntls_ca = {:?}\n",
                pki.server_cert, pki.server_key, garbage
            ),
            "resp.tls_ca",
        ),
        (
            "[resp]\nlisten = \"127.0.0.1:0\"\ntls = \"127.0.0.1:0\"\n".to_string(),
            "resp.tls_cert",
        ),
        (
            "[regions]\nthis = \"us\"\ndefault = \"us\"\ntls_ca = \"/nonexistent/ca.pem\"\n\
             [regions.peers]\ncn = \"https://127.0.0.1:1\"\n\
             [regions.groups]\nus = \"0-U\"\ncn = \"V-z\"\n"
                .to_string(),
            "regions.tls_ca",
        ),
    ];
    for (i, (toml, setting)) in cases.iter().enumerate() {
        let case = dir.path().join(format!("case-{i}"));
        std::fs::create_dir(&case).unwrap();
        let err = Server::refused_with_config(&case, toml);
        assert!(err.contains(setting), "case {i} must name {setting}: {err}");
        assert!(!err.contains("panicked"), "case {i}: {err}");
    }
}

/// The settings of region `this` serving HTTPS, its peer reached at `peer_url`.
fn region(this: &str, pki: &Pki, peer_url: &str, trusted_ca: &Path) -> String {
    let peer = if this == "us" { "cn" } else { "us" };
    format!(
        "[http]\nlisten = \"127.0.0.1:0\"\ntls_cert = {:?}\ntls_key = {:?}\n\
         [links]\ncreate_per_second = 0\n\
         [regions]\nthis = \"{this}\"\ndefault = \"us\"\npeer_key = \"peer-secret-0123456789\"\n\
         tls_ca = {trusted_ca:?}\n\
         [regions.peers]\n{peer} = \"{peer_url}\"\n\
         [regions.hosts]\n\".cn\" = \"cn\"\n\
         [regions.groups]\nus = \"0-U\"\ncn = \"V-z\"\n",
        pki.server_cert, pki.server_key
    )
}

#[test]
fn regions_reach_https_peers_through_their_ca() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::make(&dir.path().join("pki"));
    let other = Pki::make(&dir.path().join("other"));
    // Forwarders (no delay) so each region's peer address is known before it starts.
    let (to_us, to_cn) = (
        DelayProxy::start(Duration::ZERO),
        DelayProxy::start(Duration::ZERO),
    );
    let start = |name: &str, toml: String| {
        let d = dir.path().join(name);
        std::fs::create_dir(&d).unwrap();
        Server::start_with_config(&d, &toml)
    };
    let peer = |p: &DelayProxy| format!("https://127.0.0.1:{}", p.port());
    let us = start("us", region("us", &pki, &peer(&to_cn), &pki.ca));
    let cn = start("cn", region("cn", &pki, &peer(&to_us), &pki.ca));
    to_us.set_target(us.http);
    to_cn.set_target(cn.http);
    let us_url = |path: &str| format!("https://127.0.0.1:{}{path}", us.http.port());
    // A link for a .cn host, created in us: homed in cn, over https.
    let created = curl(
        &pki.ca,
        &[
            "-H",
            "content-type: application/json",
            "-d",
            r#"{"url":"https://shop.example.cn/tls"}"#,
            "-w",
            "\n%{http_code}",
            &us_url("/api/links"),
        ],
    );
    let out = String::from_utf8_lossy(&created.stdout).into_owned();
    assert!(out.ends_with("\n201"), "{}", text(&created));
    let body: serde_json::Value = serde_json::from_str(out.rsplit_once('\n').unwrap().0).unwrap();
    let code = body["code"].as_str().unwrap().to_string();
    // Redirected in us from cn's copy.
    let followed = curl(
        &pki.ca,
        &[
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{redirect_url}",
            &us_url(&format!("/{code}")),
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&followed.stdout),
        "302 https://shop.example.cn/tls",
        "{}",
        text(&followed)
    );
    drop(us);

    // A region that trusts another CA cannot reach its peer.
    let doubting = start("doubting", region("us", &pki, &peer(&to_cn), &other.ca));
    let refused = curl(
        &pki.ca,
        &[
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-H",
            "content-type: application/json",
            "-d",
            r#"{"url":"https://shop.example.cn/doubt"}"#,
            &format!("https://127.0.0.1:{}/api/links", doubting.http.port()),
        ],
    );
    let status = String::from_utf8_lossy(&refused.stdout).into_owned();
    assert!(status.starts_with('5'), "{status}: {}", text(&refused));
}

#[test]
fn a_node_without_tls_takes_sighup_and_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    sighup(&server);
    wait_until("the SIGHUP is logged", || {
        server
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("no TLS certificate to reload"))
    });
    let body = reqwest::blocking::get(server.url("/healthz"))
        .unwrap()
        .text()
        .unwrap();
    assert!(body.contains("\"ok\""), "{body}");
}

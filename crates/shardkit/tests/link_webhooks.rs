//! Webhooks through the real server to a real receiver: a Python HTTP server the test
//! starts, which checks each body's signature and writes down what it got. The
//! receiver is killed (SIGKILL) while clicks come in and started again on its port:
//! every click's event arrives afterwards, a batch sent twice carries the same event
//! ids, every body is signed and holds at most `batch` events. A receiver that is gone
//! makes the queue fill and drop, counted in `/metrics`, while redirects go on.

mod common;

use common::Server;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const SECRET: &str = "webhook-secret-0123456789";

/// Answers 200 to every POST after checking its `X-Shardkit-Signature` and appends
/// `{"signed": bool, "body": {...}}` to the file, one line a request.
const RECEIVER: &str = r#"
import hashlib, hmac, http.server, json, sys
port, secret, out = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        want = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        signed = hmac.compare_digest(want, self.headers.get("X-Shardkit-Signature", ""))
        with open(out, "a") as f:
            f.write(json.dumps({"signed": signed, "body": json.loads(body)}) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer.allow_reuse_address = True
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"#;

/// The receiver process.
struct Receiver {
    child: Child,
}

impl Receiver {
    fn start(port: u16, out: &Path) -> Receiver {
        let child = Command::new("python3")
            .args(["-c", RECEIVER, &port.to_string(), SECRET])
            .arg(out)
            .spawn()
            .expect("python3 runs the receiver");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the receiver never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Receiver { child }
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Every request the receiver wrote down.
fn received(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The events of every request, in order.
fn events(requests: &[Value]) -> Vec<Value> {
    requests
        .iter()
        .flat_map(|r| r["body"]["events"].as_array().unwrap().clone())
        .collect()
}

fn config(dir: &Path, url: &str, extra: &str) -> PathBuf {
    let path = dir.join("shardkit.toml");
    std::fs::write(
        &path,
        format!(
            "[links]\ncreate_per_second = 0\n\n[[links.webhooks]]\nurl = {url:?}\nsecret = {SECRET:?}\n{extra}"
        ),
    )
    .unwrap();
    path
}

fn click(server: &Server, path: &str) {
    let answer = common::link_client()
        .get(server.url(&format!("/{path}")))
        .header("User-Agent", common::visitors::SAFARI_IPHONE)
        .header("Referer", "https://news.example.com/today")
        .send()
        .unwrap();
    assert_eq!(answer.status().as_u16(), 302);
}

#[test]
fn a_killed_receiver_gets_every_event_once_it_is_back_signed_and_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = dir.path().join("received.jsonl");
    let config = config(
        dir.path(),
        &format!("http://127.0.0.1:{port}/hooks"),
        "batch = 10\ninterval_ms = 20\n",
    );
    let server = Server::start(
        &dir.path().join("data"),
        &[("SHARDKIT_CONFIG", config.to_str().unwrap())],
    );
    let receiver = Receiver::start(port, &out);
    let c = common::link_client();
    let link = common::create_link(
        &c,
        &server,
        json!({"url": "https://example.com/hooked", "alias": "hooked"}),
    );
    let mut clicks = 0;
    for _ in 0..40 {
        click(&server, "hooked");
        clicks += 1;
    }
    // Killed mid-stream: clicks go on while it is gone, and while it comes back.
    receiver.kill();
    for _ in 0..60 {
        click(&server, "hooked");
        clicks += 1;
    }
    std::thread::sleep(Duration::from_millis(500));
    let receiver = Receiver::start(port, &out);
    for _ in 0..20 {
        click(&server, "hooked");
        clicks += 1;
    }
    let patched = c
        .patch(server.url("/api/links/hooked"))
        .json(&json!({"url": "https://example.com/moved"}))
        .send()
        .unwrap();
    assert_eq!(patched.status().as_u16(), 200);
    let deleted = c.delete(server.url("/api/links/hooked")).send().unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());

    // Every event arrives (the backoff is at most 30 s; a few seconds here).
    let deadline = Instant::now() + Duration::from_secs(60);
    let (requests, by_id) = loop {
        let requests = received(&out);
        let mut by_id: HashMap<String, Value> = HashMap::new();
        let mut duplicates_differ = Vec::new();
        for event in events(&requests) {
            let id = event["id"].as_str().unwrap().to_string();
            if let Some(seen) = by_id.get(&id) {
                if seen != &event {
                    duplicates_differ.push(id.clone());
                }
            }
            by_id.insert(id, event);
        }
        assert!(
            duplicates_differ.is_empty(),
            "an event id came back with other content: {duplicates_differ:?}"
        );
        let kinds = |kind: &str| by_id.values().filter(|e| e["type"] == kind).count();
        if kinds("link.clicked") == clicks && kinds("link.deleted") == 1 {
            break (requests, by_id);
        }
        assert!(
            Instant::now() < deadline,
            "after 60 s the receiver has {} of {clicks} clicks, {} created, {} updated, {} deleted",
            kinds("link.clicked"),
            kinds("link.created"),
            kinds("link.updated"),
            kinds("link.deleted")
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(receiver);
    let kinds = |kind: &str| by_id.values().filter(|e| e["type"] == kind).count();
    assert_eq!(
        (
            kinds("link.created"),
            kinds("link.updated"),
            kinds("link.deleted")
        ),
        (1, 1, 1)
    );
    assert!(
        requests.iter().all(|r| r["signed"] == true),
        "an unsigned or wrongly signed body"
    );
    assert!(requests
        .iter()
        .all(|r| r["body"]["events"].as_array().unwrap().len() <= 10));
    let a_click = by_id
        .values()
        .find(|e| e["type"] == "link.clicked")
        .unwrap();
    assert_eq!(a_click["link"]["code"], link["code"]);
    assert_eq!(a_click["click"]["url"], "https://example.com/hooked");
    assert_eq!(a_click["click"]["referrer"], "news.example.com");
    assert_eq!(a_click["click"]["device"], "phone");
    let updated = by_id
        .values()
        .find(|e| e["type"] == "link.updated")
        .unwrap();
    assert_eq!(updated["link"]["url"], "https://example.com/moved");
    // The receiver's death was met: POSTs failed and were sent again.
    assert!(metric(&server, "shardkit_link_webhook_posts_failed_total") >= 1.0);
}

/// The value of `name` in `/metrics` (its one series).
fn metric(server: &Server, name: &str) -> f64 {
    let metrics = reqwest::blocking::get(server.url("/metrics"))
        .unwrap()
        .text()
        .unwrap();
    metrics
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name}: {metrics}"))
}

#[test]
fn a_receiver_that_is_gone_fills_the_queue_and_the_drops_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/nobody", free_port());
    let config = config(dir.path(), &url, "batch = 1\nqueue = 5\n");
    let server = Server::start(
        &dir.path().join("data"),
        &[("SHARDKIT_CONFIG", config.to_str().unwrap())],
    );
    let c = common::link_client();
    common::create_link(
        &c,
        &server,
        json!({"url": "https://example.com/dropped", "alias": "gone-away"}),
    );
    for _ in 0..50 {
        click(&server, "gone-away");
    }
    // 51 events: at most one in flight and 5 queued, the rest dropped.
    let dropped = metric(&server, "shardkit_link_webhook_events_dropped_total");
    assert!(dropped >= 45.0, "{dropped} dropped");
}

#[test]
fn bad_webhook_settings_stop_the_start_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let err = Server::refused_with_config(
        dir.path(),
        "[[links.webhooks]]\nurl = \"https://hooks.example/in\"\nsecret = \"short\"\n",
    );
    assert!(err.contains("links.webhooks[0].secret"), "{err}");
}

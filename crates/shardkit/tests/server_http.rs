//! The HTTP API of the real server: ids, tickets, health, errors, the API key.

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::Value;

fn post(client: &Client, url: &str) -> (u16, Value) {
    let response = client.post(url).send().unwrap();
    let status = response.status().as_u16();
    (status, response.json().unwrap())
}

fn get(client: &Client, url: &str) -> (u16, Value) {
    let response = client.get(url).send().unwrap();
    let status = response.status().as_u16();
    (status, response.json().unwrap())
}

fn ids_of(body: &Value) -> Vec<u64> {
    body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().expect("ids are JSON strings").parse().unwrap())
        .collect()
}

#[test]
fn ids_tickets_and_decoding_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = Client::new();

    assert_eq!(
        get(&client, &server.url("/healthz")),
        (200, serde_json::json!({"status": "ok"}))
    );

    let (status, body) = post(&client, &server.url("/api/ids?count=1000&key=31337"));
    assert_eq!(status, 200);
    let ids = ids_of(&body);
    assert_eq!(ids.len(), 1000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(ids.iter().all(|id| (id >> 10) & 8191 == 31337 % 8192));

    let (_, body) = post(&client, &server.url("/api/ids?shard=12"));
    let id = ids_of(&body)[0];
    let (status, decoded) = get(&client, &server.url(&format!("/api/ids/{id}")));
    assert_eq!(status, 200);
    assert_eq!(
        (
            decoded["id"].as_str().unwrap(),
            decoded["shard"].as_u64().unwrap(),
            decoded["layout"].as_str().unwrap()
        ),
        (id.to_string().as_str(), 12, "instagram")
    );

    let (status, body) = post(&client, &server.url("/api/tickets/photos?count=3"));
    assert_eq!((status, ids_of(&body)), (200, vec![1, 2, 3]));
    let (_, body) = post(&client, &server.url("/api/tickets/photos"));
    assert_eq!(ids_of(&body), vec![4]);
}

fn texts_of(body: &Value) -> Vec<String> {
    body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn uuid7_and_ulid_over_http_are_what_python_and_the_decoder_say_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = Client::new();
    let (status, body) = post(&client, &server.url("/api/ids?format=uuid7&count=1000"));
    assert_eq!(status, 200, "{body}");
    let mut uuids = texts_of(&body);
    let (_, body) = post(&client, &server.url("/api/ids?format=UUID7"));
    uuids.extend(texts_of(&body));
    assert_eq!(uuids.len(), 1001);
    assert!(uuids.windows(2).all(|w| w[0] < w[1]));
    // Python's own reading of every UUID: version 7, the RFC's variant, sorted by time.
    let check = "import sys, uuid\n\
        ids = [uuid.UUID(line.strip()) for line in sys.stdin if line.strip()]\n\
        assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in ids), 'not v7'\n\
        assert [u.int for u in ids] == sorted(u.int for u in ids), 'not sorted'\n\
        print(len(ids))\n";
    let mut python = std::process::Command::new("python3")
        .args(["-c", check])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write;
    python
        .stdin
        .take()
        .unwrap()
        .write_all(uuids.join("\n").as_bytes())
        .unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(out.status.success(), "python refused the UUIDs");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1001");

    let (status, decoded) = get(&client, &server.url(&format!("/api/ids/{}", uuids[7])));
    assert_eq!(status, 200, "{decoded}");
    assert_eq!(decoded["format"], "uuid7");
    assert_eq!(decoded["id"], uuids[7].as_str());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (decoded["unix_ms"].as_i64().unwrap() - now).abs() < 60_000,
        "{decoded}"
    );

    let (status, body) = post(&client, &server.url("/api/ids?format=ulid&count=500"));
    assert_eq!(status, 200, "{body}");
    let ulids = texts_of(&body);
    assert_eq!(ulids.len(), 500);
    assert!(ulids.windows(2).all(|w| w[0] < w[1]) && ulids.iter().all(|u| u.len() == 26));
    let (status, decoded) = get(
        &client,
        &server.url(&format!("/api/ids/{}", ulids[0].to_lowercase())),
    );
    assert_eq!(status, 200, "{decoded}");
    assert_eq!(
        (decoded["format"].as_str(), decoded["id"].as_str()),
        (Some("ulid"), Some(ulids[0].as_str()))
    );
    assert!(
        (decoded["unix_ms"].as_i64().unwrap() - now).abs() < 60_000,
        "{decoded}"
    );

    for (url, needle) in [
        ("/api/ids?format=uuid4", "snowflake, uuid7 or ulid"),
        ("/api/ids?format=uuid7&shard=1", "no shard"),
        ("/api/ids?format=ulid&key=7", "no shard"),
        ("/api/ids?format=ulid&count=100001", "count"),
    ] {
        let (status, body) = post(&client, &server.url(url));
        assert_eq!(status, 400, "{url}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(needle),
            "{url}: {body}"
        );
    }
    for (id, needle) in [
        ("550e8400-e29b-41d4-a716-446655440000", "version 4"),
        ("8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"),
        ("017f22e2-79b0-7cc3-98c4-dc0c0c07398g", "'g'"),
        ("1234567890123456789012345678", "UUIDv7"),
    ] {
        let (status, body) = get(&client, &server.url(&format!("/api/ids/{id}")));
        assert_eq!(status, 400, "{id}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(needle),
            "{id}: {body}"
        );
    }
}

#[test]
fn bad_input_gets_a_4xx_with_words_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = Client::new();
    for (url, needle) in [
        ("/api/ids?count=0", "count"),
        ("/api/ids?count=-1", "count"),
        ("/api/ids?count=100001", "count"),
        ("/api/ids?count=abc", "count"),
        ("/api/ids?shard=8192", "shard"),
        ("/api/ids?shard=1&key=2", "not both"),
        ("/api/ids?key=alice", "key"),
        ("/api/tickets/bad%20name", "invalid"),
        ("/api/tickets/photos?count=999999999999999999999", "count"),
    ] {
        let (status, body) = post(&client, &server.url(url));
        assert_eq!(status, 400, "{url}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(needle),
            "{url}: {body}"
        );
    }
    for (url, status) in [
        ("/api/ids/notanumber", 400),
        ("/api/ids/18446744073709551615", 400),
        ("/nowhere", 404),
    ] {
        let (got, body) = get(&client, &server.url(url));
        assert_eq!(got, status, "{url}: {body}");
        assert!(body["error"].is_string());
    }
    let response = client.delete(server.url("/api/ids")).send().unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert!(response.json::<Value>().unwrap()["error"].is_string());
    assert_eq!(get(&client, &server.url("/healthz")).0, 200);
}

#[test]
fn with_an_api_key_writes_need_the_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let key = "k3y-0123456789abcdef";
    let server = Server::start(dir.path(), &[("SHARDKIT_API_KEY", key)]);
    let client = Client::new();
    assert_eq!(post(&client, &server.url("/api/ids")).0, 401);
    let wrong = client
        .post(server.url("/api/ids"))
        .bearer_auth("nope")
        .send()
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let right = client
        .post(server.url("/api/ids"))
        .bearer_auth(key)
        .send()
        .unwrap();
    assert_eq!(right.status().as_u16(), 200);
    assert_eq!(
        get(&client, &server.url("/healthz")).0,
        200,
        "reads stay open"
    );
}

#[test]
fn a_non_loopback_address_without_a_key_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let err = Server::try_start(
        dir.path(),
        &["--http", "0.0.0.0:0", "--resp", "127.0.0.1:0"],
        &[],
    )
    .err()
    .expect("must refuse");
    assert!(err.contains("SHARDKIT_API_KEY"), "{err}");
}

#[test]
fn on_all_interfaces_without_base_url_the_start_warns_once_about_short_urls() {
    let dir = tempfile::tempdir().unwrap();
    let key = "k3y-0123456789abcdef";
    let server = Server::try_start(
        dir.path(),
        &["--http", "0.0.0.0:0", "--resp", "127.0.0.1:0"],
        &[("SHARDKIT_API_KEY", key)],
    )
    .expect("starts with a key");
    let log = server.log.lock().unwrap().join("\n");
    assert_eq!(log.matches("links.base_url is not set").count(), 1, "{log}");
    drop(server);
    let config = dir.path().join("with-base.toml");
    std::fs::write(&config, "[links]\nbase_url = \"https://sho.rt\"\n").unwrap();
    let server = Server::try_start(
        &dir.path().join("data2"),
        &["--http", "0.0.0.0:0", "--resp", "127.0.0.1:0"],
        &[
            ("SHARDKIT_API_KEY", key),
            ("SHARDKIT_CONFIG", config.to_str().unwrap()),
        ],
    )
    .expect("starts with a base URL");
    let log = server.log.lock().unwrap().join("\n");
    assert!(!log.contains("links.base_url is not set"), "{log}");
}

#[test]
fn sigterm_stops_cleanly_and_a_restart_continues_above_every_id() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::new();
    let server = Server::start(dir.path(), &[]);
    let (_, body) = post(&client, &server.url("/api/ids?count=5000&shard=3"));
    let before = *ids_of(&body).last().unwrap();
    let (_, tickets) = post(&client, &server.url("/api/tickets/t?count=2"));
    assert!(server.terminate().success(), "exit 0 after SIGTERM");

    let server = Server::start(dir.path(), &[]);
    let (_, body) = post(&client, &server.url("/api/ids?shard=3"));
    assert!(ids_of(&body)[0] > before);
    let (_, more) = post(&client, &server.url("/api/tickets/t"));
    assert!(ids_of(&more)[0] > *ids_of(&tickets).last().unwrap());
}

#[test]
fn metrics_count_requests_by_route_and_show_counter_figures() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = Client::new();
    post(&client, &server.url("/api/ids?count=7"));
    post(&client, &server.url("/api/ids?count=0"));
    let mut con = server.redis();
    let scrape = |name: &str| -> u64 {
        let text = client
            .get(server.url("/metrics"))
            .send()
            .unwrap()
            .text()
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap()
    };
    let (commands, errors) = (
        scrape("shardkit_resp_commands_total "),
        scrape("shardkit_resp_errors_total "),
    );
    assert_eq!(errors, 0, "connecting with the redis crate gives no error");
    redis::cmd("INCR")
        .arg("weibo:1:likes")
        .query::<i64>(&mut con)
        .unwrap();
    let _ = redis::cmd("NOPE").query::<String>(&mut con);
    assert_eq!(scrape("shardkit_resp_commands_total ") - commands, 2);
    assert_eq!(scrape("shardkit_resp_errors_total ") - errors, 1);
    let response = client.get(server.url("/metrics")).send().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().unwrap();
    for needle in [
        r#"shardkit_http_requests_total{route="/api/ids",method="POST",status="200"} 1"#,
        r#"shardkit_http_errors_total{route="/api/ids",method="POST",status="400"} 1"#,
        "shardkit_http_request_duration_seconds_bucket",
        "shardkit_ids_issued_total 7",
        r#"shardkit_counter_rows{counter="weibo"} 1"#,
        r#"shardkit_counter_bytes_per_row{counter="weibo"}"#,
        "shardkit_counter_log_records_total",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn openapi_describes_every_route() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let (status, doc) = get(&Client::new(), &server.url("/openapi.json"));
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/healthz", "get"),
        ("/metrics", "get"),
        ("/openapi.json", "get"),
        ("/api/ids", "post"),
        ("/api/ids/{id}", "get"),
        ("/api/tickets/{name}", "post"),
        ("/api/counters/{counter}/{key}", "get"),
        ("/api/counters/{counter}/{key}/incr", "post"),
        ("/api/counters/{counter}/mget", "post"),
        ("/api/links", "post"),
        ("/api/links", "get"),
        ("/api/links/{code}", "get"),
        ("/api/links/{code}", "patch"),
        ("/api/links/{code}", "put"),
        ("/api/links/{code}", "delete"),
        ("/api/links/bulk", "post"),
        ("/api/links/export", "get"),
        ("/{code}", "get"),
        ("/", "get"),
        ("/ui/links/{code}", "get"),
        ("/ui/links/{code}/qr.svg", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing from /openapi.json"
        );
    }
    assert!(doc["components"]["schemas"]["DecodedIdJson"].is_object());
}

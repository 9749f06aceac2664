//! Click analytics against the real binary: chosen visitors (a desktop in Germany
//! from a news site, a phone in Japan with no referrer, Firefox from an address the
//! test GeoIP database does not know, a crawler) click a link; the stats endpoints
//! and the link's page show exactly them, bots apart; a SIGKILL after the flush
//! interval loses none of them; bad questions get a 400.

mod common;

use common::visitors::{
    click, geo_config, wait_for_stats, BOT, DESKTOP_DE, FIREFOX_NOWHERE, PHONE_JP,
};
use common::{info_field, Server};
use serde_json::{json, Value};
use std::time::Duration;

fn get(server: &Server, path: &str) -> (u16, Value) {
    let r = reqwest::blocking::get(server.url(path)).unwrap();
    (r.status().as_u16(), r.json().unwrap())
}

fn create(server: &Server, url: &str) -> String {
    let link: Value = reqwest::blocking::Client::new()
        .post(server.url("/api/links"))
        .json(&json!({ "url": url }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    link["code"].as_str().unwrap().to_string()
}

/// `values` of a stats answer as (value, clicks).
fn values(stats: &Value) -> Vec<(String, u64)> {
    stats["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["value"].as_str().unwrap().to_string(),
                v["clicks"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn by(server: &Server, code: &str, dim: &str) -> Vec<(String, u64)> {
    let (status, stats) = get(server, &format!("/api/links/{code}/stats?by={dim}"));
    assert_eq!(status, 200, "{stats}");
    values(&stats)
}

fn pairs(expected: &[(&str, u64)]) -> Vec<(String, u64)> {
    expected.iter().map(|(v, n)| (v.to_string(), *n)).collect()
}

#[test]
fn stats_and_page_show_exactly_the_visitors_and_survive_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let config = geo_config(dir.path(), 50);
    let data = dir.path().join("data");
    let env = [("SHARDKIT_CONFIG", config.to_str().unwrap())];
    let mut server = Server::start(&data, &env);
    let code = create(&server, "https://example.com/analytics");
    let other = create(&server, "https://example.com/other");
    click(&server, &code, DESKTOP_DE, 3);
    click(&server, &code, PHONE_JP, 2);
    click(&server, &code, FIREFOX_NOWHERE, 1);
    click(&server, &code, BOT, 4);
    click(&server, &other, PHONE_JP, 1);
    wait_for_stats(&server, &code, 6, 4);
    wait_for_stats(&server, &other, 1, 0);

    let expect = |server: &Server, de: u64| {
        let people = 3 + de;
        assert_eq!(
            by(server, &code, "referrer"),
            pairs(&[
                ("news.example.com", de),
                ("direct", 2),
                ("blog.example.org", 1)
            ])
        );
        assert_eq!(
            by(server, &code, "browser"),
            pairs(&[("Chrome", de), ("Safari", 2), ("Firefox", 1)])
        );
        assert_eq!(
            by(server, &code, "os"),
            pairs(&[("Windows 10", de), ("iPhone", 2), ("Linux", 1)])
        );
        assert_eq!(
            by(server, &code, "device"),
            pairs(&[("desktop", de + 1), ("phone", 2)])
        );
        assert_eq!(
            by(server, &code, "country"),
            pairs(&[("DE", de), ("JP", 2), ("unknown", 1)])
        );
        let (_, days) = get(server, &format!("/api/links/{code}/stats"));
        assert_eq!(
            (days["clicks"].as_u64(), days["bots"].as_u64()),
            (Some(people), Some(4))
        );
        let today = days["values"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            (today["clicks"].as_u64(), today["bots"].as_u64()),
            (Some(people), Some(4)),
            "{days}"
        );
        assert_eq!(
            days["values"].as_array().unwrap().len(),
            30,
            "the last 30 days by default"
        );
    };
    expect(&server, 3);

    // Site-wide: the most-clicked links, and values over every link.
    let (status, top) = get(&server, "/api/stats/top?by=links");
    assert_eq!(status, 200, "{top}");
    assert_eq!(values(&top), pairs(&[(&code, 6), (&other, 1)]));
    assert_eq!(top["values"][0]["url"], "https://example.com/analytics");
    let (_, top) = get(&server, "/api/stats/top?by=country&limit=2");
    assert_eq!(values(&top), pairs(&[("DE", 3), ("JP", 3)]));
    let (_, top) = get(&server, "/api/stats/top?by=referrer");
    assert_eq!(
        values(&top),
        pairs(&[
            ("direct", 3),
            ("news.example.com", 3),
            ("blog.example.org", 1)
        ])
    );

    // The page: the numbers in the charts' bars.
    let page = reqwest::blocking::get(server.url(&format!("/ui/links/{code}")))
        .unwrap()
        .text()
        .unwrap();
    for bar in [
        "data-value=\"news.example.com\" data-clicks=\"3\"",
        "data-value=\"direct\" data-clicks=\"2\"",
        "data-value=\"DE\" data-clicks=\"3\"",
        "data-value=\"unknown\" data-clicks=\"1\"",
        "data-value=\"Safari\" data-clicks=\"2\"",
        "data-value=\"desktop\" data-clicks=\"4\"",
        "<span id=\"people\">6</span>",
        "<span id=\"bots\">4</span>",
    ] {
        assert!(page.contains(bar), "{bar} missing from the page: {page}");
    }
    assert!(!page.contains("Googlebot"), "bots are in no chart");

    // Two more clicks, time for one flush (many times over), SIGKILL: nothing lost.
    click(&server, &code, DESKTOP_DE, 2);
    std::thread::sleep(Duration::from_millis(600));
    server.child.kill().unwrap();
    let _ = server.child.wait();
    let server = Server::start(&data, &env);
    expect(&server, 5);

    // An export carries the analytics; an import into an empty server restores them,
    // from JSON lines and from CSV alike.
    for (format, content_type) in [("jsonl", "application/x-ndjson"), ("csv", "text/csv")] {
        let export =
            reqwest::blocking::get(server.url(&format!("/api/links/export?format={format}")))
                .unwrap()
                .text()
                .unwrap();
        assert!(export.contains("news.example.com"), "{export}");
        let fresh_dir = tempfile::tempdir().unwrap();
        let fresh = Server::start(fresh_dir.path(), &[]);
        let answer: Value = reqwest::blocking::Client::new()
            .post(fresh.url("/api/links/bulk"))
            .header("Content-Type", content_type)
            .body(export)
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(answer["created"], 2, "{format}: {answer}");
        for dim in ["referrer", "browser", "os", "device", "country"] {
            assert_eq!(
                by(&fresh, &code, dim),
                by(&server, &code, dim),
                "{format} {dim}"
            );
        }
        let (_, days) = get(&fresh, &format!("/api/links/{code}/stats?by=day"));
        let (_, before) = get(&server, &format!("/api/links/{code}/stats?by=day"));
        assert_eq!(days, before, "{format}");
    }
}

/// With `[counters] cold_after`, a link's analytics rows (its owner row and its day row:
/// string keys) go to the cold tier like any counter row; the stats read them back
/// whole, and new clicks bring them back and add to them.
#[test]
fn analytics_rows_go_cold_and_the_stats_read_and_add_to_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = geo_config(dir.path(), 50);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[counters]\ncold_after = \"1s\"\n");
    std::fs::write(&config, text).unwrap();
    let env = [("SHARDKIT_CONFIG", config.to_str().unwrap())];
    let server = Server::start(&dir.path().join("data"), &env);
    let code = create(&server, "https://example.com/cold-analytics");
    click(&server, &code, DESKTOP_DE, 3);
    click(&server, &code, PHONE_JP, 2);
    wait_for_stats(&server, &code, 5, 0);
    let mut con = server.redis();
    let cold = |con: &mut redis::Connection, counter: &str| {
        let info: Vec<redis::Value> = redis::cmd("COUNTER.INFO").arg(counter).query(con).unwrap();
        info_field(&info, "cold_rows")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while cold(&mut con, "link_totals") < 1 || cold(&mut con, "link_daily") < 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the analytics rows never went cold"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let browsers = pairs(&[("Chrome", 3), ("Safari", 2)]);
    assert_eq!(by(&server, &code, "browser"), browsers);
    assert_eq!(
        by(&server, &code, "country"),
        pairs(&[("DE", 3), ("JP", 2)])
    );
    click(&server, &code, DESKTOP_DE, 2);
    click(&server, &code, FIREFOX_NOWHERE, 1);
    wait_for_stats(&server, &code, 8, 0);
    assert_eq!(
        by(&server, &code, "browser"),
        pairs(&[("Chrome", 5), ("Safari", 2), ("Firefox", 1)])
    );
    assert_eq!(
        by(&server, &code, "referrer"),
        pairs(&[
            ("news.example.com", 5),
            ("direct", 2),
            ("blog.example.org", 1)
        ])
    );
}

#[test]
fn bad_questions_get_a_400_and_unknown_links_a_404() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let code = create(&server, "https://example.com/q");
    for path in [
        format!("/api/links/{code}/stats?by=colour"),
        format!("/api/links/{code}/stats?from=yesterday"),
        format!("/api/links/{code}/stats?to=2026-02-30"),
        format!("/api/links/{code}/stats?when=now"),
        "/api/stats/top?limit=0".to_string(),
        "/api/stats/top?limit=101".to_string(),
        "/api/stats/top?by=day".to_string(),
    ] {
        let (status, body) = get(&server, &path);
        assert_eq!(status, 400, "{path}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{body}"
        );
    }
    let (status, _) = get(&server, "/api/links/nope123/stats");
    assert_eq!(status, 404);
    // From after to: nothing counted, not an error.
    let (status, empty) = get(
        &server,
        &format!("/api/links/{code}/stats?from=2026-05-02&to=2026-05-01"),
    );
    assert_eq!(
        (status, empty["clicks"].as_u64()),
        (200, Some(0)),
        "{empty}"
    );
    // Without a GeoIP database no country is recorded.
    click(&server, &code, PHONE_JP, 1);
    wait_for_stats(&server, &code, 1, 0);
    assert_eq!(by(&server, &code, "country"), []);
    assert_eq!(by(&server, &code, "device"), pairs(&[("phone", 1)]));
}

#[test]
fn a_geoip_db_that_is_not_one_stops_the_start_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("broken.mmdb");
    std::fs::write(&db, b"not a MaxMind DB").unwrap();
    let config = dir.path().join("shardkit.toml");
    std::fs::write(
        &config,
        format!("[links]\ngeoip_db = {:?}\n", db.display().to_string()),
    )
    .unwrap();
    let err = Server::try_start(
        &dir.path().join("data"),
        &["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"],
        &[("SHARDKIT_CONFIG", config.to_str().unwrap())],
    )
    .err()
    .expect("the server must not start");
    assert!(
        err.contains("geoip_db") && err.contains("broken.mmdb"),
        "{err}"
    );
}

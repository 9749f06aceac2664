//! What an import from another shortener leans on, through the real server: a bulk
//! `dry_run` checks every line (fields, a code or alias already stored or repeated)
//! and stores nothing; a line with an alias keeps its creation time and clicks
//! without a code of ours; titles are stored, changed, searched and exported.

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};

fn bulk(server: &Server, query: &str, body: &str) -> Value {
    let r = Client::new()
        .post(server.url(&format!("/api/links/bulk?{query}")))
        .header("Content-Type", "application/x-ndjson")
        .body(body.to_string())
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    r.json().unwrap()
}

fn get(server: &Server, path: &str) -> (u16, Value) {
    let r = Client::new().get(server.url(path)).send().unwrap();
    (r.status().as_u16(), r.json().unwrap_or(Value::Null))
}

#[test]
fn a_dry_run_reports_every_conflict_by_line_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(dir.path(), "[links]\ncreate_per_second = 0\n");
    let first = bulk(
        &server,
        "",
        "{\"url\":\"https://example.com/held\",\"alias\":\"held-alias\"}\n",
    );
    assert_eq!(first["created"], 1);
    let held_code = first["results"][0]["code"].as_str().unwrap().to_string();
    let body = [
        json!({"url": "https://example.com/1", "alias": "fresh-one", "title": "Fresh"}),
        json!({"url": "https://example.com/2", "alias": "held-alias"}),
        json!({"url": "https://example.com/3", "alias": "twice-here"}),
        json!({"url": "https://example.com/4", "alias": "twice-here"}),
        json!({"url": "https://example.com/5", "code": held_code, "created_at": "2020-01-01T00:00:00Z"}),
        json!({"url": "not a url"}),
        json!({"url": "https://example.com/7", "alias": "old-one", "created_at": "2019-05-01T10:00:00Z", "clicks": 42, "expires_at": "2020-01-01T00:00:00Z"}),
    ]
    .iter()
    .map(|l| l.to_string() + "\n")
    .collect::<String>();
    let dry = bulk(&server, "dry_run=true", &body);
    assert_eq!(dry["would_create"], 3, "{dry}");
    assert_eq!(dry["failed"], 4, "{dry}");
    let results = dry["results"].as_array().unwrap();
    assert_eq!(results[0], json!({"line": 1, "ok": true}));
    assert_eq!(
        results[1]["code"],
        held_code.as_str(),
        "the owner named: {dry}"
    );
    assert!(
        results[3]["error"]
            .as_str()
            .unwrap()
            .contains("earlier line"),
        "{dry}"
    );
    assert_eq!(results[4]["code"], held_code.as_str(), "{dry}");
    assert!(
        results[5]["error"].as_str().unwrap().contains("url"),
        "{dry}"
    );
    assert_eq!(
        results[6],
        json!({"line": 7, "ok": true}),
        "a past expiry restores"
    );
    // Nothing was stored.
    assert_eq!(get(&server, "/api/links/fresh-one").0, 404);
    let (_, all) = get(&server, "/api/links?q=");
    assert_eq!(all["total"], 1);
    // With on_conflict=skip the conflicts are skipped, not failures.
    let skip = bulk(&server, "dry_run=true&on_conflict=skip", &body);
    assert_eq!(skip["skipped"], 2, "{skip}");

    // The lines that passed import; the aliased one keeps its time and clicks.
    let clean: String = body
        .lines()
        .enumerate()
        .filter(|(i, _)| [0, 2, 6].contains(i))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let imported = bulk(&server, "", &clean);
    assert_eq!(imported["created"], 3, "{imported}");
    let (_, old) = get(&server, "/api/links/old-one");
    assert_eq!(old["created_at"], "2019-05-01T10:00:00.000Z", "{old}");
    assert_eq!(old["clicks"], 42, "{old}");
    assert_eq!(old["alias"], "old-one");
    // A line with a time or clicks but neither code nor alias is refused, naming why.
    let bad = bulk(
        &server,
        "",
        "{\"url\":\"https://example.com/x\",\"clicks\":3}\n",
    );
    assert!(
        bad["results"][0]["error"]
            .as_str()
            .unwrap()
            .contains("code or alias"),
        "{bad}"
    );
}

#[test]
fn titles_are_stored_changed_searched_and_exported() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(dir.path(), "[links]\ncreate_per_second = 0\n");
    let c = Client::new();
    let made: Value = c
        .post(server.url("/api/links"))
        .json(&json!({"url": "https://example.com/t", "alias": "titled", "title": "Spring Launch — «all of it»"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(made["title"], "Spring Launch — «all of it»");
    let (_, found) = get(&server, "/api/links?q=spring%20launch");
    assert_eq!(found["total"], 1, "search reads titles: {found}");
    for (title, status) in [("a\nb", 400), (&"x".repeat(513)[..], 400)] {
        let r = c
            .post(server.url("/api/links"))
            .json(&json!({"url": "https://example.com/u", "title": title}))
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{title:?}");
        assert!(r.text().unwrap().contains("title"));
    }
    let patched: Value = c
        .patch(server.url("/api/links/titled"))
        .json(&json!({"title": "Renamed"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(patched["title"], "Renamed");
    let export = c
        .get(server.url("/api/links/export?format=csv"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        export.lines().next().unwrap().ends_with(",title") && export.contains(",Renamed"),
        "{export}"
    );
    let other_dir = dir.path().join("other");
    std::fs::create_dir_all(&other_dir).unwrap();
    let other = Server::start_with_config(&other_dir, "[links]\ncreate_per_second = 0\n");
    let r = c
        .post(other.url("/api/links/bulk"))
        .header("Content-Type", "text/csv")
        .body(export)
        .send()
        .unwrap();
    assert!(r.status().is_success());
    assert_eq!(get(&other, "/api/links/titled").1["title"], "Renamed");
    let cleared: Value = c
        .patch(server.url("/api/links/titled"))
        .json(&json!({"title": ""}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(cleared.get("title").is_none(), "{cleared}");
}

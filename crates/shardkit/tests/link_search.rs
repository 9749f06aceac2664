//! The list as a search (`GET /api/links?q=&sort=&order=&offset=&domain=`), what the
//! dashboard calls, through the real server: text in the URL, code or alias; a tag; a
//! domain; newest or most clicked first; pages by offset that cover every match once;
//! each link with its clicks; bad parameters named.

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::collections::HashSet;

fn get(server: &Server, query: &str) -> (u16, Value) {
    let r = Client::new()
        .get(server.url(&format!("/api/links?{query}")))
        .send()
        .unwrap();
    (r.status().as_u16(), r.json().unwrap_or(Value::Null))
}

fn paths(page: &Value) -> Vec<String> {
    page["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            format!(
                "{}={}",
                l["alias"].as_str().unwrap_or(l["code"].as_str().unwrap()),
                l["clicks"]
            )
        })
        .collect()
}

#[test]
fn searches_sort_page_and_filter_and_name_bad_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(
        dir.path(),
        "[links]\ncreate_per_second = 0\ndomains = [\"sho.rt\", \"go.example\"]\n",
    );
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for i in 0..30 {
        let mut body = json!({"url": format!("https://example.com/item-{i}"), "alias": format!("item-{i:02}")});
        if i % 3 == 0 {
            body["tags"] = json!(["third"]);
        }
        if i >= 25 {
            body["domain"] = json!("go.example");
            body["url"] = json!(format!("https://Other.example/item-{i}"));
        }
        let made = client
            .post(server.url("/api/links"))
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(made.status().as_u16(), 201);
    }
    // Clicks: item-04 three times, item-07 once (both on the default domain).
    for (alias, times) in [("item-04", 3), ("item-07", 1)] {
        for _ in 0..times {
            let r = client
                .get(server.url(&format!("/{alias}")))
                .header("Host", "sho.rt")
                .send()
                .unwrap();
            assert_eq!(r.status().as_u16(), 302);
        }
    }

    // Newest first by default, each with its clicks; pages by offset. Links made in one
    // millisecond are ordered by id (time, then shard), not by which request came
    // first: the expected orders are read from the oldest-first list itself.
    let (_, all) = get(&server, "order=asc&limit=100");
    let oldest_first = paths(&all);
    assert_eq!(oldest_first.len(), 30);
    let times: Vec<&str> = all["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["created_at"].as_str().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    let newest_first: Vec<String> = oldest_first.iter().rev().cloned().collect();
    let (status, first) = get(&server, "sort=created&limit=4");
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["total"], 30);
    assert_eq!(first["next_offset"], 4);
    assert_eq!(paths(&first), newest_first[..4]);
    let mut seen = HashSet::new();
    let mut offset = 0;
    loop {
        let (_, page) = get(&server, &format!("order=asc&limit=7&offset={offset}"));
        for p in paths(&page) {
            assert!(seen.insert(p.clone()), "{p} twice");
        }
        match page["next_offset"].as_u64() {
            Some(next) => offset = next as usize,
            None => break,
        }
    }
    assert_eq!(seen.len(), 30, "every link once");

    // Most clicks first, ties by id newest first; fewest first, ties oldest first.
    let mut by_id: Vec<(u64, String)> = all["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap().parse().unwrap())
        .zip(oldest_first.iter().cloned())
        .collect();
    by_id.sort();
    let ids_up: Vec<String> = by_id.into_iter().map(|(_, p)| p).collect();
    let ids_down: Vec<String> = ids_up.iter().rev().cloned().collect();
    let unclicked = |order: &[String]| -> Vec<String> {
        order
            .iter()
            .filter(|p| p.ends_with("=0"))
            .cloned()
            .collect()
    };
    let (_, by_clicks) = get(&server, "sort=clicks&limit=3");
    assert_eq!(
        paths(&by_clicks),
        [
            "item-04=3".to_string(),
            "item-07=1".into(),
            unclicked(&ids_down)[0].clone()
        ]
    );
    let (_, fewest) = get(&server, "sort=clicks&order=asc&limit=2");
    assert_eq!(paths(&fewest), unclicked(&ids_up)[..2]);

    // Text (case ignored) in URL, code or alias; a tag; a domain.
    let (_, other) = get(&server, "q=other.EXAMPLE");
    assert_eq!(other["total"], 5);
    let (_, alias) = get(&server, "q=item-1&order=asc");
    assert_eq!(
        alias["total"], 11,
        "aliases item-10 to item-19, and item-01's URL .../item-1"
    );
    let (_, tagged) = get(&server, "q=&tag=third");
    assert_eq!(tagged["total"], 10);
    let (_, away) = get(&server, "domain=go.example&order=asc");
    assert_eq!(away["total"], 5);
    assert_eq!(away["links"][0]["domain"], "go.example");
    let (_, home) = get(&server, "domain=sho.rt");
    assert_eq!(home["total"], 25);
    let (_, none) = get(&server, "q=nothing-like-this");
    assert_eq!(none["total"], 0);
    assert_eq!(none["next_offset"], Value::Null);

    // Bad parameters are named; the plain list is as before.
    for (query, says, code) in [
        ("sort=popularity", "sort", 400),
        ("order=up", "order", 400),
        ("q=x&cursor=5", "cursor", 400),
        ("q=x&offset=100001", "offset", 400),
        ("q=x&limit=0", "limit", 400),
        ("domain=evil.example", "links.domains", 421),
    ] {
        let (status, answer) = get(&server, query);
        assert_eq!(status, code, "{query}: {answer}");
        assert!(
            answer["error"].as_str().unwrap().contains(says),
            "{query}: {answer}"
        );
    }
    let (_, plain) = get(&server, "limit=2");
    assert!(
        plain.get("total").is_none() && plain["next_cursor"].is_string(),
        "{plain}"
    );
}

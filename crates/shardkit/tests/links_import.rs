//! An export restores: the real `shardkit serve` and the real CLI move links from one
//! server to an empty one with their codes, aliases, times, limits, tags and clicks;
//! conflicts are reported per line (fail by default, or skipped); the code minter never
//! hands out an imported code; line numbers count blank lines; bad flags are refused.

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

fn status_of(c: &Client, server: &Server, path: &str) -> (u16, Option<String>) {
    let r = c.get(server.url(&format!("/{path}"))).send().unwrap();
    let location = r
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string());
    (r.status().as_u16(), location)
}

fn cli(args: &[&str], file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(args)
        .arg(file)
        .env_remove("SHARDKIT_API_KEY")
        .env_remove("SHARDKIT_SERVER")
        .output()
        .unwrap()
}

/// A config file with sequential codes, so two servers mint the same first codes.
fn sequential_config(dir: &Path) -> String {
    let path = dir.join("sequential.toml");
    std::fs::write(&path, "[links]\nsequential_codes = true\n").unwrap();
    path.to_string_lossy().into_owned()
}

fn export(c: &Client, server: &Server, format: &str) -> String {
    c.get(server.url(&format!("/api/links/export?format={format}")))
        .send()
        .unwrap()
        .text()
        .unwrap()
}

#[test]
fn an_export_imported_into_an_empty_server_gives_back_the_same_links() {
    let dir = tempfile::tempdir().unwrap();
    let config = sequential_config(dir.path());
    let a = Server::start(&dir.path().join("a"), &[("SHARDKIT_CONFIG", &config)]);
    let c = common::link_client();
    let plain = common::create_link(
        &c,
        &a,
        json!({ "url": "https://example.com/plain", "redirect": 301 }),
    );
    let plain = plain["code"].as_str().unwrap().to_string();
    let limited = common::create_link(
        &c,
        &a,
        json!({ "url": "https://example.com/limited", "alias": "twice", "max_visits": 2, "tags": ["t"] }),
    );
    let limited_code = limited["code"].as_str().unwrap().to_string();
    assert_eq!(status_of(&c, &a, "twice").0, 302);
    let exported = export(&c, &a, "jsonl");
    let line: Value = exported
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["alias"] == "twice")
        .unwrap();
    assert_eq!(line["code"], limited_code.as_str(), "{exported}");
    assert_eq!(line["clicks"], 1, "{exported}");
    // The click's day comes along: `{"YYYY-MM-DD": 1}`.
    let daily = line["daily"].as_object().expect("a daily series").clone();
    assert_eq!(daily.len(), 1, "{exported}");
    let today = daily.keys().next().unwrap().clone();
    assert_eq!(daily[&today], 1);
    assert_eq!(line["max_visits"], 2);
    assert!(line["created_at"].is_string(), "{exported}");
    let csv = export(&c, &a, "csv");
    assert!(
        csv.starts_with(
            "url,code,alias,created_at,expires_at,max_visits,redirect,tags,clicks,daily,password_protected,analytics,rules,domain,title\n"
        ) && csv.contains(&format!(",{today}:1,,\"{{")),
        "{csv}"
    );

    for (format, text) in [("jsonl", &exported), ("csv", &csv)] {
        let b = Server::start(
            &dir.path().join(format!("b-{format}")),
            &[("SHARDKIT_CONFIG", &config)],
        );
        let file = dir.path().join(format!("links.{format}"));
        std::fs::write(&file, text).unwrap();
        let out = cli(&["links", "import", "--server", &b.url("")], &file);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{format}: {stderr}");
        assert!(stderr.contains("2 links created, 0 failed"), "{stderr}");
        assert_eq!(
            status_of(&c, &b, &plain),
            (301, Some("https://example.com/plain".into())),
            "{format}: the same code answers the same redirect"
        );
        assert_eq!(status_of(&c, &b, &limited_code).0, 302, "{format}");
        assert_eq!(
            status_of(&c, &b, "twice").0,
            410,
            "{format}: one visit was left, and it was just used"
        );
        let mut again: Vec<String> = export(&c, &b, "jsonl")
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap().to_string())
            .collect();
        let mut before: Vec<Value> = exported
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // The two follows above are clicks of the restored server.
        for line in &mut before {
            let clicks = if line["alias"] == "twice" { 2 } else { 1 };
            line["clicks"] = json!(clicks);
            line["daily"] = json!({ today.clone(): clicks });
            // Followed with no User-Agent and no referrer.
            let some = json!({ "unknown": clicks });
            line["analytics"] = json!({ today.clone(): {
                "people": clicks, "referrer": { "direct": clicks },
                "browser": some, "os": some, "device": some,
            }});
        }
        let mut before: Vec<String> = before.iter().map(Value::to_string).collect();
        again.sort();
        before.sort();
        assert_eq!(
            again, before,
            "{format}: the import exports what was exported"
        );

        // A new link in the plain link's group: the minter passes the imported code.
        let fresh = common::create_link(&c, &b, json!({ "url": "https://example.com/plain" }));
        let fresh = fresh["code"].as_str().unwrap();
        assert_ne!(fresh, plain, "the minter handed out an imported code");
        assert_eq!(fresh[..1], plain[..1], "same group");
    }
}

#[test]
fn importing_codes_a_server_holds_fails_per_line_or_skips() {
    let dir = tempfile::tempdir().unwrap();
    let a = Server::start(&dir.path().join("a"), &[]);
    let c = common::link_client();
    common::create_link(&c, &a, json!({ "url": "https://example.com/1" }));
    common::create_link(
        &c,
        &a,
        json!({ "url": "https://example.com/2", "alias": "two" }),
    );
    let file = dir.path().join("links.jsonl");
    std::fs::write(&file, export(&c, &a, "jsonl")).unwrap();

    // Into the same server: every line meets its own code; the default is fail.
    let out = cli(&["links", "import", "--server", &a.url("")], &file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("2 of 2 lines were not created"), "{stderr}");
    let rows: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for row in &rows {
        assert!(row["error"].as_str().unwrap().contains("is taken"), "{row}");
        assert!(row["code"].is_string(), "{row}");
    }

    let out = cli(
        &[
            "links",
            "import",
            "--on-conflict",
            "skip",
            "--server",
            &a.url(""),
        ],
        &file,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("0 links created, 0 failed, 2 skipped"),
        "{stderr}"
    );

    // The API says the same per line, with the flag as a query parameter.
    let body = std::fs::read_to_string(&file).unwrap();
    let answer: Value = c
        .post(a.url("/api/links/bulk?on_conflict=skip"))
        .body(body.clone())
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        (&answer["created"], &answer["failed"], &answer["skipped"]),
        (&json!(0), &json!(0), &json!(2)),
        "{answer}"
    );
    let answer: Value = c
        .post(a.url("/api/links/bulk"))
        .body(body)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(answer["failed"], 2, "{answer}");
    let r = c
        .post(a.url("/api/links/bulk?on_conflict=maybe"))
        .body("")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);

    // A code the server could never mint is refused with the reason.
    let answer: Value = c
        .post(a.url("/api/links/bulk"))
        .body("{\"code\":\"healthz\",\"url\":\"https://example.com/h\"}\n{\"code\":\"a-b\",\"url\":\"https://example.com/h\"}\n")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(answer["failed"], 2, "{answer}");
    assert!(
        answer["results"][1]["error"]
            .as_str()
            .unwrap()
            .contains("not a short code"),
        "{answer}"
    );
}

#[test]
fn line_numbers_count_blank_lines_and_bad_batches_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("a"), &[]);
    let c = common::link_client();
    let body = "{\"url\":\"https://example.com/1\"}\n\n\n{\"url\":\"ftp://bad\"}\n";
    let answer: Value = c
        .post(server.url("/api/links/bulk"))
        .body(body)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(answer["results"][0]["line"], 1, "{answer}");
    assert_eq!(answer["results"][1]["line"], 4, "{answer}");
    let csv = "url,alias\nhttps://example.com/c1,\n\nftp://bad,\n";
    let answer: Value = c
        .post(server.url("/api/links/bulk"))
        .header("content-type", "text/csv")
        .body(csv)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(answer["results"][1]["line"], 4, "{answer}");

    // The CLI, in batches of one, numbers the lines of the file.
    let file = dir.path().join("links.jsonl");
    std::fs::write(
        &file,
        "{\"url\":\"https://example.com/a\"}\n\n\n{\"url\":\"ftp://bad\"}\n\n{\"url\":\"ftp://worse\"}\n",
    )
    .unwrap();
    let out = cli(
        &[
            "links",
            "import",
            "--batch",
            "1",
            "--server",
            &server.url(""),
        ],
        &file,
    );
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lines: Vec<u64> = rows.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [1, 4, 6], "{rows:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 link created, 2 failed"), "{stderr}");
    let csv_file = dir.path().join("links.csv");
    std::fs::write(&csv_file, "url\nhttps://example.com/x\n\nftp://bad\n").unwrap();
    let out = cli(
        &[
            "links",
            "import",
            "--batch",
            "1",
            "--server",
            &server.url(""),
        ],
        &csv_file,
    );
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lines: Vec<u64> = rows.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [2, 4], "{rows:?}");

    for bad in ["0", "-3"] {
        let out = cli(
            &[
                "links",
                "import",
                "--batch",
                bad,
                "--server",
                &server.url(""),
            ],
            &file,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains(&format!("--batch must be between 1 and 100000, got {bad}")),
            "{stderr}"
        );
    }
}

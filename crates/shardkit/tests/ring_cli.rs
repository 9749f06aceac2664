//! End-to-end tests of `shardkit ring`: the built binary, its stdout contract, its
//! one-line errors and the map files it writes.

use std::path::Path;
use std::process::{Command, Output};

fn shardkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(args)
        .output()
        .expect("the shardkit binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts a failed run with exactly one `shardkit: error:` line on stderr.
fn assert_one_line_error(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "expected failure, stdout: {}",
        stdout(out)
    );
    assert_eq!(err.lines().count(), 1, "stderr: {err}");
    assert!(err.starts_with("shardkit: error: "), "stderr: {err}");
    assert!(err.contains(needle), "stderr {err:?} lacks {needle:?}");
}

#[test]
fn stats_json_has_exactly_the_contract_fields() {
    for algorithm in ["ring", "jump", "jump-back", "shards"] {
        let out = shardkit(&[
            "ring",
            "stats",
            "--nodes",
            "10",
            "--vnodes",
            "40",
            "--keys",
            "20000",
            "--algorithm",
            algorithm,
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{algorithm}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = stdout(&out);
        assert_eq!(text.lines().count(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let obj = v.as_object().unwrap();
        let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        let mut want = [
            "peak_to_avg",
            "moved_on_add",
            "moved_on_remove",
            "optimal_move",
            "lookup_ns",
        ];
        want.sort_unstable();
        let mut got = keys.clone();
        got.sort_unstable();
        assert_eq!(got, want, "{algorithm}");
        assert!(
            obj.values().all(|x| x.as_f64().is_some_and(f64::is_finite)),
            "{text}"
        );
        assert!(
            (obj["optimal_move"].as_f64().unwrap() - 1.0 / 11.0).abs() < 1e-12,
            "{text}"
        );
        assert!(obj["peak_to_avg"].as_f64().unwrap() >= 1.0);
    }
}

#[test]
fn stats_text_output_without_json() {
    let out = shardkit(&[
        "ring",
        "stats",
        "--nodes",
        "4",
        "--keys",
        "1000",
        "--algorithm",
        "jump",
    ]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("peak_to_avg"));
}

#[test]
fn stats_bad_input_is_one_line_error() {
    assert_one_line_error(
        &shardkit(&["ring", "stats", "--nodes", "0", "--json"]),
        "no nodes",
    );
    assert_one_line_error(
        &shardkit(&["ring", "stats", "--nodes", "3", "--vnodes", "0", "--json"]),
        "virtual nodes",
    );
    assert_one_line_error(
        &shardkit(&[
            "ring",
            "stats",
            "--nodes",
            "3",
            "--algorithm",
            "shards",
            "--shards",
            "100",
        ]),
        "power of two",
    );
    assert_one_line_error(
        &shardkit(&["ring", "stats", "--nodes", "3", "--keys", "0"]),
        "keys",
    );
}

fn init(dir: &Path, name: &str, nodes: &str, shards: &str) -> String {
    let path = dir.join(name).to_string_lossy().into_owned();
    let out = shardkit(&[
        "ring", "init", "--nodes", nodes, "--shards", shards, "--out", &path,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

#[test]
fn plan_add_prints_moves_and_writes_the_next_version() {
    let dir = tempfile::tempdir().unwrap();
    let map = init(dir.path(), "map.toml", "db1,db2,db3", "64");
    let out = shardkit(&["ring", "plan", "--map", &map, "--add", "db4"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    // 64 shards over 4 nodes: db4 receives 16, each line one move to it.
    assert_eq!(text.lines().count(), 16, "{text}");
    assert!(
        text.lines()
            .all(|l| l.starts_with("move shard ") && l.ends_with(" -> db4")),
        "{text}"
    );
    let written = std::fs::read_to_string(&map).unwrap();
    assert!(written.starts_with("version = 2\n"), "{written}");
    assert!(written.contains("name = \"db4\""));

    // Removing it again, as JSON, into another file; the input stays as it was.
    let out_path = dir.path().join("next.json").to_string_lossy().into_owned();
    let out = shardkit(&[
        "ring", "plan", "--map", &map, "--remove", "db4", "--out", &out_path, "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(plan["from_version"], 2);
    assert_eq!(plan["to_version"], 3);
    assert_eq!(plan["moves"].as_array().unwrap().len(), 16);
    assert_eq!(plan["moved_fraction"], 0.25);
    assert!((plan["optimal_fraction"].as_f64().unwrap() - 0.25).abs() < 1e-9);
    let ring = plan["ring_moved_fraction"].as_f64().unwrap();
    assert!(ring > 0.1 && ring < 0.4, "{ring}");
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains("16 shard moves, 25.0000% of keys"),
        "{summary}"
    );
    let next: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(next["version"], 3);
    assert_eq!(std::fs::read_to_string(&map).unwrap(), written);
}

#[test]
fn plan_summary_calls_the_exact_share_ideal_not_a_least_possible() {
    // 8192 shards over 6 nodes cannot split evenly: the new node gets 1365 shards,
    // 16.6626% of keys, a little under the exact 1/6.
    let dir = tempfile::tempdir().unwrap();
    let map = init(dir.path(), "map.toml", "a,b,c,d,e", "8192");
    let out = shardkit(&["ring", "plan", "--map", &map, "--add", "f", "--dry-run"]);
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(summary.contains("16.6626% of keys"), "{summary}");
    assert!(summary.contains("ideal 16.6667%"), "{summary}");
    assert!(!summary.contains("least possible"), "{summary}");
}

#[test]
fn plan_reweigh_and_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let map = init(dir.path(), "map.json", "a,b", "16");
    let before = std::fs::read_to_string(&map).unwrap();
    let out = shardkit(&[
        "ring",
        "plan",
        "--map",
        &map,
        "--reweigh",
        "a",
        "--weight",
        "3",
        "--dry-run",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Shares 12 and 4: four shards move from b to a.
    assert_eq!(stdout(&out).lines().count(), 4);
    assert_eq!(std::fs::read_to_string(&map).unwrap(), before);
}

#[test]
fn plan_works_when_weights_are_too_large_for_a_ring() {
    let dir = tempfile::tempdir().unwrap();
    let map = init(dir.path(), "map.toml", "a:4000000000,b", "16");
    let out = shardkit(&["ring", "plan", "--map", &map, "--add", "c", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(plan["ring_moved_fraction"].is_null());
    assert_eq!(plan["to_version"], 2);
}

#[test]
fn plan_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let map = init(dir.path(), "map.toml", "db1,db2", "8");
    assert_one_line_error(
        &shardkit(&["ring", "plan", "--map", &map, "--remove", "nope"]),
        "unknown node",
    );
    assert_one_line_error(
        &shardkit(&["ring", "plan", "--map", &map, "--add", "db1"]),
        "already",
    );
    assert_one_line_error(
        &shardkit(&[
            "ring", "plan", "--map", &map, "--add", "db9", "--weight", "0",
        ]),
        "weight 0",
    );
    let missing = dir
        .path()
        .join("missing.toml")
        .to_string_lossy()
        .into_owned();
    assert_one_line_error(
        &shardkit(&["ring", "plan", "--map", &missing, "--add", "x"]),
        "cannot read",
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "version = 1\nshards = 8\n[[nodes]]\nname = \"a\"\nshards = [\"0-6\"]\n",
    )
    .unwrap();
    let bad = bad.to_string_lossy().into_owned();
    assert_one_line_error(
        &shardkit(&["ring", "plan", "--map", &bad, "--add", "x"]),
        "shard 7 has no node",
    );
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "version = 1\nshards = [\n").unwrap();
    let broken = broken.to_string_lossy().into_owned();
    assert_one_line_error(
        &shardkit(&["ring", "plan", "--map", &broken, "--add", "x"]),
        "TOML line",
    );
    // init never overwrites.
    assert_one_line_error(
        &shardkit(&[
            "ring", "init", "--nodes", "a", "--shards", "8", "--out", &map,
        ]),
        "already exists",
    );
}

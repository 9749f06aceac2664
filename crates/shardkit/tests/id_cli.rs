//! `shardkit id` and `shardkit ticket` as a user runs them: the real binary, a temp
//! data directory, stdout and stderr read back.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn shardkit(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(args)
        .env("SHARDKIT_DATA", data)
        .env_remove("SHARDKIT_LAYOUT")
        .env_remove("SHARDKIT_EPOCH")
        .output()
        .expect("run shardkit")
}

fn lines(output: &Output) -> Vec<String> {
    assert!(
        output.status.success(),
        "shardkit failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn ids(output: &Output) -> Vec<u64> {
    lines(output).iter().map(|l| l.parse().unwrap()).collect()
}

/// A failure is one line on stderr, prefixed, and a non-zero exit.
fn assert_one_line_error(output: &Output, needle: &str) {
    assert!(!output.status.success(), "expected failure, got success");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line expected: {stderr}"
    );
    assert!(stderr.starts_with("shardkit: error: "), "{stderr}");
    assert!(
        stderr.contains(needle),
        "{stderr:?} should mention {needle:?}"
    );
    assert!(output.stdout.is_empty(), "nothing on stdout on error");
}

#[test]
fn id_next_prints_increasing_ids_in_the_asked_shard_and_later_runs_continue_above() {
    let dir = tempfile::tempdir().unwrap();
    let first = ids(&shardkit(
        dir.path(),
        &["id", "next", "--count", "5000", "--shard", "77"],
    ));
    assert_eq!(first.len(), 5000);
    assert!(first.windows(2).all(|w| w[0] < w[1]));
    assert!(first.iter().all(|id| (id >> 10) & 8191 == 77));
    let second = ids(&shardkit(dir.path(), &["id", "next", "--shard", "77"]));
    assert!(second[0] > *first.last().unwrap());
}

#[test]
fn a_sigkilled_run_never_has_its_ids_reissued() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args([
            "id",
            "next",
            "--count",
            "10000000",
            "--layout",
            "snowflake",
            "--shard",
            "3",
        ])
        .env("SHARDKIT_DATA", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut last = 0u64;
    let mut line = String::new();
    for _ in 0..200_000 {
        line.clear();
        reader.read_line(&mut line).unwrap();
        last = line.trim().parse().unwrap();
    }
    child.kill().unwrap(); // SIGKILL: no clean shutdown, the guard keeps its written-ahead mark
    child.wait().unwrap();
    let after = ids(&shardkit(
        dir.path(),
        &[
            "id",
            "next",
            "--layout",
            "snowflake",
            "--shard",
            "3",
            "--count",
            "10",
        ],
    ));
    assert!(after[0] > last, "{} must be above {last}", after[0]);
}

#[test]
fn a_second_process_waits_for_the_guard_then_names_what_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["id", "next", "--count", "10000000"])
        .env("SHARDKIT_DATA", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap(); // the first one holds the guard now
    let second = shardkit(dir.path(), &["id", "next"]);
    child.kill().unwrap();
    child.wait().unwrap();
    // The first run holds the guard for longer than the wait (10 s): the second says
    // once that it waits, then fails naming the holder.
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with("shardkit: waiting for another process"),
        "{stderr}"
    );
    assert!(lines[1].contains("in use by another generator"), "{stderr}");
}

#[test]
fn id_decode_prints_the_contract_json() {
    let dir = tempfile::tempdir().unwrap();
    // 1000 ms after the 2024 epoch, shard 5, sequence 7.
    let id = ((1000u64 << 23) | (5 << 10) | 7).to_string();
    let out = lines(&shardkit(dir.path(), &["id", "decode", &id, "1"]));
    assert_eq!(
        out[0],
        format!(
            r#"{{"id":"{id}","format":"snowflake","layout":"instagram","time":"2024-01-01T00:00:01.000Z","unix_ms":1704067201000,"shard":5,"sequence":7}}"#
        )
    );
    assert_eq!(out.len(), 2);
    let sony = lines(&shardkit(
        dir.path(),
        &[
            "id",
            "decode",
            "--layout",
            "sonyflake",
            &((100u64 << 24) | (2 << 16) | 9).to_string(),
        ],
    ));
    // Sony's layout: time << 24 | sequence << 16 | machine, since 2014-09-01.
    assert!(sony[0].contains(r#""layout":"sonyflake","time":"2014-09-01T00:00:01.000Z","unix_ms":1409529601000,"shard":9,"sequence":2"#), "{}", sony[0]);
    // What earlier releases called `sonyflake` keeps its meaning under its new name.
    let legacy = lines(&shardkit(
        dir.path(),
        &[
            "id",
            "decode",
            "--layout",
            "sonyflake-legacy",
            &((100u64 << 24) | (2 << 16) | 9).to_string(),
        ],
    ));
    assert!(legacy[0].contains(r#""layout":"sonyflake-legacy","time":"2024-01-01T00:00:01.000Z","unix_ms":1704067201000,"shard":2,"sequence":9"#), "{}", legacy[0]);
}

#[test]
fn uuid7_and_ulid_come_out_increasing_across_runs_and_decode_to_now() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for format in ["uuid7", "ulid"] {
        let first = lines(&shardkit(
            d,
            &["id", "next", "--format", format, "--count", "2000"],
        ));
        let second = lines(&shardkit(
            d,
            &["id", "next", "--format", format, "--count", "2000"],
        ));
        let all: Vec<&String> = first.iter().chain(&second).collect();
        assert_eq!(all.len(), 4000);
        // As text: both sort by time as strings, and the time guard carries the order
        // from one run to the next.
        assert!(
            all.windows(2).all(|w| w[0] < w[1]),
            "{format}: not increasing"
        );
        let expected_len = if format == "uuid7" { 36 } else { 26 };
        assert!(all.iter().all(|id| id.len() == expected_len));
        let decoded: Vec<serde_json::Value> =
            lines(&shardkit(d, &["id", "decode", all[0], all[3999]]))
                .iter()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        for json in &decoded {
            assert_eq!(json["format"], format, "{json}");
            assert!(
                (json["unix_ms"].as_i64().unwrap() - now).abs() < 60_000,
                "{json}"
            );
        }
        assert!(d.join(format!("{format}.guard")).exists());
    }
    assert_one_line_error(
        &shardkit(d, &["id", "next", "--format", "ulid", "--shard", "3"]),
        "--shard applies to snowflake ids only",
    );
    assert_one_line_error(
        &shardkit(d, &["id", "next", "--format", "uuid7", "--count", "0"]),
        "--count",
    );
    let wrong = shardkit(d, &["id", "next", "--format", "uuid4"]);
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("snowflake, uuid7 or ulid"));
    assert_one_line_error(
        &shardkit(d, &["id", "decode", "550e8400-e29b-41d4-a716-446655440000"]),
        "version 4",
    );
    assert_one_line_error(
        &shardkit(d, &["id", "decode", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"]),
        "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
    );
    // RFC 9562's own example and the ULID spec's, with their known times.
    let known = lines(&shardkit(
        d,
        &[
            "id",
            "decode",
            "017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
            "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        ],
    ));
    assert!(known[0].contains(r#""format":"uuid7","time":"2022-02-22T19:22:22.000Z","unix_ms":1645557742000,"counter":3267"#), "{}", known[0]);
    assert!(
        known[1].contains(
            r#""format":"ulid","time":"2016-07-30T23:54:10.259Z","unix_ms":1469922850259"#
        ),
        "{}",
        known[1]
    );
}

#[test]
fn an_id_made_now_decodes_to_now() {
    let dir = tempfile::tempdir().unwrap();
    let id = ids(&shardkit(
        dir.path(),
        &["id", "next", "--layout", "snowflake", "--shard", "1000"],
    ))[0];
    let json: serde_json::Value = serde_json::from_str(
        &lines(&shardkit(
            dir.path(),
            &["id", "decode", "--layout", "snowflake", &id.to_string()],
        ))[0],
    )
    .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!((json["unix_ms"].as_i64().unwrap() - now).abs() < 10_000);
    assert_eq!(json["shard"], 1000);
}

#[test]
fn bad_input_is_one_line_on_stderr_and_a_non_zero_exit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_one_line_error(
        &shardkit(d, &["id", "next", "--layout", "flickr"]),
        "unknown layout",
    );
    assert_one_line_error(
        &shardkit(d, &["id", "next", "--layout", "41/13/10"]),
        "add up to 63",
    );
    assert_one_line_error(
        &shardkit(d, &["id", "next", "--shard", "8192"]),
        "out of range",
    );
    assert_one_line_error(&shardkit(d, &["id", "next", "--count", "0"]), "--count");
    assert_one_line_error(
        &shardkit(d, &["id", "next", "--epoch", "2999-01-01T00:00:00Z"]),
        "future",
    );
    assert_one_line_error(&shardkit(d, &["id", "decode", "12ab"]), "not a decimal id");
    assert_one_line_error(
        &shardkit(d, &["id", "decode", "1", "-5"]),
        "not a decimal id",
    );
    assert_one_line_error(
        &shardkit(d, &["id", "decode", "18446744073709551615"]),
        "sign bit",
    );
    assert_one_line_error(
        &shardkit(d, &["id", "decode", "9000000000000000000"]),
        "from the future",
    );
    assert_one_line_error(&shardkit(d, &["ticket", "next", "no spaces"]), "invalid");
    assert_one_line_error(
        &shardkit(
            d,
            &["ticket", "next", "x", "--increment", "2", "--offset", "3"],
        ),
        "offset",
    );
    assert_one_line_error(
        &shardkit(d, &["ticket", "next", "x", "--count", "1000001"]),
        "count",
    );
}

#[test]
fn ticket_next_continues_across_runs_and_keeps_its_increment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(
        ids(&shardkit(
            d,
            &[
                "ticket",
                "next",
                "photos",
                "--count",
                "3",
                "--increment",
                "2",
                "--offset",
                "2"
            ]
        )),
        [2, 4, 6]
    );
    assert_eq!(
        ids(&shardkit(
            d,
            &[
                "ticket",
                "next",
                "photos",
                "--increment",
                "2",
                "--offset",
                "2"
            ]
        )),
        [8]
    );
    assert_eq!(ids(&shardkit(d, &["ticket", "next", "accounts"])), [1]);
    assert_one_line_error(
        &shardkit(d, &["ticket", "next", "photos"]),
        "exists with increment 2 offset 2",
    );
}

#[test]
fn serve_print_config_shows_flags_over_environment_over_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shardkit.toml");
    std::fs::write(
        &file,
        "http = \"127.0.0.1:9001\"\nresp = \"127.0.0.1:9002\"\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["serve", "--print-config", "--config"])
        .arg(&file)
        .args(["--resp", "127.0.0.1:9003"])
        .env("SHARDKIT_HTTP", "127.0.0.1:9004")
        .env("SHARDKIT_RESP", "127.0.0.1:9005")
        .env("SHARDKIT_API_KEY", "0123456789abcdef-secret")
        .output()
        .unwrap();
    let text = lines(&output).join("\n");
    assert!(
        text.contains("http = \"127.0.0.1:9004\""),
        "env over file: {text}"
    );
    assert!(
        text.contains("resp = \"127.0.0.1:9003\""),
        "flag over env: {text}"
    );
    assert!(
        text.contains("<set>") && !text.contains("secret"),
        "key hidden: {text}"
    );
    let bad = shardkit(
        dir.path(),
        &["serve", "--config", "/nonexistent/shardkit.toml"],
    );
    assert_one_line_error(&bad, "cannot read config file");
}

#[test]
fn errors_name_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_one_line_error(
        &shardkit(d, &["id", "decode", "99999999999999999999"]),
        "is past 64 bits",
    );
    assert_one_line_error(
        &shardkit(d, &["id", "next", "--count", "-5"]),
        "--count must be between 1 and 10000000, got -5",
    );

    // A file where the data directory should be: said so, for the CLI and the server.
    let file = d.join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    for args in [&["id", "next"][..], &["ticket", "next", "photos"][..]] {
        assert_one_line_error(&shardkit(&file, args), "is a file, not a directory");
    }
    let serve = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--resp",
            "127.0.0.1:0",
            "--data",
        ])
        .arg(&file)
        .env_remove("SHARDKIT_CONFIG")
        .output()
        .unwrap();
    assert!(!serve.status.success());
    let stderr = String::from_utf8_lossy(&serve.stderr);
    assert!(stderr.contains("is a file, not a directory"), "{stderr}");

    // The OS error is said once, not once per layer of the error.
    let data = d.join("guard-is-a-dir");
    std::fs::create_dir_all(data.join("ids.guard")).unwrap();
    let out = shardkit(&data, &["id", "next"]);
    assert_one_line_error(&out, "ids.guard");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("os error").count(), 1, "{stderr}");

    // A config error names the line and the setting.
    let config = d.join("bad.toml");
    std::fs::write(
        &config,
        "data = \"x\"\n\n[links]\ncreate_per_second = \"lots\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["serve", "--print-config", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_one_line_error(&out, "line 4 (setting links.create_per_second)");
}

/// `shardkit` with `args` started in the background, stdout and stderr piped.
fn spawn_shardkit(data: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(args)
        .env("SHARDKIT_DATA", data)
        .env_remove("SHARDKIT_LAYOUT")
        .env_remove("SHARDKIT_EPOCH")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start shardkit")
}

/// The outputs of two running commands, read at once: a command waiting for the other
/// must not be stuck behind a full pipe nobody reads.
fn both_outputs(a: std::process::Child, b: std::process::Child) -> (Output, Output) {
    let a = std::thread::spawn(move || a.wait_with_output().unwrap());
    let b = b.wait_with_output().unwrap();
    (a.join().unwrap(), b)
}

/// Holds `file` locked (as a running command does), starts `args`, checks that the
/// command says it waits, lets go, and returns the command's output.
fn run_while_locked_then_released(data: &Path, file: &Path, args: &[&str]) -> Output {
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(file)
        .unwrap();
    held.lock().unwrap();
    let mut child = spawn_shardkit(data, args);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    stderr.read_line(&mut said).unwrap();
    assert!(
        said.starts_with("shardkit: waiting for another process using the "),
        "{said:?}"
    );
    held.unlock().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(rest, "", "the wait is said once, and nothing else");
    child.wait_with_output().unwrap()
}

#[test]
fn id_next_waits_for_another_process_holding_the_time_guard() {
    let dir = tempfile::tempdir().unwrap();
    let first = ids(&shardkit(dir.path(), &["id", "next"]));
    let output = run_while_locked_then_released(
        dir.path(),
        &dir.path().join("ids.guard.lock"),
        &["id", "next", "--count", "3"],
    );
    let later = ids(&output);
    assert_eq!(later.len(), 3);
    assert!(later[0] > first[0]);
}

#[test]
fn two_id_next_runs_at_once_on_one_data_directory_both_succeed_with_distinct_ids() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["id", "next", "--count", "200000"];
    let (a, b) = (
        spawn_shardkit(dir.path(), &args),
        spawn_shardkit(dir.path(), &args),
    );
    let (a, b) = both_outputs(a, b);
    for output in [&a, &b] {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.is_empty() || stderr.starts_with("shardkit: waiting for another process"),
            "{stderr}"
        );
    }
    let (a, b) = (ids(&a), ids(&b));
    assert_eq!((a.len(), b.len()), (200_000, 200_000));
    let mut all: Vec<u64> = a.into_iter().chain(b).collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 400_000, "an id was issued twice");
}

#[test]
fn ticket_next_waits_for_another_process_holding_the_store() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        lines(&shardkit(dir.path(), &["ticket", "next", "orders"])),
        ["1"]
    );
    let output = run_while_locked_then_released(
        dir.path(),
        &dir.path().join("tickets.redb"),
        &["ticket", "next", "orders", "--count", "2"],
    );
    assert_eq!(lines(&output), ["2", "3"]);
}

#[test]
fn two_ticket_next_runs_at_once_on_one_data_directory_both_succeed_with_distinct_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["ticket", "next", "orders", "--count", "1000"];
    let (a, b) = (
        spawn_shardkit(dir.path(), &args),
        spawn_shardkit(dir.path(), &args),
    );
    let (a, b) = both_outputs(a, b);
    let mut all: Vec<u64> = lines(&a)
        .into_iter()
        .chain(lines(&b))
        .map(|l| l.parse().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (1..=2000).collect::<Vec<u64>>());
}

//! `docs/config.md` is what `shardkit serve --print-config --all` prints on a clean
//! environment, so the settings reference is generated from the code: this test fails
//! when they differ (`SHARDKIT_BLESS=1` rewrites the file). Every flag and environment
//! variable the reference names sets the key it is shown under.

use std::path::Path;
use std::process::Command;

const HEADER: &str = "# Settings reference\n\n\
Generated: this page is the output of `shardkit serve --print-config --all` on a clean \
environment (the defaults), checked by `crates/shardkit/tests/config_reference.rs`; \
`SHARDKIT_BLESS=1 cargo nextest run -p shardkit --all-features --test config_reference` \
writes it again after a settings change. On a node, the same command prints the values \
in effect (secrets shown as `<set>`). [design.md](design.md) says more about each \
setting; [deploy.md](deploy.md) shows them in use.\n\n";

/// `shardkit serve ARGS` with no `SHARDKIT_*` variable but `env`, in an empty directory.
fn serve(args: &[&str], env: &[(&str, &str)]) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shardkit"));
    cmd.current_dir(dir.path()).arg("serve").args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("SHARDKIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().unwrap();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn docs_config_md_is_what_print_config_all_prints() {
    let printed = serve(&["--print-config", "--all"], &[]).unwrap();
    let page = format!("{HEADER}```toml\n{printed}```\n");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.md");
    if std::env::var_os("SHARDKIT_BLESS").is_some() {
        std::fs::write(&path, &page).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == page,
        "docs/config.md is not what `shardkit serve --print-config --all` prints: run \
         `SHARDKIT_BLESS=1 cargo nextest run -p shardkit --all-features --test config_reference` \
         and commit the file"
    );
    // The reference is a settings file that reads back to the defaults.
    let plain = serve(&["--print-config"], &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("all.toml");
    std::fs::write(&file, &printed).unwrap();
    let reread = serve(&["--print-config", "--config", file.to_str().unwrap()], &[]).unwrap();
    assert_eq!(reread, plain);
}

/// A sample value for each variable the reference names, and what `--print-config`
/// then shows under its key; some need a partner to pass the settings' checks.
/// An environment variable, a value for it, what `--print-config` then shows, and the
/// variables it needs beside it.
struct Sample(
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const SAMPLES: &[Sample] = &[
    Sample(
        "SHARDKIT_DATA",
        "/srv/sk-sample",
        "data = \"/srv/sk-sample\"",
        &[],
    ),
    Sample(
        "SHARDKIT_HTTP",
        "127.0.0.1:18080",
        "http = \"127.0.0.1:18080\"",
        &[],
    ),
    Sample(
        "SHARDKIT_RESP",
        "127.0.0.1:16380",
        "resp = \"127.0.0.1:16380\"",
        &[],
    ),
    Sample(
        "SHARDKIT_API_KEY",
        "sample-key-0123456789",
        "api_key = \"<set>\"",
        &[],
    ),
    Sample("SHARDKIT_LOG_FORMAT", "json", "log_format = \"json\"", &[]),
    Sample(
        "SHARDKIT_STORE",
        "postgres",
        "store = \"postgres\"",
        &[("SHARDKIT_PG_SERVERS", "postgres://127.0.0.1/x")],
    ),
    Sample(
        "SHARDKIT_PG_SERVERS",
        "postgres://127.0.0.1/sample",
        "servers = [\"postgres://127.0.0.1/sample\"]",
        &[],
    ),
    Sample(
        "SHARDKIT_COUNTERS_LOG",
        "jetstream",
        "log = \"jetstream\"",
        &[],
    ),
    Sample(
        "SHARDKIT_COUNTERS_STORE",
        "sample",
        "store = \"sample\"",
        &[],
    ),
    Sample(
        "SHARDKIT_COUNTERS_ROLE",
        "replica",
        "role = \"replica\"",
        &[],
    ),
    Sample("SHARDKIT_COUNTERS_LEASE_MS", "4321", "lease_ms = 4321", &[]),
    Sample(
        "SHARDKIT_COUNTERS_STREAM_REPLICAS",
        "3",
        "stream_replicas = 3",
        &[],
    ),
    Sample(
        "SHARDKIT_COUNTERS_SNAPSHOTS_KEPT",
        "5",
        "snapshots_kept = 5",
        &[],
    ),
    Sample(
        "SHARDKIT_COUNTERS_ANNOUNCE",
        "10.9.8.7:6380",
        "announce = \"10.9.8.7:6380\"",
        &[],
    ),
    Sample(
        "SHARDKIT_NATS_URL",
        "nats://10.9.8.7:4222",
        "url = [\"nats://10.9.8.7:4222\"]",
        &[],
    ),
    Sample(
        "SHARDKIT_NATS_CREDS",
        "/etc/hostname",
        "creds = \"/etc/hostname\"",
        &[],
    ),
    Sample(
        "SHARDKIT_NATS_USER",
        "sample",
        "user = \"sample\"",
        &[("SHARDKIT_NATS_PASSWORD", "pw")],
    ),
    Sample(
        "SHARDKIT_NATS_PASSWORD",
        "pw",
        "password = \"<set>\"",
        &[("SHARDKIT_NATS_USER", "u")],
    ),
    Sample(
        "SHARDKIT_NATS_TOKEN",
        "sample-token",
        "token = \"<set>\"",
        &[],
    ),
];

#[test]
fn every_variable_the_reference_names_sets_its_key() {
    let reference = serve(&["--print-config", "--all"], &[]).unwrap();
    let mut named: Vec<&str> = reference
        .lines()
        .filter_map(|l| l.strip_prefix("# Also: "))
        .map(|l| l.trim_end_matches('.').rsplit(", ").next().unwrap())
        .collect();
    let mut sampled: Vec<&str> = SAMPLES.iter().map(|s| s.0).collect();
    named.sort_unstable();
    sampled.sort_unstable();
    assert_eq!(
        named, sampled,
        "the reference names these variables; sample each"
    );
    for Sample(var, value, shown, partners) in SAMPLES {
        let mut env = vec![(*var, *value)];
        env.extend_from_slice(partners);
        let printed =
            serve(&["--print-config"], &env).unwrap_or_else(|e| panic!("{var}={value}: {e}"));
        assert!(
            printed.contains(shown),
            "{var}={value} did not show {shown}:\n{printed}"
        );
    }
}

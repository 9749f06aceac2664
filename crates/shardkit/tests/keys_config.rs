//! `shardkit keys` given a node's settings file: the keys go to the data directory the
//! file names (and the node started on that file accepts them), `--data` beats
//! `SHARDKIT_DATA`, which beats the file, and a missing file is an error naming it.

mod common;

use common::cli::{outcome, shardkit, shardkit_in};
use common::Server;
use reqwest::blocking::Client;
use serde_json::json;
use std::path::Path;

/// A settings file at `dir/shardkit.toml` whose data directory is `data`.
fn config(dir: &Path, data: &Path) -> String {
    let file = dir.join("shardkit.toml");
    std::fs::write(&file, format!("data = {:?}\n", data.to_str().unwrap())).unwrap();
    file.to_str().unwrap().to_string()
}

/// The names `keys list` prints for `args` (one JSON object a line).
fn names(args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let listed = outcome(&shardkit(&[&["keys", "list"], args].concat(), env)).unwrap();
    listed
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["name"].to_string())
        .map(|n| n.trim_matches('"').to_string())
        .collect()
}

#[test]
fn a_key_added_with_only_the_config_is_one_the_node_on_that_config_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = config(dir.path(), &data);
    let key = outcome(&shardkit_in(
        dir.path(),
        &[
            "keys",
            "add",
            "maker",
            "--role",
            "links:create",
            "--config",
            &file,
        ],
        &[],
    ))
    .unwrap();
    assert!(key.starts_with("shk_"), "{key}");
    assert!(data.join("keys.json").exists());
    assert!(!dir.path().join("shardkit-data").exists());
    assert_eq!(names(&["--config", &file], &[]), ["maker"]);
    // SHARDKIT_CONFIG is the same setting as --config.
    assert_eq!(names(&[], &[("SHARDKIT_CONFIG", &file)]), ["maker"]);

    let server = Server::start_with_config(
        dir.path(),
        &format!("data = {:?}\n", data.to_str().unwrap()),
    );
    let create = |key: Option<&str>| {
        let mut r = Client::new()
            .post(server.url("/api/links"))
            .json(&json!({ "url": "https://example.com/configured" }));
        if let Some(key) = key {
            r = r.bearer_auth(key);
        }
        r.send().unwrap().status().as_u16()
    };
    assert_eq!(create(Some(&key)), 201);
    assert_eq!(create(None), 401);

    let revoked = shardkit(&["keys", "revoke", "maker"], &[("SHARDKIT_CONFIG", &file)]);
    assert!(revoked.status.success(), "{:?}", outcome(&revoked));
    assert!(names(&["--config", &file], &[]).is_empty());
}

#[test]
fn the_flag_beats_the_environment_which_beats_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (from_file, from_env, from_flag) = (
        dir.path().join("file"),
        dir.path().join("env"),
        dir.path().join("flag"),
    );
    let file = config(dir.path(), &from_file);
    let env = [("SHARDKIT_DATA", from_env.to_str().unwrap())];
    let add = |name: &str, args: &[&str], env: &[(&str, &str)]| {
        let args = [
            &["keys", "add", name, "--role", "ids", "--config", &file],
            args,
        ]
        .concat();
        outcome(&shardkit(&args, env)).unwrap();
    };
    add("in-file", &[], &[]);
    add("in-env", &[], &env);
    add("in-flag", &["--data", from_flag.to_str().unwrap()], &env);
    for (dir, name) in [
        (&from_file, "in-file"),
        (&from_env, "in-env"),
        (&from_flag, "in-flag"),
    ] {
        assert_eq!(names(&["--data", dir.to_str().unwrap()], &[]), [name]);
    }
}

#[test]
fn a_missing_or_broken_config_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere.toml");
    let missing = missing.to_str().unwrap();
    for args in [
        &["keys", "list", "--config", missing][..],
        &["keys", "add", "k", "--role", "ids", "--config", missing],
    ] {
        let err = outcome(&shardkit(args, &[])).unwrap_err();
        assert!(
            err.starts_with(&format!("shardkit: error: --config {missing}: ")),
            "{err}"
        );
    }
    let err = outcome(&shardkit_in(
        dir.path(),
        &["keys", "add", "k", "--role", "ids"],
        &[("SHARDKIT_CONFIG", missing)],
    ))
    .unwrap_err();
    assert!(err.contains(missing), "{err}");
    assert!(!dir.path().join("shardkit-data").exists());

    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "data = 7\n").unwrap();
    let err = outcome(&shardkit(
        &["keys", "list", "--config", broken.to_str().unwrap()],
        &[],
    ))
    .unwrap_err();
    assert!(
        err.contains("broken.toml") && err.contains("setting data"),
        "{err}"
    );
}

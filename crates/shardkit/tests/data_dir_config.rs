//! `shardkit id` and `shardkit ticket` given a node's settings file: they work in the
//! data directory the file names, `id next` and `id decode` use its `[ids]` layout, the
//! flags (and their variables) beat the file, and a missing file is an error naming it.

mod common;

use common::cli::{outcome, shardkit, shardkit_in};
use serde_json::Value;
use std::path::Path;

/// A settings file at `dir/node.toml` with data directory `dir/data` and `[ids] layout`.
fn config(dir: &Path, layout: &str) -> String {
    let file = dir.join("node.toml");
    let data = dir.join("data");
    std::fs::write(
        &file,
        format!(
            "data = {:?}\n[ids]\nlayout = \"{layout}\"\n",
            data.to_str().unwrap()
        ),
    )
    .unwrap();
    file.to_str().unwrap().to_string()
}

/// The `layout` `id decode ARGS` reports.
fn decoded_layout(args: &[&str]) -> String {
    let out = outcome(&shardkit(&[&["id", "decode"], args].concat(), &[])).unwrap();
    let json: Value = serde_json::from_str(&out).unwrap();
    json["layout"].as_str().unwrap().to_string()
}

#[test]
fn id_next_makes_the_nodes_ids_in_the_nodes_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = config(dir.path(), "snowflake");
    let id = outcome(&shardkit_in(
        dir.path(),
        &["id", "next", "--config", &file],
        &[],
    ))
    .unwrap();
    assert!(dir.path().join("data/ids.guard").exists());
    assert!(!dir.path().join("shardkit-data").exists());
    assert_eq!(decoded_layout(&["--config", &file, &id]), "snowflake");
    // The flag beats the file's layout.
    assert_eq!(
        decoded_layout(&["--config", &file, "--layout", "instagram", &id]),
        "instagram"
    );
    let id = outcome(&shardkit(
        &["id", "next", "--config", &file, "--layout", "41/12/10@1ms"],
        &[],
    ))
    .unwrap();
    assert_eq!(
        decoded_layout(&["--layout", "41/12/10@1ms", &id]),
        "41/12/10@1ms"
    );

    std::fs::write(&file, "[ids]\nlayout = \"bogus\"\n").unwrap();
    let err = outcome(&shardkit(&["id", "decode", "--config", &file, "1"], &[])).unwrap_err();
    assert!(err.contains("ids.layout"), "{err}");
}

#[test]
fn ticket_next_goes_on_in_the_directory_the_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let file = config(dir.path(), "instagram");
    let next = |env: &[(&str, &str)]| {
        outcome(&shardkit_in(dir.path(), &["ticket", "next", "photos"], env)).unwrap()
    };
    let from_config = [("SHARDKIT_CONFIG", file.as_str())];
    assert_eq!(next(&from_config), "1");
    assert_eq!(next(&from_config), "2");
    assert!(dir.path().join("data/tickets.redb").exists());
    assert!(!dir.path().join("shardkit-data").exists());
}

#[test]
fn the_flag_beats_the_environment_which_beats_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = config(dir.path(), "instagram");
    let (env_dir, flag_dir) = (dir.path().join("env"), dir.path().join("flag"));
    let env = [("SHARDKIT_DATA", env_dir.to_str().unwrap())];
    let next = |args: &[&str], env: &[(&str, &str)]| {
        let args = [&["ticket", "next", "t", "--config", &file], args].concat();
        outcome(&shardkit(&args, env)).unwrap();
    };
    next(&[], &env);
    assert!(env_dir.join("tickets.redb").exists());
    assert!(!dir.path().join("data").exists());
    next(&["--data", flag_dir.to_str().unwrap()], &env);
    assert!(flag_dir.join("tickets.redb").exists());
    next(&[], &[]);
    assert!(dir.path().join("data/tickets.redb").exists());
}

#[test]
fn a_missing_config_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere.toml");
    let missing = missing.to_str().unwrap();
    for args in [
        &["id", "next", "--config", missing][..],
        &["id", "decode", "--config", missing, "1"],
        &["ticket", "next", "t", "--config", missing],
    ] {
        let err = outcome(&shardkit_in(dir.path(), args, &[])).unwrap_err();
        assert!(
            err.starts_with(&format!("shardkit: error: --config {missing}: ")),
            "{args:?}: {err}"
        );
    }
    assert!(!dir.path().join("shardkit-data").exists());
}

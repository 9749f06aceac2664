//! `shardkit links import|export` given a node's settings file: they reach the server at
//! the file's `http` address (every interface reached through loopback) or its
//! `[links] base_url`, with the file's `api_key`; `--server` and `SHARDKIT_SERVER` beat
//! the file, and the error says where the unreachable URL came from.

mod common;

use common::cli::{outcome, shardkit};
use common::Server;
use std::path::Path;

const ADMIN: &str = "admin-key-0123456789abcdef";

/// A running server that needs the admin key, holding one link tagged `cfg`.
fn keyed_server(dir: &Path) -> Server {
    let server = Server::start(&dir.join("data"), &[("SHARDKIT_API_KEY", ADMIN)]);
    let r = reqwest::blocking::Client::new()
        .post(server.url("/api/links"))
        .bearer_auth(ADMIN)
        .json(&serde_json::json!({ "url": "https://example.com/cfg", "tags": ["cfg"] }))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    server
}

/// Writes `toml` to `dir/NAME` and answers its path.
fn file(dir: &Path, name: &str, toml: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, toml).unwrap();
    path.to_str().unwrap().to_string()
}

/// The URLs `links export` printed.
fn exported(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["url"].to_string())
        .collect()
}

#[test]
fn export_and_import_reach_the_server_the_file_names_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = keyed_server(dir.path());
    let port = server.http.port();
    // The node listens on every interface; the command line on its host uses loopback.
    let config = file(
        dir.path(),
        "node.toml",
        &format!("http = \"0.0.0.0:{port}\"\napi_key = \"{ADMIN}\"\n"),
    );
    let out = outcome(&shardkit(&["links", "export", "--config", &config], &[])).unwrap();
    assert_eq!(exported(&out), ["\"https://example.com/cfg\""]);

    let lines = file(
        dir.path(),
        "new.jsonl",
        "{\"url\":\"https://example.com/imported\"}\n",
    );
    let imported = shardkit(
        &["links", "import", &lines],
        &[("SHARDKIT_CONFIG", &config)],
    );
    assert!(imported.status.success(), "{:?}", outcome(&imported));
    let out = outcome(&shardkit(&["links", "export", "--config", &config], &[])).unwrap();
    assert_eq!(exported(&out).len(), 2, "{out}");

    // The key comes from the file only when neither --api-key nor its variable is set.
    let wrong = [("SHARDKIT_API_KEY", "wrong-key-0123456789abcdef")];
    let err = outcome(&shardkit(&["links", "export", "--config", &config], &wrong)).unwrap_err();
    assert!(err.contains("401"), "{err}");

    // The table form of [http], on IPv6's every-interface address, is not this server.
    let v6 = file(
        dir.path(),
        "v6.toml",
        &format!("[http]\nlisten = \"[::]:{port}\"\n"),
    );
    let err = outcome(&shardkit(&["links", "export", "--config", &v6], &[])).unwrap_err();
    assert!(
        err.contains(&format!("http://[::1]:{port} (from http of --config {v6})")),
        "{err}"
    );
}

#[test]
fn the_base_url_wins_over_the_listen_address() {
    let dir = tempfile::tempdir().unwrap();
    let server = keyed_server(dir.path());
    let config = file(
        dir.path(),
        "node.toml",
        &format!(
            "http = \"127.0.0.1:1\"\napi_key = \"{ADMIN}\"\n[links]\nbase_url = \"http://{}\"\n",
            server.http
        ),
    );
    let out = outcome(&shardkit(&["links", "export", "--config", &config], &[])).unwrap();
    assert_eq!(exported(&out), ["\"https://example.com/cfg\""]);
}

#[test]
fn the_flag_beats_the_environment_which_beats_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = keyed_server(dir.path());
    let config = file(
        dir.path(),
        "node.toml",
        &format!("http = \"{}\"\napi_key = \"{ADMIN}\"\n", server.http),
    );
    let nowhere = "http://127.0.0.1:1";
    let good = format!("http://{}", server.http);
    let export = |args: &[&str], env: &[(&str, &str)]| {
        outcome(&shardkit(
            &[&["links", "export", "--config", &config], args].concat(),
            env,
        ))
    };
    let err = export(&[], &[("SHARDKIT_SERVER", nowhere)]).unwrap_err();
    assert!(
        err.contains(&format!("cannot reach {nowhere} (from --server)")),
        "{err}"
    );
    assert!(export(&["--server", &good], &[("SHARDKIT_SERVER", nowhere)]).is_ok());
    let err = export(&["--server", nowhere], &[]).unwrap_err();
    assert!(err.contains("cannot reach"), "{err}");
    // SHARDKIT_HTTP is the node's address as `serve` reads it: over the file's.
    let err = export(&[], &[("SHARDKIT_HTTP", "127.0.0.1:1")]).unwrap_err();
    assert!(
        err.contains("cannot reach http://127.0.0.1:1 (from http"),
        "{err}"
    );
}

#[test]
fn a_missing_config_or_an_unknowable_port_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere.toml");
    let missing = missing.to_str().unwrap();
    let err = outcome(&shardkit(&["links", "export", "--config", missing], &[])).unwrap_err();
    assert!(
        err.starts_with(&format!("shardkit: error: --config {missing}: ")),
        "{err}"
    );
    let zero = file(dir.path(), "zero.toml", "http = \"127.0.0.1:0\"\n");
    let err = outcome(&shardkit(&["links", "export", "--config", &zero], &[])).unwrap_err();
    assert!(
        err.contains(&format!("http of --config {zero}: port 0")) && err.contains("--server"),
        "{err}"
    );
}

//! Starts the real `shardkit serve` on free ports in a temp data directory and stops
//! it when dropped. The ports come from the server's own "listening" log line, so
//! there is no race for a port.

#![allow(dead_code)]

pub mod browser;
pub mod cli;
pub mod delay_proxy;
pub mod hosts;
pub mod mmdb;
#[cfg(feature = "nats")]
pub mod nats;
#[cfg(feature = "nats")]
pub mod nats_cluster;
pub mod netns;
#[cfg(feature = "sql")]
pub mod pg_db;
pub mod pki;
pub mod raw_resp;
#[cfg(feature = "nats")]
pub mod replication;
pub mod tcp_proxy;
pub mod visitors;
#[cfg(feature = "nats")]
pub mod written_stream;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `shardkit keys ARGS --data DIR`: its stdout on success, its stderr on failure.
pub fn keys_cli(data: &Path, args: &[&str]) -> Result<String, String> {
    let data = data.to_str().unwrap();
    let args: Vec<&str> = ["keys"]
        .iter()
        .chain(args)
        .chain(&["--data", data])
        .copied()
        .collect();
    cli::outcome(&cli::shardkit(&args, &[]))
}

/// A running server.
pub struct Server {
    pub child: Child,
    pub http: SocketAddr,
    pub resp: SocketAddr,
    pub data: PathBuf,
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Server {
    /// Starts a server on 127.0.0.1 with port 0 for both listeners.
    pub fn start(data: &Path, env: &[(&str, &str)]) -> Server {
        Self::try_start(
            data,
            &["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"],
            env,
        )
        .expect("server should start")
    }

    /// Starts a server with the given flags; `Err(stderr)` if it exits instead.
    pub fn try_start(data: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Server, String> {
        Self::try_start_in(&[], data, args, env)
    }

    /// Starts a server as [`Server::try_start`] does, through `wrapper` (e.g. `ip netns
    /// exec NAME`, which execs the binary in place: the child is the server).
    pub fn try_start_in(
        wrapper: &[&str],
        data: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Server, String> {
        Self::try_start_within(wrapper, data, args, env, Duration::from_secs(30))
    }

    /// Starts a server as [`Server::try_start_in`] does, giving it `within` to say it
    /// listens: a node that waits for JetStream after a fault may take longer than the
    /// usual deadline, and killing it midway would only start its wait over.
    // The child is waited for in `Drop` (or right here on failure).
    #[allow(clippy::zombie_processes)]
    pub fn try_start_within(
        wrapper: &[&str],
        data: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        within: Duration,
    ) -> Result<Server, String> {
        let mut cmd = match wrapper.split_first() {
            None => Command::new(env!("CARGO_BIN_EXE_shardkit")),
            Some((program, rest)) => {
                let mut cmd = Command::new(program);
                cmd.args(rest).arg(env!("CARGO_BIN_EXE_shardkit"));
                cmd
            }
        };
        cmd.arg("serve")
            .arg("--data")
            .arg(data)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for var in [
            "SHARDKIT_API_KEY",
            "SHARDKIT_HTTP",
            "SHARDKIT_RESP",
            "SHARDKIT_CONFIG",
            "SHARDKIT_LOG_FORMAT",
            "SHARDKIT_LOG",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn shardkit");
        // Lines are read on a thread of their own, so a server that hangs before its
        // first line (or between two) cannot hold the test past the deadline.
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (lines, next) = std::sync::mpsc::channel::<String>();
        let sink = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line.clone());
                let _ = lines.send(line);
            }
        });
        let deadline = Instant::now() + within;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = next.recv_timeout(wait) else {
                // Out of time, or the server exited (its output ended).
                let _ = child.kill();
                let _ = child.wait();
                let seen = log.lock().unwrap().join("\n");
                return Err(seen);
            };
            if line.contains("shardkit listening") {
                let field = |name: &str| -> SocketAddr {
                    let start = line.find(&format!("{name}=")).unwrap() + name.len() + 1;
                    line[start..]
                        .split_whitespace()
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap()
                };
                let (http, resp) = (field("http"), field("resp"));
                return Ok(Server {
                    child,
                    http,
                    resp,
                    data: data.to_path_buf(),
                    log,
                });
            }
        }
    }

    /// Writes `toml` to `dir/shardkit.toml` and starts a server on it with its data in
    /// `dir/data`, on free ports: for tests that need settings the flags do not carry.
    pub fn start_with_config(dir: &Path, toml: &str) -> Server {
        let config = dir.join("shardkit.toml");
        std::fs::write(&config, toml).unwrap();
        let config = config.to_str().unwrap();
        Self::try_start(
            &dir.join("data"),
            &[
                "--http",
                "127.0.0.1:0",
                "--resp",
                "127.0.0.1:0",
                "--config",
                config,
            ],
            &[],
        )
        .expect("server should start")
    }

    /// Writes `toml` to `dir/shardkit.toml` and starts a server on it, which must
    /// refuse to start; answers what it said. Checks that the refusal wrote nothing:
    /// no data directory `dir/data`.
    pub fn refused_with_config(dir: &Path, toml: &str) -> String {
        let config = dir.join("shardkit.toml");
        std::fs::write(&config, toml).unwrap();
        let data = dir.join("data");
        let err = Self::try_start(
            &data,
            &[
                "--http",
                "127.0.0.1:0",
                "--resp",
                "127.0.0.1:0",
                "--config",
                config.to_str().unwrap(),
            ],
            &[],
        )
        .err()
        .unwrap_or_else(|| panic!("the server must refuse {toml:?}"));
        assert!(
            !data.exists(),
            "a refused start wrote {}: {err}",
            data.display()
        );
        err
    }

    /// `http://127.0.0.1:PORT` + path.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.http, path)
    }

    /// A Redis-protocol connection.
    pub fn redis(&self) -> redis::Connection {
        redis::Client::open(format!("redis://{}/", self.resp))
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "server did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP client that does not follow redirects (the link tests look at them).
pub fn link_client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// `POST /api/links` with `body`, which must succeed (201, or 200 for a reused link);
/// the link.
pub fn create_link(
    c: &reqwest::blocking::Client,
    server: &Server,
    body: serde_json::Value,
) -> serde_json::Value {
    let r = c.post(server.url("/api/links")).json(&body).send().unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    r.json().unwrap()
}

/// Integer `field` of a `COUNTER.INFO` answer (its fields and values in turn); panics
/// naming the answer when there is none.
pub fn info_field(info: &[redis::Value], field: &str) -> i64 {
    let mut it = info.iter();
    while let Some(k) = it.next() {
        let v = it.next().unwrap();
        if let redis::Value::BulkString(k) = k {
            if k == field.as_bytes() {
                if let redis::Value::Int(n) = v {
                    return *n;
                }
            }
        }
    }
    panic!("COUNTER.INFO has no integer {field}: {info:?}")
}

//! A shardkit node on each of [`Hosts`], replicating counter store through the NATS
//! server on its own host, each watched by a supervisor thread that starts it again
//! when it exits, as an operator's service manager would. A node that must start over
//! (a deposed leader, a replica behind the purge point) restarts itself in place; it
//! exits only when that fails, and the test counts both.

use super::Hosts;
use crate::common::Server;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The admin key every node is started with: a node listening on a LAN address
/// refuses to start without one, and clients `AUTH` with it.
pub const API_KEY: &str = "partition-test-admin-key-0123456789";

/// Restarts a supervisor makes at most before it leaves its node down, so a node
/// that exits at once on every start cannot keep the test busy.
const MAX_RESTARTS: usize = 20;

/// Runs whose logs a failing test shows from each end of a node's restarts.
const SHOWN_RUNS: usize = 3;

/// How long the first start is tried for (a new cluster has no JetStream until it
/// has elected its meta leader).
const START_FOR: Duration = Duration::from_secs(30);

/// How long a restart is tried for: a node cannot start while JetStream has no quorum
/// from where it stands, which lasts as long as the fault that made it exit.
const RESTART_FOR: Duration = Duration::from_secs(90);

/// How a node is configured: the counters on JetStream, one store.
#[derive(Debug, Clone)]
pub struct NodeSettings {
    /// `[counters] store`, also the Sentinel master name.
    pub store: String,
    /// `[counters] lease_ms`.
    pub lease_ms: u64,
    /// `[counters] stream_replicas`.
    pub stream_replicas: usize,
}

/// One exit of a node as its supervisor saw it.
#[derive(Debug, Clone)]
pub struct Exit {
    /// When it was noticed.
    pub at: Instant,
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Whether it runs again (a start within [`RESTART_FOR`] succeeded; false while
    /// the restart is under way).
    pub restarted: bool,
}

/// What the supervisor and the test share.
struct Shared {
    server: Mutex<Option<Server>>,
    exits: Mutex<Vec<Exit>>,
    /// Each run's log (the first, then one per restart), for a failing test's output.
    logs: Mutex<Vec<Arc<Mutex<Vec<String>>>>>,
    stop: AtomicBool,
}

/// A supervised node on one host.
pub struct Node {
    /// `h<i>`, as the test reports it.
    pub name: String,
    /// Its host's namespace.
    ns: String,
    /// Its RESP address (the same across restarts).
    pub resp: SocketAddr,
    /// Its HTTP address.
    pub http: SocketAddr,
    shared: Arc<Shared>,
    supervisor: Option<JoinHandle<()>>,
    _data: tempfile::TempDir,
}

/// The arguments of one start of node `i`.
struct Launch {
    wrapper: Vec<String>,
    data: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Launch {
    /// Starts it, trying again for up to `within`; `Err` holds the last attempt's log.
    /// Gives up early when `stop` is set.
    fn start(&self, within: Duration, stop: &AtomicBool) -> Result<Server, String> {
        let wrapper: Vec<&str> = self.wrapper.iter().map(String::as_str).collect();
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let deadline = Instant::now() + within;
        loop {
            match Server::try_start_in(&wrapper, &self.data, &args, &env) {
                Ok(server) => return Ok(server),
                Err(log) if Instant::now() >= deadline || stop.load(Ordering::Acquire) => {
                    return Err(log)
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }
}

impl Node {
    /// Starts the node of host `i` against `nats_url` and its supervisor; panics with
    /// its log if it does not start within [`START_FOR`].
    pub fn start(hosts: &Hosts, i: usize, nats_url: &str, settings: &NodeSettings) -> Node {
        let data = tempfile::tempdir().unwrap();
        let addr = &hosts.hosts[i].addr;
        let mut launch = Launch {
            wrapper: hosts.exec(i).iter().map(|s| s.to_string()).collect(),
            data: data.path().join("data"),
            args: listen_args(&format!("{addr}:0"), &format!("{addr}:0")),
            env: [
                ("SHARDKIT_API_KEY", API_KEY.to_string()),
                ("SHARDKIT_COUNTERS_LOG", "jetstream".into()),
                ("SHARDKIT_NATS_URL", nats_url.into()),
                ("SHARDKIT_COUNTERS_STORE", settings.store.clone()),
                ("SHARDKIT_COUNTERS_ROLE", "auto".into()),
                (
                    "SHARDKIT_COUNTERS_STREAM_REPLICAS",
                    settings.stream_replicas.to_string(),
                ),
                ("SHARDKIT_COUNTERS_LEASE_MS", settings.lease_ms.to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        };
        let never = AtomicBool::new(false);
        let server = launch
            .start(START_FOR, &never)
            .unwrap_or_else(|log| panic!("the node on host {i} did not start: {log}"));
        let (resp, http) = (server.resp, server.http);
        // A restart listens where the first run did, as a node with a fixed config
        // would: clients and the other nodes keep its address.
        launch.args = listen_args(&http.to_string(), &resp.to_string());
        let shared = Arc::new(Shared {
            logs: Mutex::new(vec![Arc::clone(&server.log)]),
            server: Mutex::new(Some(server)),
            exits: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let watched = Arc::clone(&shared);
        let supervisor = std::thread::spawn(move || supervise(&watched, &launch));
        Node {
            name: format!("h{i}"),
            ns: hosts.hosts[i].ns.clone(),
            resp,
            http,
            shared,
            supervisor: Some(supervisor),
            _data: data,
        }
    }

    /// Every exit so far, in order.
    pub fn exits(&self) -> Vec<Exit> {
        self.shared.exits.lock().unwrap().clone()
    }

    /// Every line the node logged so far, its runs in order.
    pub fn log_lines(&self) -> Vec<String> {
        let logs = self.shared.logs.lock().unwrap();
        logs.iter()
            .flat_map(|log| log.lock().unwrap().clone())
            .collect()
    }

    /// How many times the node restarted itself in place so far (its log says so on
    /// each, and the new image logs on into the same output).
    pub fn restarts_in_place(&self) -> usize {
        self.log_lines()
            .iter()
            .filter(|l| l.contains("restarting in place: a new image"))
            .count()
    }

    /// `redis://:<key>@<resp>/`: a client URL that authenticates.
    pub fn redis_url(&self) -> String {
        redis_url(self.resp)
    }

    /// The last `lines` lines of each run's log (all of them: `usize::MAX`), oldest
    /// run first; of a node that restarted many times, the first and last few runs.
    pub fn log_tails(&self, lines: usize) -> String {
        let logs = self.shared.logs.lock().unwrap();
        let mut out = String::new();
        let runs = logs.len();
        for (run, log) in logs.iter().enumerate() {
            if run >= SHOWN_RUNS && run + SHOWN_RUNS < runs {
                if run == SHOWN_RUNS {
                    out.push_str(&format!(
                        "--- node {}: runs {run} to {} not shown ---\n",
                        self.name,
                        runs - SHOWN_RUNS - 1
                    ));
                }
                continue;
            }
            let log = log.lock().unwrap();
            out.push_str(&format!(
                "--- node {} ({}) run {run} log tail ---\n",
                self.name, self.resp
            ));
            for line in &log[log.len().saturating_sub(lines)..] {
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        out
    }
}

/// `redis://:<key>@<addr>/`.
pub fn redis_url(addr: SocketAddr) -> String {
    format!("redis://:{API_KEY}@{addr}/")
}

fn listen_args(http: &str, resp: &str) -> Vec<String> {
    ["--http", http, "--resp", resp]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Polls the node's process; when it exits, records the exit and starts it again
/// (at most [`MAX_RESTARTS`] times), until told to stop.
fn supervise(shared: &Shared, launch: &Launch) {
    while !shared.stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(50));
        let code = {
            let mut server = shared.server.lock().unwrap();
            let Some(running) = server.as_mut() else {
                return;
            };
            match running.child.try_wait() {
                Ok(Some(status)) => {
                    *server = None;
                    status.code()
                }
                _ => continue,
            }
        };
        let exits = {
            let mut exits = shared.exits.lock().unwrap();
            exits.push(Exit {
                at: Instant::now(),
                code,
                restarted: false,
            });
            exits.len()
        };
        let started = if exits <= MAX_RESTARTS && !shared.stop.load(Ordering::Acquire) {
            launch.start(RESTART_FOR, &shared.stop).ok()
        } else {
            None
        };
        if started.is_some() {
            if let Some(last) = shared.exits.lock().unwrap().last_mut() {
                last.restarted = true;
            }
        }
        let Some(server) = started else { return };
        shared.logs.lock().unwrap().push(Arc::clone(&server.log));
        *shared.server.lock().unwrap() = Some(server);
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // A supervisor may be inside a start that waits for the node's first log line;
        // killing the node it is starting (a shardkit process on this host) ends that
        // wait, and the stop flag ends the supervisor.
        let binary = std::fs::canonicalize(env!("CARGO_BIN_EXE_shardkit")).ok();
        if let Some(supervisor) = self.supervisor.take() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !supervisor.is_finished() && Instant::now() < deadline {
                for pid in super::pids_in(&self.ns) {
                    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
                    if exe.is_some() && exe == binary {
                        super::kill(pid);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if supervisor.is_finished() {
                let _ = supervisor.join();
            }
        }
        // Dropping the server SIGKILLs and reaps it.
        self.shared.server.lock().unwrap().take();
    }
}

/// One node per host, their log tails printed if the test fails while they run
/// (`SHARDKIT_TEST_LOGS=1`: whole, on success too).
pub struct Nodes(pub Vec<Node>);

impl Nodes {
    /// A node on every host of `hosts`, node `i` on the NATS server `urls[i]`.
    pub fn start(hosts: &Hosts, urls: &[String], settings: &NodeSettings) -> Nodes {
        Nodes(
            (0..hosts.hosts.len())
                .map(|i| Node::start(hosts, i, &urls[i], settings))
                .collect(),
        )
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        let whole = std::env::var_os("SHARDKIT_TEST_LOGS").is_some();
        if std::thread::panicking() || whole {
            for node in &self.0 {
                eprintln!("{}", node.log_tails(if whole { usize::MAX } else { 30 }));
            }
        }
    }
}

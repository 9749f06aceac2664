//! A three-server NATS cluster with JetStream across [`Hosts`], one server per host
//! (`ip netns exec`), as it would be deployed on three machines: each listens on its
//! host's address (clients 4222, routes 6222) with routes to the others, from a config
//! file written here. Which binary runs is the caller's choice (Debian's 2.9, or a
//! current one from `scripts/nats-servers`), and `sync_interval: always` (fsync every
//! JetStream write, accepted from 2.10 on) is asked for or not. [`NatsOnHosts::start_secured`]
//! runs it as production runs it: clients log in and speak TLS only.

use super::Hosts;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Client port of every server (each on its own host address).
pub const CLIENT_PORT: u16 = 4222;
/// Route port of every server.
pub const ROUTE_PORT: u16 = 6222;

/// One server: its host, config file, store and process.
struct One {
    ns: String,
    addr: String,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

/// The running cluster; its `Drop` SIGKILLs every server it started.
pub struct NatsOnHosts {
    servers: Vec<One>,
    binary: PathBuf,
    login: Option<Login>,
}

/// A cluster's client login and TLS: a user with a password, and the servers'
/// certificate (one for every host's address) from a CA clients are given.
#[derive(Debug, Clone)]
pub struct Login {
    pub user: String,
    pub password: String,
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl NatsOnHosts {
    /// Writes a config per host and starts a server on each with `binary`;
    /// `sync_always` adds `sync_interval: always` to JetStream's settings. Panics if a
    /// server does not take connections within 20 s. Whether JetStream works yet is
    /// [`NatsOnHosts::wait_jetstream`]'s to say.
    pub fn start(hosts: &Hosts, binary: &Path, sync_always: bool) -> NatsOnHosts {
        Self::start_with(hosts, binary, sync_always, None)
    }

    /// As [`NatsOnHosts::start`], every client port asking for `login` and TLS.
    pub fn start_secured(hosts: &Hosts, binary: &Path, login: Login) -> NatsOnHosts {
        Self::start_with(hosts, binary, false, Some(login))
    }

    fn start_with(
        hosts: &Hosts,
        binary: &Path,
        sync_always: bool,
        login: Option<Login>,
    ) -> NatsOnHosts {
        let mut servers = Vec::new();
        for (i, host) in hosts.hosts.iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let routes: Vec<String> = hosts
                .hosts
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, h)| format!("\"nats://{}:{ROUTE_PORT}\"", h.addr))
                .collect();
            let mut config = config(
                &format!("h{i}"),
                &host.addr,
                &routes,
                dir.path(),
                sync_always,
            );
            if let Some(login) = &login {
                config.push_str(&format!(
                    "authorization {{ user: {:?}, password: {:?} }}\n\
                     tls {{ cert_file: {:?}, key_file: {:?}, timeout: 5 }}\n",
                    login.user, login.password, login.cert, login.key
                ));
            }
            std::fs::write(dir.path().join("nats.conf"), config).unwrap();
            servers.push(One {
                ns: host.ns.clone(),
                addr: host.addr.clone(),
                dir,
                child: None,
            });
        }
        let mut cluster = NatsOnHosts {
            servers,
            binary: binary.to_path_buf(),
            login,
        };
        for i in 0..cluster.servers.len() {
            cluster.restart(i);
        }
        cluster
    }

    /// `nats://<host i's address>:4222`: what the node on host `i` is given.
    pub fn url(&self, i: usize) -> String {
        format!("nats://{}:{CLIENT_PORT}", self.servers[i].addr)
    }

    /// SIGKILLs server `i` (its store stays).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.servers[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// (Re)starts server `i` on its config and store, as its host's service manager
    /// would; panics if it does not take connections within 20 s.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        let one = &mut self.servers[i];
        // `ip netns exec` execs the server in place: the child is the server.
        let child = Command::new("ip")
            .args(["netns", "exec", &one.ns])
            .arg(&self.binary)
            .arg("-c")
            .arg(one.dir.path().join("nats.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ip netns exec nats-server");
        one.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        let addr: std::net::SocketAddr = format!("{}:{CLIENT_PORT}", one.addr).parse().unwrap();
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err() {
            if let Some(status) = one.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "nats-server on {} exited ({status}): {}",
                    one.ns,
                    tail(&one.dir.path().join("nats.log"), 20)
                );
            }
            assert!(
                Instant::now() < deadline,
                "nats-server on {} did not listen",
                one.ns
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits up to `within` until JetStream is usable through server `via` (a stream
    /// with three replicas can be made, and is deleted again): a new cluster first
    /// elects its meta leader. `Err` says the last failure.
    pub fn wait_jetstream(&self, via: usize, within: Duration) -> Result<(), String> {
        let url = self.url(via);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let deadline = Instant::now() + within;
        let mut last = String::new();
        while Instant::now() < deadline {
            let attempt = async {
                tokio::time::timeout(Duration::from_secs(5), probe(&url, self.login.as_ref())).await
            };
            match runtime.block_on(attempt) {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) => last = e,
                Err(_) => last = "timed out".into(),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(format!(
            "JetStream not usable via {url} in {within:?}: {last}"
        ))
    }

    /// The last `lines` lines of every server's log, for a failing test's output.
    pub fn log_tails(&self, lines: usize) -> String {
        self.servers
            .iter()
            .map(|s| {
                format!(
                    "--- nats-server on {} ---\n{}",
                    s.ns,
                    tail(&s.dir.path().join("nats.log"), lines)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A server's config file.
fn config(name: &str, addr: &str, routes: &[String], dir: &Path, sync_always: bool) -> String {
    let store = dir.join("js");
    let log = dir.join("nats.log");
    let sync = if sync_always {
        "  sync_interval: always\n"
    } else {
        ""
    };
    format!(
        "server_name: {name}\n\
         listen: \"{addr}:{CLIENT_PORT}\"\n\
         log_file: \"{log}\"\n\
         jetstream {{\n  store_dir: \"{store}\"\n{sync}}}\n\
         cluster {{\n  name: shardkit-hosts\n  listen: \"{addr}:{ROUTE_PORT}\"\n  routes: [{routes}]\n}}\n",
        log = log.display(),
        store = store.display(),
        routes = routes.join(", "),
    )
}

/// Makes and deletes a three-replica probe stream through `url`, logged in as `login`.
async fn probe(url: &str, login: Option<&Login>) -> Result<(), String> {
    use async_nats::jetstream::{self, stream};
    let options = match login {
        None => async_nats::ConnectOptions::new(),
        Some(login) => async_nats::ConnectOptions::with_user_and_password(
            login.user.clone(),
            login.password.clone(),
        )
        .add_root_certificates(login.ca.clone())
        .require_tls(true),
    };
    let client = options
        .connection_timeout(Duration::from_secs(2))
        .connect(url)
        .await
        .map_err(|e| e.to_string())?;
    let js = jetstream::new(client);
    js.get_or_create_stream(stream::Config {
        name: "SK_PROBE".into(),
        subjects: vec!["sk.probe".into()],
        num_replicas: 3,
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .map_err(|e| e.to_string())?;
    js.delete_stream("SK_PROBE")
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The last `lines` lines of the file at `path` (empty if it cannot be read).
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl Drop for NatsOnHosts {
    fn drop(&mut self) {
        for i in 0..self.servers.len() {
            self.kill(i);
        }
    }
}

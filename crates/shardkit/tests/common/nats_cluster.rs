//! A private three-server NATS cluster with JetStream (`nats-server -js --cluster
//! ... --routes ...`), each server with its own store directory and loopback ports,
//! stopped when dropped. For streams with three replicas and for killing one server.

use super::replication::NatsUrl;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The running servers.
pub struct NatsCluster {
    servers: Vec<Option<Child>>,
    /// `nats://127.0.0.1:PORT` of each server.
    pub urls: Vec<String>,
    _dirs: Vec<tempfile::TempDir>,
}

/// A loopback port nothing listens on now (the kernel's pick; another process may
/// take it before it is used).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl NatsCluster {
    /// Starts `n` servers routed to each other; panics if they do not listen in 20 s.
    /// (Whether JetStream has elected its meta leader yet is for the caller to wait on:
    /// a node that cannot make its stream does not start.)
    pub fn start(n: usize) -> NatsCluster {
        let clients: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let routes: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let all_routes = routes
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut servers = Vec::new();
        let mut dirs = Vec::new();
        for i in 0..n {
            let dir = tempfile::tempdir().unwrap();
            let child = Command::new("nats-server")
                .args(["-js", "-a", "127.0.0.1", "-p", &clients[i].to_string()])
                .args(["-n", &format!("shardkit-test-{i}")])
                .args(["--cluster_name", "shardkit-test"])
                .args(["--cluster", &format!("nats://127.0.0.1:{}", routes[i])])
                .args(["--routes", &all_routes])
                .arg("-sd")
                .arg(dir.path())
                .arg("-l")
                .arg(dir.path().join("nats-server.log"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("nats-server on PATH");
            servers.push(Some(child));
            dirs.push(dir);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        for port in &clients {
            while TcpStream::connect(("127.0.0.1", *port)).is_err() {
                assert!(Instant::now() < deadline, "nats-server did not start");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        NatsCluster {
            servers,
            urls: clients
                .iter()
                .map(|p| format!("nats://127.0.0.1:{p}"))
                .collect(),
            _dirs: dirs,
        }
    }

    /// SIGKILLs server `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.servers[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl NatsUrl for NatsCluster {
    fn url_for(&self, node: usize) -> String {
        self.urls[node % self.urls.len()].clone()
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for i in 0..self.servers.len() {
            self.kill(i);
        }
    }
}

/// The current nats-server the test command installs (`SHARDKIT_TEST_NATS_CURRENT`,
/// from `scripts/nats-servers`), or `None` after saying that `what` is skipped.
pub fn current_nats_server(what: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var_os("SHARDKIT_TEST_NATS_CURRENT").map(Into::into);
    if found.is_none() {
        eprintln!(
            "{what}: skipped: SHARDKIT_TEST_NATS_CURRENT is not set \
             (SHARDKIT_TEST_NATS_CURRENT=$(bash scripts/nats-servers) runs it)"
        );
    }
    found
}

//! A private `nats-server -js` on a free loopback port, with its store in a temp
//! directory, stopped when dropped. Tests that stop or kill servers use their own, so
//! nothing they do touches the machine's NATS.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `nats-server` with JetStream.
pub struct Nats {
    child: Child,
    /// `nats://127.0.0.1:PORT`.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Nats {
    /// Starts one; panics if `nats-server` is not on PATH or does not come up in 20 s.
    pub fn start() -> Nats {
        let port = free_port();
        let dir = tempfile::tempdir().unwrap();
        let child = spawn(port, dir.path());
        Nats {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    /// Starts one from a config file holding `extra` (an `authorization` or `tls`
    /// block, say) beside the port and the JetStream store.
    #[allow(dead_code)]
    pub fn start_with(extra: &str) -> Nats {
        let port = free_port();
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("nats.conf");
        std::fs::write(
            &conf,
            format!(
                "listen: 127.0.0.1:{port}\njetstream {{ store_dir: {:?} }}\n{extra}\n",
                dir.path().join("js")
            ),
        )
        .unwrap();
        let child = Command::new("nats-server")
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server on PATH");
        wait_for_port(port);
        Nats {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    /// Stops the server as its service manager would (SIGTERM, then waits for it) and
    /// answers its store directory, whole on disk: what a backup copies.
    #[allow(dead_code)]
    pub fn stop(&mut self) -> &std::path::Path {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        self._dir.path()
    }

    /// Starts one on a free port over the store directory `dir` (a restored copy).
    #[allow(dead_code)]
    pub fn start_on_store(dir: tempfile::TempDir) -> Nats {
        let port = free_port();
        let child = spawn(port, dir.path());
        Nats {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    /// SIGKILLs the server, waits `down`, and starts it again on the same port and
    /// store directory (its streams and buckets come back from disk): a NATS outage.
    #[allow(dead_code)]
    pub fn outage(&mut self, down: Duration) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(down);
        let port = self.url.rsplit(':').next().unwrap().parse().unwrap();
        self.child = spawn(port, self._dir.path());
    }
}

/// `nats-server -js` on `port` with its store in `dir`, once it takes connections.
fn spawn(port: u16, dir: &std::path::Path) -> Child {
    let child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nats-server on PATH");
    wait_for_port(port);
    child
}

/// A loopback port nothing listens on now (the kernel's pick).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits up to 20 s for a server to take connections on `port`.
fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nats-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

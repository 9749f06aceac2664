//! Hosts on one LAN, as network namespaces on one machine: each host a namespace
//! joined to one bridge in the root namespace by a veth pair, plus one client
//! namespace on the same bridge, and the bridge itself holding an address so the test
//! process reaches every host. Faults are the two a LAN shows: a host unplugged from
//! the switch ([`Hosts::cut`]), and a host that still talks to its clients but not to
//! its peers ([`Hosts::isolate_from_hosts`]). Names carry the test's pid, and
//! [`Hosts`]'s `Drop` deletes exactly what it made, also when the test panics.
//!
//! [`nats`] runs a NATS cluster across the hosts, [`nodes`] a supervised shardkit node
//! on each.

#[cfg(feature = "nats")]
pub mod nats;
pub mod nodes;
#[cfg(feature = "nats")]
pub mod stream_leaders;

use super::netns::run;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::thread::JoinHandle;

/// Why hosts cannot be made here (not root, no `ip`), if they cannot. Unlike
/// [`super::netns::unavailable`] it does not need `tc`: these faults are links and
/// routes only.
pub fn unavailable() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root".into());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("no `ip` command".into());
    }
    None
}

/// One namespace on the bridge.
#[derive(Debug, Clone)]
pub struct Host {
    /// Namespace name (`/var/run/netns/<ns>`).
    pub ns: String,
    /// Its address on the LAN.
    pub addr: String,
    /// Its veth end on the bridge side (in the root namespace): down is unplugged.
    bridge_end: String,
}

/// The namespaces, bridge and links of one test run.
pub struct Hosts {
    /// The server hosts, `10.N.0.(i+1)`.
    pub hosts: Vec<Host>,
    /// The clients' host, `10.N.0.100`.
    pub client: Host,
    /// The bridge (the LAN's switch), `10.N.0.254` in the root namespace.
    bridge: String,
    /// Every namespace made so far, for `Drop` (also a half-made set after an error).
    made_ns: Vec<String>,
    /// Whether the bridge was made, for `Drop`.
    made_bridge: bool,
    /// The blackhole routes in force, as `(namespace, destination)`, so a heal removes
    /// exactly them.
    blackholes: std::sync::Mutex<Vec<(String, String)>>,
}

impl Hosts {
    /// `n_hosts` host namespaces and one client namespace, each on the bridge with its
    /// address and `lo` up. `Err` says which step failed (what was made is deleted).
    pub fn make(n_hosts: usize) -> Result<Hosts, String> {
        let pid = std::process::id();
        // Half way from where the region test starts for the same pid.
        let net = super::netns::free_net(pid + 50)?;
        let bridge = format!("sk{pid}br");
        let mut made = Hosts {
            hosts: Vec::new(),
            client: Host {
                ns: format!("sk{pid}c"),
                addr: format!("10.{net}.0.100"),
                bridge_end: format!("sk{pid}vc"),
            },
            bridge: bridge.clone(),
            made_ns: Vec::new(),
            made_bridge: false,
            blackholes: Default::default(),
        };
        run("ip", &["link", "add", &bridge, "type", "bridge"])?;
        made.made_bridge = true;
        run(
            "ip",
            &["addr", "add", &format!("10.{net}.0.254/24"), "dev", &bridge],
        )?;
        run("ip", &["link", "set", &bridge, "up"])?;
        for i in 0..n_hosts {
            made.hosts.push(Host {
                ns: format!("sk{pid}h{i}"),
                addr: format!("10.{net}.0.{}", i + 1),
                bridge_end: format!("sk{pid}v{i}"),
            });
        }
        let all: Vec<Host> = made
            .hosts
            .iter()
            .chain(std::iter::once(&made.client))
            .cloned()
            .collect();
        for host in &all {
            run("ip", &["netns", "add", &host.ns])?;
            made.made_ns.push(host.ns.clone());
            plug(host, &bridge)?;
        }
        Ok(made)
    }

    /// Every namespace's name: hosts in order, then the client's.
    pub fn namespaces(&self) -> Vec<String> {
        self.hosts
            .iter()
            .chain(std::iter::once(&self.client))
            .map(|h| h.ns.clone())
            .collect()
    }

    /// `ip netns exec <ns of host i>`, to start a process on host `i`.
    pub fn exec(&self, i: usize) -> [&str; 4] {
        ["ip", "netns", "exec", &self.hosts[i].ns]
    }

    /// Unplugs host `i` from the LAN (its bridge-side veth end down): nothing reaches
    /// it or leaves it, the test process included; processes on it still reach each
    /// other. [`Hosts::heal`] plugs it back.
    pub fn cut(&self, i: usize) -> Result<(), String> {
        run("ip", &["link", "set", &self.hosts[i].bridge_end, "down"])
    }

    /// Host `i` and the other hosts stop reaching each other (a blackhole route to
    /// each other host inside `i`, and to `i` inside each other host), while the client
    /// namespace and the test process still reach all of them: a leader cut off from
    /// the NATS quorum but not from its clients. [`Hosts::heal`] lifts it.
    pub fn isolate_from_hosts(&self, i: usize) -> Result<(), String> {
        let mut routes = Vec::new();
        for (j, other) in self.hosts.iter().enumerate().filter(|(j, _)| *j != i) {
            routes.push((self.hosts[i].ns.clone(), format!("{}/32", other.addr)));
            routes.push((
                self.hosts[j].ns.clone(),
                format!("{}/32", self.hosts[i].addr),
            ));
        }
        for (ns, to) in routes {
            run("ip", &["-n", &ns, "route", "add", "blackhole", &to])?;
            self.blackholes.lock().unwrap().push((ns, to));
        }
        Ok(())
    }

    /// Undoes [`Hosts::cut`] and [`Hosts::isolate_from_hosts`] of host `i` (whichever
    /// is in force; both if both).
    pub fn heal(&self, i: usize) -> Result<(), String> {
        run("ip", &["link", "set", &self.hosts[i].bridge_end, "up"])?;
        let ns = &self.hosts[i].ns;
        let addr = format!("{}/32", self.hosts[i].addr);
        let mut blackholes = self.blackholes.lock().unwrap();
        let (lift, keep): (Vec<_>, Vec<_>) = blackholes
            .drain(..)
            .partition(|(in_ns, to)| in_ns == ns || *to == addr);
        *blackholes = keep;
        for (in_ns, to) in lift {
            run("ip", &["-n", &in_ns, "route", "del", "blackhole", &to])?;
        }
        Ok(())
    }

    /// Runs `f` on a new thread that first enters namespace `ns` (a name from
    /// [`Hosts::namespaces`]), so the sockets it opens are that host's: a client living
    /// on a server host, or on the client host. Only that thread moves.
    pub fn in_ns<T: Send + 'static>(
        &self,
        ns: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> JoinHandle<T> {
        let path = format!("/var/run/netns/{ns}");
        std::thread::spawn(move || {
            enter(&path);
            f()
        })
    }
}

/// Joins namespace `host.ns` to `bridge` with a veth pair (root end `host.bridge_end`
/// on the bridge, `eth0` inside with the host's address), `lo` and both ends up.
fn plug(host: &Host, bridge: &str) -> Result<(), String> {
    let ns = host.ns.as_str();
    run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    run(
        "ip",
        &[
            "link",
            "add",
            &host.bridge_end,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            ns,
        ],
    )?;
    run("ip", &["link", "set", &host.bridge_end, "master", bridge])?;
    run("ip", &["link", "set", &host.bridge_end, "up"])?;
    run(
        "ip",
        &[
            "-n",
            ns,
            "addr",
            "add",
            &format!("{}/24", host.addr),
            "dev",
            "eth0",
        ],
    )?;
    run("ip", &["-n", ns, "link", "set", "eth0", "up"])
}

/// Moves the calling thread into the network namespace at `path`; panics naming it.
#[allow(unsafe_code)]
fn enter(path: &str) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("open {path}: {e}"));
    // SAFETY: `setns` only reads the descriptor, which `file` keeps open for the call,
    // and changes this thread's network namespace, no memory.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
}

/// The processes living in namespace `ns` (`ip netns pids`; none if it is gone).
pub fn pids_in(ns: &str) -> Vec<u32> {
    Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// SIGKILLs process `pid`.
pub fn kill(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .output();
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Whatever still runs on the hosts (a server a failing test left behind) was
        // started by this test: a namespace outlives its deletion while a process is
        // in it.
        for ns in &self.made_ns {
            for pid in pids_in(ns) {
                kill(pid);
            }
        }
        // Deleting a namespace deletes its veth end and so the bridge-side peer.
        for ns in &self.made_ns {
            if let Err(e) = run("ip", &["netns", "del", ns]) {
                eprintln!("cleaning up: {e}");
            }
        }
        if self.made_bridge {
            if let Err(e) = run("ip", &["link", "del", &self.bridge]) {
                eprintln!("cleaning up: {e}");
            }
        }
    }
}

//! Regions on one machine as network namespaces: each region a namespace reached from
//! the test (the root namespace) over its own veth pair with no delay, and every two
//! regions joined by a veth pair whose ends delay each packet (`tc netem`). Names are
//! unique per run; [`Regions`]'s `Drop` deletes the namespaces (and with them every
//! veth end), also when the test fails.

#![allow(dead_code)]

use std::process::Command;

/// Runs `ip`/`tc` arguments; the error names the command and its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program} cannot be run: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Why namespaces cannot be made here, if they cannot.
pub fn unavailable() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root".into());
    }
    for tool in ["ip", "tc"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("no `{tool}` command"));
        }
    }
    None
}

/// A `10.N.0.0/16` no interface of this machine has an address in (N from 100 to 199,
/// trying from `start` on), so concurrent runs do not share a subnet; `start` comes
/// from the pid, shifted by each kind of test so two kinds in one run do not meet.
pub fn free_net(start: u32) -> Result<u32, String> {
    for k in 0..100 {
        let net = 100 + (start + k) % 100;
        let output = Command::new("ip")
            .args([
                "-o",
                "-4",
                "addr",
                "show",
                "to",
                &format!("10.{net}.0.0/16"),
            ])
            .output()
            .map_err(|e| format!("ip cannot be run: {e}"))?;
        if output.stdout.is_empty() {
            return Ok(net);
        }
    }
    Err("no free 10.N.0.0/16 for the test's links".into())
}

/// One region's namespace and its addresses.
pub struct Region {
    /// Namespace name.
    pub ns: String,
    /// Its address as the test (root namespace) reaches it.
    pub from_test: String,
    /// The root namespace's address on that link (what the region reaches the test at).
    pub test_side: String,
    /// Its address on the link to each other region, by the other region's index.
    pub to_peer: Vec<Option<String>>,
    /// Its ends of the links to the other regions (device names inside the namespace).
    pub peer_devices: Vec<String>,
}

/// The namespaces of one test run.
pub struct Regions {
    /// The regions in order.
    pub regions: Vec<Region>,
}

impl Regions {
    /// `count` namespaces, each reached from the test over its own link (no delay);
    /// [`Regions::join_with_netem`] links them to each other.
    pub fn make(count: usize) -> Result<Regions, String> {
        let pid = std::process::id();
        let net = free_net(pid)?;
        let mut made = Regions {
            regions: Vec::new(),
        };
        for i in 0..count {
            let ns = format!("sk{pid}r{i}");
            run("ip", &["netns", "add", &ns])?;
            made.regions.push(Region {
                ns: ns.clone(),
                from_test: format!("10.{net}.{i}.2"),
                test_side: format!("10.{net}.{i}.1"),
                to_peer: vec![None; count],
                peer_devices: Vec::new(),
            });
            run("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
            // The test's link to the region: root end `sk<pid>t<i>`, region end `eth0`.
            let root_end = format!("sk{pid}t{i}");
            run(
                "ip",
                &[
                    "link", "add", &root_end, "type", "veth", "peer", "name", "eth0", "netns", &ns,
                ],
            )?;
            run(
                "ip",
                &[
                    "addr",
                    "add",
                    &format!("10.{net}.{i}.1/24"),
                    "dev",
                    &root_end,
                ],
            )?;
            run("ip", &["link", "set", &root_end, "up"])?;
            run(
                "ip",
                &[
                    "-n",
                    &ns,
                    "addr",
                    "add",
                    &format!("10.{net}.{i}.2/24"),
                    "dev",
                    "eth0",
                ],
            )?;
            run("ip", &["-n", &ns, "link", "set", "eth0", "up"])?;
        }
        Ok(made)
    }

    /// Joins every two regions by a veth pair whose ends delay each packet
    /// `one_way_ms` (`tc netem`), so a round trip between regions takes twice that.
    /// `Err`: this kernel has no netem (or another step failed), saying which.
    pub fn join_with_netem(&mut self, one_way_ms: u32) -> Result<(), String> {
        let pid = std::process::id();
        let net: u32 = self.regions[0]
            .from_test
            .split('.')
            .nth(1)
            .and_then(|n| n.parse().ok())
            .ok_or("no test address")?;
        let count = self.regions.len();
        let made = self;
        for a in 0..count {
            for b in a + 1..count {
                let subnet = 100 + a * 10 + b;
                let (dev_a, dev_b) = (format!("p{b}"), format!("p{a}"));
                let (ns_a, ns_b) = (made.regions[a].ns.clone(), made.regions[b].ns.clone());
                let tmp = format!("sk{pid}x{a}{b}");
                run(
                    "ip",
                    &[
                        "link", "add", &tmp, "type", "veth", "peer", "name", &dev_b, "netns", &ns_b,
                    ],
                )?;
                run("ip", &["link", "set", &tmp, "netns", &ns_a])?;
                run("ip", &["-n", &ns_a, "link", "set", &tmp, "name", &dev_a])?;
                let addr_a = format!("10.{net}.{subnet}.1");
                let addr_b = format!("10.{net}.{subnet}.2");
                for (ns, dev, addr) in [(&ns_a, &dev_a, &addr_a), (&ns_b, &dev_b, &addr_b)] {
                    run(
                        "ip",
                        &["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev],
                    )?;
                    run("ip", &["-n", ns, "link", "set", dev, "up"])?;
                    run(
                        "tc",
                        &[
                            "-n",
                            ns,
                            "qdisc",
                            "add",
                            "dev",
                            dev,
                            "root",
                            "netem",
                            "delay",
                            &format!("{one_way_ms}ms"),
                        ],
                    )?;
                }
                made.regions[a].to_peer[b] = Some(addr_a);
                made.regions[b].to_peer[a] = Some(addr_b);
                made.regions[a].peer_devices.push(dev_a);
                made.regions[b].peer_devices.push(dev_b);
            }
        }
        Ok(())
    }

    /// Region `i`'s address as region `from` reaches it.
    pub fn address_of(&self, i: usize, from: usize) -> String {
        self.regions[i].to_peer[from]
            .clone()
            .expect("two regions are linked")
    }

    /// Cuts region `i` off from every other region (netem loss 100% on its ends), or
    /// mends it (back to the delay alone).
    pub fn cut_off(&self, i: usize, cut: bool, one_way_ms: u32) -> Result<(), String> {
        let region = &self.regions[i];
        let delay = format!("{one_way_ms}ms");
        for dev in &region.peer_devices {
            let mut args = vec![
                "-n", &region.ns, "qdisc", "change", "dev", dev, "root", "netem", "delay", &delay,
            ];
            if cut {
                args.extend(["loss", "100%"]);
            }
            run("tc", &args)?;
        }
        Ok(())
    }

    /// `ip netns exec <ns>`, to start a process inside region `i`.
    pub fn exec(&self, i: usize) -> [&str; 4] {
        ["ip", "netns", "exec", &self.regions[i].ns]
    }
}

impl Drop for Regions {
    fn drop(&mut self) {
        for region in &self.regions {
            // Deleting the namespace deletes its veth ends and so their root peers.
            if let Err(e) = run("ip", &["netns", "del", &region.ns]) {
                eprintln!("cleaning up: {e}");
            }
        }
    }
}

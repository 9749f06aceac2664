//! The addresses a node hands clients — in `ROLE`, `INFO replication`, Sentinel replies,
//! the HTTP 421 and the members' and cluster's records — which are not always the ones
//! it binds: bound to `0.0.0.0`, a node must be told what address reaches it
//! (`[counters] announce` in replication mode, `[cluster] announce` in cluster mode).

use std::net::SocketAddr;

/// What clients are told to dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announced {
    /// The Redis-protocol address, `host:port`.
    pub resp: String,
    /// The HTTP address, `host:port`: the announced host with the HTTP port bound.
    pub http: String,
}

/// Refuses an `announce` value that is not `host:port`, naming `setting`.
pub fn check(setting: &str, announce: &str) -> anyhow::Result<()> {
    let ok = announce.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty()
            && !host.contains(char::is_whitespace)
            && port.parse::<u16>().is_ok_and(|p| p > 0)
    });
    if !ok {
        anyhow::bail!("{setting} must be host:port (the address clients reach this node at), got {announce:?}");
    }
    Ok(())
}

/// Refuses to hand out an unspecified address: bound to `0.0.0.0` or `::` with no
/// `announce`, clients would be told to dial `0.0.0.0`.
pub fn check_reachable(
    setting: &str,
    announce: Option<&str>,
    resp: SocketAddr,
    http: SocketAddr,
) -> anyhow::Result<()> {
    if announce.is_some() {
        return Ok(());
    }
    for (name, addr) in [("resp", resp), ("http", http)] {
        if addr.ip().is_unspecified() {
            anyhow::bail!(
                "{name} listens on {addr} and {setting} is not set: clients would be told to \
                 dial {}; set {setting} = \"host:port\" (this node's address as clients reach it) \
                 or listen on that address",
                addr.ip()
            );
        }
    }
    Ok(())
}

/// The addresses to hand out: `announce` (checked by [`check`]) for RESP and its host
/// with the bound HTTP port, else the bound addresses themselves.
pub fn addresses(announce: Option<&str>, resp: SocketAddr, http: SocketAddr) -> Announced {
    match announce.and_then(|a| a.rsplit_once(':').map(|(host, _)| (a, host))) {
        Some((announce, host)) => Announced {
            resp: announce.to_string(),
            http: format!("{host}:{}", http.port()),
        },
        None => Announced {
            resp: resp.to_string(),
            http: http.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_announced_host_goes_with_both_ports() {
        let a = addresses(
            Some("db1.example:6380"),
            addr("0.0.0.0:6380"),
            addr("0.0.0.0:8080"),
        );
        assert_eq!(
            (a.resp.as_str(), a.http.as_str()),
            ("db1.example:6380", "db1.example:8080")
        );
        let v6 = addresses(
            Some("[2001:db8::1]:7000"),
            addr("[::]:7000"),
            addr("[::]:8080"),
        );
        assert_eq!(v6.http, "[2001:db8::1]:8080");
        let bound = addresses(None, addr("10.0.0.5:6380"), addr("10.0.0.5:8080"));
        assert_eq!(bound.resp, "10.0.0.5:6380");
    }

    #[test]
    fn unspecified_without_announce_and_bad_values_name_the_setting() {
        let err = check_reachable(
            "counters.announce",
            None,
            addr("0.0.0.0:6380"),
            addr("127.0.0.1:8080"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("counters.announce") && err.contains("0.0.0.0"),
            "{err}"
        );
        check_reachable(
            "counters.announce",
            Some("h:1"),
            addr("0.0.0.0:6380"),
            addr("[::]:8080"),
        )
        .unwrap();
        check_reachable(
            "counters.announce",
            None,
            addr("10.0.0.5:6380"),
            addr("10.0.0.5:8080"),
        )
        .unwrap();
        for bad in ["nohost", ":6380", "h:0", "h:99999", "h :1"] {
            let err = check("cluster.announce", bad).unwrap_err().to_string();
            assert!(err.contains("cluster.announce"), "{err}");
        }
        check("cluster.announce", "[::1]:6380").unwrap();
    }
}

//! What an acknowledged increment survives on the NATS it was written to, said at
//! start: with `[counters] log = "jetstream"` an increment is acknowledged once
//! JetStream stored it, so its durability is the NATS cluster's. nats-server before
//! 2.10 cannot fsync each write (it has no `sync_interval`; by default a server syncs
//! every two minutes, and its stream metadata not at all), so a power cut of the NATS
//! hosts can lose acknowledged increments, even every one of a new stream; a stream
//! with one replica loses them with its host. The node cannot read the server's
//! `sync_interval` from a client connection, so on 2.10+ it can only remind.

/// The first nats-server release with `jetstream { sync_interval: always }`.
const SYNC_ALWAYS_SINCE: (u64, u64) = (2, 10);

/// The warning for a node whose log is on nats-server `version` with `replicas`
/// copies, or `None` when nothing is known to be missing.
pub fn warning(version: &str, replicas: usize) -> Option<String> {
    let mut missing = Vec::new();
    match parse(version) {
        Some(v) if v < SYNC_ALWAYS_SINCE => missing.push(format!(
            "nats-server {version} cannot fsync each write (jetstream {{ sync_interval: always }} needs 2.10 or later), so a power cut of the NATS hosts can lose acknowledged increments"
        )),
        None => missing.push(format!(
            "nats-server version `{version}` is not understood; check that it is 2.10 or later with jetstream {{ sync_interval: always }}"
        )),
        Some(_) => {}
    }
    if replicas < 3 {
        missing.push(format!(
            "the stream keeps {replicas} cop{} (stream_replicas), so the loss of one NATS host can lose acknowledged increments; use 3",
            if replicas == 1 { "y" } else { "ies" }
        ));
    }
    (!missing.is_empty()).then(|| missing.join("; "))
}

/// `major.minor` of a version string such as `2.9.10` or `v2.15.1-beta`.
fn parse(version: &str) -> Option<(u64, u64)> {
    let v = version.trim().trim_start_matches('v');
    let mut parts = v.split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_servers_and_single_copies_are_named() {
        let w = warning("2.9.10", 3).unwrap();
        assert!(w.contains("2.9.10") && w.contains("sync_interval"), "{w}");
        assert_eq!(warning("2.15.1", 3), None);
        assert_eq!(warning("v2.10.0", 3), None);
        let w = warning("2.15.1", 1).unwrap();
        assert!(w.contains("1 copy"), "{w}");
        assert!(warning("2.9.10", 1).unwrap().contains("; "));
        assert!(warning("weird", 3).is_some());
    }
}

//! Which nodes are up, judged on this node's own clock rather than on NATS removing a
//! record when it lapses.
//!
//! A node record's key goes away [`super::registry::RECORD_LIFE`] after its last write,
//! but NATS can be late with that (the bucket's stream electing a leader after a
//! partition: a cut node's groups then stayed without an owner for many seconds). So
//! the failover check notes, for every record, when it first saw the record's current
//! revision; a record whose revision has not moved for a whole record life is dead
//! whether or not its key is still there, as the counters' leases are judged
//! (`replication::jetstream::election`; both with
//! [`shardkit_util::revision_clock::RevisionClock`]). When the bucket cannot be read every clock
//! starts again: the nodes could not renew their records then either.

use super::registry::{NodeRecord, RECORD_LIFE};
use shardkit_util::revision_clock::RevisionClock;
use std::collections::HashMap;
use std::time::Instant;

/// The revision last seen of each node's record and since when.
#[derive(Debug, Default)]
pub struct Liveness {
    seen: HashMap<String, RevisionClock>,
}

impl Liveness {
    /// The records among `records` (each with its KV revision, read at `now`) that are
    /// live: renewed within a record life as this node saw them.
    pub fn live(&mut self, records: Vec<(NodeRecord, u64)>, now: Instant) -> Vec<NodeRecord> {
        let mut seen = HashMap::with_capacity(records.len());
        let mut out = Vec::new();
        for (record, revision) in records {
            let mut clock = self.seen.get(&record.id).copied().unwrap_or_default();
            let stood = clock.stood(revision, now);
            seen.insert(record.id.clone(), clock);
            if stood < RECORD_LIFE {
                out.push(record);
            }
        }
        self.seen = seen;
        out
    }

    /// The bucket could not be read: every record's clock starts again at the next
    /// reading.
    pub fn unreadable(&mut self) {
        self.seen.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn record(id: &str) -> NodeRecord {
        NodeRecord {
            id: id.into(),
            announce: "127.0.0.1:6380".into(),
            http: String::new(),
            started_ms: 0,
            following: Vec::new(),
        }
    }

    fn ids(records: &[NodeRecord]) -> Vec<&str> {
        records.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn a_record_not_renewed_for_a_life_is_dead_though_its_key_stays() {
        let mut l = Liveness::default();
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let both = |ra, rb| vec![(record("a"), ra), (record("b"), rb)];
        assert_eq!(ids(&l.live(both(1, 2), at(0.0))), ["a", "b"]);
        // b renews, a does not: a is dead a record life after it was first seen.
        assert_eq!(ids(&l.live(both(1, 5), at(2.0))), ["a", "b"]);
        assert_eq!(ids(&l.live(both(1, 6), at(3.0))), ["b"]);
        // a renews again: live at once.
        assert_eq!(ids(&l.live(both(9, 6), at(3.5))), ["a", "b"]);
        // A key gone is a node gone.
        assert_eq!(ids(&l.live(vec![(record("a"), 9)], at(4.0))), ["a"]);
        // An unreadable bucket starts every clock again.
        l.unreadable();
        assert_eq!(ids(&l.live(vec![(record("a"), 9)], at(10.0))), ["a"]);
        assert!(l.live(vec![(record("a"), 9)], at(13.0)).is_empty());
    }
}

//! Whether the nodes hold what the writers were told: for every key, no node below
//! the acknowledged increments (lost), none above those plus the unacknowledged ones
//! (phantom), all nodes equal (divergence), and equal `COUNTER.DIGEST`s; each failure
//! named by round, node, key and values.

use crate::common::hosts::nodes::Node;
use crate::readings::Seen;
use crate::writers::{Written, COLUMN, KEYS};
use std::collections::BTreeMap;

/// Every increment of the test so far, per key: acknowledged, and sent without an
/// acknowledgement (which may or may not have been applied).
#[derive(Debug, Default)]
pub struct Totals {
    /// Acknowledged increments per key.
    pub acked: [i64; KEYS.len()],
    /// Increments sent and never acknowledged, per key.
    pub indeterminate: [i64; KEYS.len()],
}

impl Totals {
    /// Adds what one writer knows.
    pub fn add(&mut self, w: &Written) {
        for k in 0..KEYS.len() {
            self.acked[k] += w.acked[k];
            self.indeterminate[k] += w.indeterminate[k];
        }
    }
}

/// Adds to `found` (once per node and key, or per lsn) what one reading shows that
/// no replication lag explains, even if a later reading is right: a value above every
/// increment ever sent (a phantom served to readers), or two nodes at the same lsn
/// with different digests (diverged copies).
pub fn never_right(
    tag: &str,
    nodes: &[Node],
    seen: &[Seen],
    totals: &Totals,
    found: &mut BTreeMap<String, String>,
) {
    for (k, key) in KEYS.iter().enumerate() {
        let most = totals.acked[k] + totals.indeterminate[k];
        for (node, s) in nodes.iter().zip(seen) {
            let Some(v) = s.values[k].filter(|&v| v > most) else {
                continue;
            };
            found
                .entry(format!("phantom {} {key}", node.name))
                .or_insert_with(|| {
                    format!(
                        "{tag}: PHANTOM while settling on node {} ({}): {key}:{COLUMN} = {v} > \
                         {} acknowledged + {} indeterminate",
                        node.name, node.resp, totals.acked[k], totals.indeterminate[k]
                    )
                });
        }
    }
    for i in 0..seen.len() {
        for j in i + 1..seen.len() {
            let (Ok((lsn_i, hex_i)), Ok((lsn_j, hex_j))) = (&seen[i].digest, &seen[j].digest)
            else {
                continue;
            };
            if lsn_i == lsn_j && hex_i != hex_j {
                found
                    .entry(format!("digest {lsn_i} {i} {j}"))
                    .or_insert_with(|| {
                        format!(
                            "{tag}: DIGEST DIVERGENCE while settling at lsn {lsn_i}: \
                             {}={hex_i} {}={hex_j}",
                            nodes[i].name, nodes[j].name
                        )
                    });
            }
        }
    }
}

/// The failures of the final reading `seen`: a node that does not answer, a key lost,
/// phantom or diverging, a digest missing or differing, not exactly one leader.
pub fn check(tag: &str, nodes: &[Node], seen: &[Seen], totals: &Totals) -> Vec<String> {
    let mut failures = Vec::new();
    for (node, s) in nodes.iter().zip(seen) {
        if s.values.iter().all(Option::is_none) {
            failures.push(format!(
                "{tag}: node {} ({}) answered no GET after settling: {}",
                node.name,
                node.resp,
                s.get_error.as_deref().unwrap_or("?")
            ));
        }
    }
    for k in 0..KEYS.len() {
        failures.extend(check_key(tag, nodes, seen, totals, k));
    }
    failures.extend(check_digests(tag, nodes, seen));
    let leaders = seen
        .iter()
        .filter(|s| s.role.as_deref() == Some("master"))
        .count();
    if leaders != 1 {
        let roles: Vec<String> = nodes
            .iter()
            .zip(seen)
            .map(|(n, s)| format!("{}={}", n.name, s.role.as_deref().unwrap_or("none")))
            .collect();
        failures.push(format!(
            "{tag}: {leaders} nodes lead after settling (roles: {})",
            roles.join(" ")
        ));
    }
    failures
}

/// Key `k` on every node: lost, phantom, unanswered, diverging.
fn check_key(tag: &str, nodes: &[Node], seen: &[Seen], totals: &Totals, k: usize) -> Vec<String> {
    let key = KEYS[k];
    let (acked, maybe) = (totals.acked[k], totals.indeterminate[k]);
    let mut failures = Vec::new();
    for (node, s) in nodes.iter().zip(seen) {
        let at = format!("node {} ({})", node.name, node.resp);
        match s.values[k] {
            // A node that answered nothing is named once, by `check`.
            None if s.values.iter().all(Option::is_none) => {}
            None => failures.push(format!(
                "{tag}: {at} did not answer GET {key}:{COLUMN}: {}",
                s.get_error.as_deref().unwrap_or("?")
            )),
            Some(v) if v < acked => failures.push(format!(
                "{tag}: LOST on {at}: {key}:{COLUMN} = {v} < {acked} acknowledged ({} missing; \
                 {maybe} indeterminate)",
                acked - v
            )),
            Some(v) if v > acked + maybe => failures.push(format!(
                "{tag}: PHANTOM on {at}: {key}:{COLUMN} = {v} > {acked} acknowledged + {maybe} \
                 indeterminate"
            )),
            Some(_) => {}
        }
    }
    let values: Vec<Option<i64>> = seen.iter().map(|s| s.values[k]).collect();
    if values.iter().any(|v| *v != values[0]) {
        let each: Vec<String> = nodes
            .iter()
            .zip(&values)
            .map(|(node, v)| format!("{}={}", node.name, crate::report::show(*v)))
            .collect();
        failures.push(format!(
            "{tag}: DIVERGENCE on {key}:{COLUMN}: {} (acknowledged {acked}, indeterminate \
             {maybe})",
            each.join(" ")
        ));
    }
    failures
}

/// `COUNTER.DIGEST` on every node: errors, and pairs that differ.
fn check_digests(tag: &str, nodes: &[Node], seen: &[Seen]) -> Vec<String> {
    let mut failures = Vec::new();
    let errors: Vec<String> = nodes
        .iter()
        .zip(seen)
        .filter_map(|(node, s)| {
            let e = s.digest.as_ref().err()?;
            Some(format!("node {} ({}): {e}", node.name, node.resp))
        })
        .collect();
    if !errors.is_empty() {
        failures.push(format!(
            "{tag}: COUNTER.DIGEST failed on {}",
            errors.join("; ")
        ));
    }
    let digests: Vec<&(i64, String)> = seen.iter().filter_map(|s| s.digest.as_ref().ok()).collect();
    if digests.iter().any(|d| *d != digests[0]) {
        let each: Vec<String> = nodes
            .iter()
            .zip(seen)
            .filter_map(|(node, s)| {
                let (lsn, hex) = s.digest.as_ref().ok()?;
                Some(format!("{}=({lsn}, {hex})", node.name))
            })
            .collect();
        failures.push(format!("{tag}: DIGEST DIVERGENCE: {}", each.join(" ")));
    }
    failures
}

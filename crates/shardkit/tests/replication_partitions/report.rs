//! The partition test's per-round report, one line per figure on stderr: how long no
//! write was acknowledged, each writer's longest wait and tallies, the nodes' exits,
//! the values and digests each node holds.

use crate::common::hosts::nodes::{Exit, Node};
use crate::readings::Seen;
use crate::verdict::Totals;
use crate::writers::{Written, COLUMN, KEYS};
use std::time::Instant;

/// When the round's fault struck and was healed, and when its writers stopped.
pub struct Times {
    /// The fault.
    pub fault: Instant,
    /// The heal.
    pub healed: Instant,
    /// The writers' deadline.
    pub until: Instant,
}

/// Prints the round's lines, each starting with `tag`; `exits_before` is how many
/// exits each node had when the round began.
pub fn print(
    tag: &str,
    times: &Times,
    written: &[Written],
    nodes: &[Node],
    exits_before: &[usize],
    seen: &[Seen],
    totals: &Totals,
) {
    let fault_at = times.fault;
    let window = |(from, to): (Instant, Instant)| {
        format!(
            "{:.1} s (from {} to {})",
            (to - from).as_secs_f64(),
            signed(from, fault_at),
            signed(to, fault_at)
        )
    };
    eprintln!(
        "{tag}: time without a writable leader (longest stretch with no acknowledgement by \
         any writer; times from the fault, healed at {}): during the fault {}, after the \
         heal {}",
        signed(times.healed, fault_at),
        window(outage(written, fault_at, times.healed)),
        window(outage(written, times.healed, times.until))
    );
    for w in written {
        eprintln!(
            "{tag}: writer {}: longest gap between acknowledgements {:.1} s; {} acknowledged, \
             {} indeterminate, {} refused READONLY, {} failed, {} unreachable, {} without a \
             master named",
            w.name,
            w.longest_gap().as_secs_f64(),
            w.acked.iter().sum::<i64>(),
            w.indeterminate.iter().sum::<i64>(),
            w.readonly,
            w.failed,
            w.unreachable,
            w.no_master
        );
    }
    let restarts: Vec<String> = nodes
        .iter()
        .zip(exits_before)
        .map(|(node, &before)| {
            let exits = node.exits();
            let these = &exits[before.min(exits.len())..];
            format!(
                "{} {} [{}]",
                node.name,
                these.len(),
                describe(these, fault_at)
            )
        })
        .collect();
    eprintln!(
        "{tag}: node restarts (since the round began; times from the fault): {}",
        restarts.join("; ")
    );
    for (k, key) in KEYS.iter().enumerate() {
        let values: Vec<String> = nodes
            .iter()
            .zip(seen)
            .map(|(node, s)| format!("{}={}", node.name, show(s.values[k])))
            .collect();
        eprintln!(
            "{tag}: {key}:{COLUMN} {} (acknowledged {}, indeterminate {})",
            values.join(" "),
            totals.acked[k],
            totals.indeterminate[k]
        );
    }
    let digests: Vec<String> = nodes
        .iter()
        .zip(seen)
        .map(|(node, s)| match &s.digest {
            Ok((lsn, hex)) => format!("{}=({lsn}, {hex})", node.name),
            Err(e) => format!("{}=error({e})", node.name),
        })
        .collect();
    eprintln!("{tag}: COUNTER.DIGEST {}", digests.join(" "));
}

/// The longest stretch without an acknowledgement from any writer that overlaps
/// `from..to`: when it began and ended (`from`, `from` if there is none). Measured
/// between acknowledgements, not from the fault to the first one after it: writes
/// already under way when the fault struck are often acknowledged just after it.
fn outage(written: &[Written], from: Instant, to: Instant) -> (Instant, Instant) {
    let mut acks: Vec<Instant> = written
        .iter()
        .flat_map(|w| w.acks.iter().copied())
        .collect();
    acks.push(written.iter().map(|w| w.to).max().unwrap_or(to));
    acks.sort();
    let mut longest = (from, from);
    let mut previous = written.iter().map(|w| w.from).min().unwrap_or(from);
    for t in acks {
        if t > from && previous < to && t - previous > longest.1 - longest.0 {
            longest = (previous, t);
        }
        previous = t;
    }
    longest
}

/// Exits in order, runs of the same code in one: `exit 76 ×3 from +1.0 s to +4.2 s`.
fn describe(exits: &[Exit], fault_at: Instant) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < exits.len() {
        let same = exits[i..]
            .iter()
            .take_while(|e| e.code == exits[i].code)
            .count();
        let (first, last) = (&exits[i], &exits[i + same - 1]);
        let code = first
            .code
            .map_or("by signal".to_string(), |c| c.to_string());
        let when = if same == 1 {
            format!("at {}", signed(first.at, fault_at))
        } else {
            format!(
                "×{same} from {} to {}",
                signed(first.at, fault_at),
                signed(last.at, fault_at)
            )
        };
        let down = if last.restarted {
            ""
        } else {
            ", not running again"
        };
        parts.push(format!("exit {code} {when}{down}"));
        i += same;
    }
    parts.join(", ")
}

/// `t` from `origin`, signed, in seconds: `+1.5 s`, `-0.3 s`.
pub fn signed(t: Instant, origin: Instant) -> String {
    match t.checked_duration_since(origin) {
        Some(after) => format!("+{:.1} s", after.as_secs_f64()),
        None => format!("-{:.1} s", (origin - t).as_secs_f64()),
    }
}

/// A value read, or that there was none.
pub fn show(v: Option<i64>) -> String {
    v.map_or("no answer".into(), |v| v.to_string())
}

/// Prints the failover's parts as the nodes other than `target` logged them in the
/// round (each node's lines from `lines_before`): how long they could not read the
/// lease (NATS electing the lease bucket's leader), how long the new leader took from
/// finding the lease free to taking writes (catching up, and the counters stream
/// electing a leader when its leader was on the cut host), and when, from the fault
/// (`fault_wall`, against the lines' own UTC stamps), the lease was found unrenewed
/// and the new leader led.
pub fn failover_parts(
    tag: &str,
    nodes: &[Node],
    target: usize,
    lines_before: &[usize],
    fault_wall: std::time::SystemTime,
) {
    let seconds_in = |field: &'static str| {
        move |line: &str| -> Option<String> {
            let at = line.find(field)? + field.len();
            let ms: u64 = line[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()?;
            Some(format!("{:.1} s", ms as f64 / 1000.0))
        }
    };
    let since_fault = |line: &str| -> Option<String> {
        let stamp = humantime::parse_rfc3339(line.split_whitespace().next()?).ok()?;
        let secs = match stamp.duration_since(fault_wall) {
            Ok(d) => d.as_secs_f64(),
            Err(e) => -e.duration().as_secs_f64(),
        };
        Some(format!("{secs:+.1} s"))
    };
    let found = |what: &str, read: &dyn Fn(&str) -> Option<String>| -> String {
        let found: Vec<String> = nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != target)
            .flat_map(|(i, node)| {
                node.log_lines()
                    .split_off(lines_before[i])
                    .into_iter()
                    .filter(|l| l.contains(what))
                    .filter_map(|l| Some(format!("{} {}", node.name, read(&l)?)))
                    .collect::<Vec<_>>()
            })
            .collect();
        if found.is_empty() {
            "none".into()
        } else {
            found.join(", ")
        }
    };
    eprintln!(
        "{tag}: failover parts on the other nodes: lease unreadable (NATS electing the lease bucket's leader): {}; takeover (catch-up, the stream's election, the marker): {}",
        found("the counters' lease can be read again", &seconds_in("unreadable_ms=")),
        found("took over the counters", &seconds_in("takeover_ms="))
    );
    eprintln!(
        "{tag}: failover steps from the fault: lease found unrenewed {}; leading {}",
        found("was not renewed for a whole lease", &since_fault),
        found("took over the counters", &since_fault)
    );
}

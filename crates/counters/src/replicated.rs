//! Applying a replicated batch on a follower: the leader's framed records, checked
//! (CRC, parse, lsn sequence) and applied in order, also written to the local log so
//! the follower's own lsns stay the leader's.

use std::sync::Arc;

use parking_lot::RwLock;

use crate::codec::{unframe, Reader};
use crate::counter::{stripe_of, Counter};
use crate::error::{Error, Result};
use crate::hash::FastMap;
use crate::key::OwnedKey;
use crate::log::Log;
use crate::record::{Op, Record};
use crate::Applied;

/// Applies `frames` (whole frames, lsns consecutive) to `counters` and `log`. Records
/// below the log's next lsn were applied before and are skipped; a gap is refused
/// before anything of the batch is applied.
pub(crate) fn apply(
    log: &Log,
    counters: &RwLock<FastMap<String, Arc<Counter>>>,
    frames: &[u8],
    txid_cutoff_ms: u64,
) -> Result<Applied> {
    // Check the whole batch first: a damaged batch changes nothing.
    let mut parsed = Vec::new();
    let mut r = Reader::new(frames);
    while !r.is_empty() {
        let start = r.pos();
        let payload = unframe(&mut r).map_err(|e| Error::BadBatch(e.to_string()))?;
        let rec = Record::decode(payload)
            .ok_or_else(|| Error::BadBatch("a record does not parse".into()))?;
        parsed.push((rec, &frames[start..r.pos()]));
    }
    let mut out = Applied {
        next_lsn: log.next_lsn(),
        ..Applied::default()
    };
    let mut expect = out.next_lsn;
    for (rec, _) in &parsed {
        if rec.lsn >= out.next_lsn {
            if rec.lsn != expect {
                return Err(Error::BadBatch(format!(
                    "expected record {expect}, got {} (records are missing)",
                    rec.lsn
                )));
            }
            expect += 1;
        }
    }
    for (rec, frame) in parsed {
        if rec.lsn < out.next_lsn {
            out.skipped += 1;
            continue;
        }
        // A cold row whose block is damaged stops the batch here: what came before is
        // applied and logged, so the follower stays consistent up to this record.
        apply_one(counters, &rec, txid_cutoff_ms)?;
        log.append_framed(frame)?;
        out.applied += 1;
        out.next_lsn = rec.lsn + 1;
    }
    Ok(out)
}

/// Sets column `col` of each row to its value, as a `Set` record (one item, maybe a txid
/// with the window's cutoff) or a `SetRun` record (many, none) says; a counter or column
/// this follower does not have yet is skipped, as the leader had it by then.
fn apply_values<'k>(
    counters: &RwLock<FastMap<String, Arc<Counter>>>,
    counter: &str,
    col: u16,
    items: impl IntoIterator<Item = (&'k OwnedKey, u64)>,
    txid: Option<(&str, u64)>,
    ts_ms: u64,
) -> Result<()> {
    let Some(c) = counters.read().get(counter).cloned() else {
        return Ok(());
    };
    let specs = c.schema.read();
    if col as usize >= specs.len() {
        return Ok(());
    }
    for (key, value) in items {
        let mut st = c.stripes[stripe_of(key.as_key())].write();
        st.thaw_for(key.as_key(), &specs)?;
        st.set(key.as_key(), col as usize, value, &specs);
        if let Some((t, cutoff_ms)) = txid {
            st.txids.expire(cutoff_ms);
            if ts_ms >= cutoff_ms {
                st.txids.insert(key.clone(), t, ts_ms);
            }
        }
    }
    Ok(())
}

/// Applies one record the way the leader did (values are absolute, so this is the
/// same state the leader had after it).
fn apply_one(
    counters: &RwLock<FastMap<String, Arc<Counter>>>,
    rec: &Record,
    txid_cutoff_ms: u64,
) -> Result<()> {
    match &rec.op {
        Op::CreateCounter { name } => {
            counters
                .write()
                .entry(name.clone())
                .or_insert_with(|| Arc::new(Counter::new(name)));
        }
        Op::AddColumn { counter, spec } => {
            let Some(c) = counters.read().get(counter).cloned() else {
                return Ok(());
            };
            let mut schema = c.schema.write();
            if !schema.iter().any(|s| s.name == spec.name) && spec.check().is_ok() {
                schema.push(spec.clone());
            }
        }
        Op::Set {
            counter,
            key,
            col,
            value,
            txid,
        } => {
            let txid = txid.as_deref().map(|t| (t, txid_cutoff_ms));
            apply_values(counters, counter, *col, [(key, *value)], txid, rec.ts_ms)?;
        }
        Op::SetRun {
            counter,
            col,
            items,
        } => {
            let items = items.iter().map(|(key, value)| (key, *value));
            apply_values(counters, counter, *col, items, None, rec.ts_ms)?;
        }
        Op::SetRows { counter, rows } => {
            for (key, items) in rows {
                for &(col, value) in items {
                    apply_values(counters, counter, col, [(key, value)], None, rec.ts_ms)?;
                }
            }
        }
        Op::Clear { counter } => {
            // FLUSHDB on the leader: every row of the counter goes (columns stay).
            let Some(c) = counters.read().get(counter).cloned() else {
                return Ok(());
            };
            for stripe in c.stripes.iter() {
                stripe.write().clear();
            }
        }
        Op::Delete { counter, key } => {
            let Some(c) = counters.read().get(counter).cloned() else {
                return Ok(());
            };
            let specs = c.schema.read();
            let mut st = c.stripes[stripe_of(key.as_key())].write();
            st.thaw_for(key.as_key(), &specs)?;
            st.delete(key.as_key(), &specs);
        }
    }
    Ok(())
}

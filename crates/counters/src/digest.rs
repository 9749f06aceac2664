//! A digest of the counters' state, so "do the replicas agree?" is one comparison.
//!
//! Every row contributes a 128-bit hash of its key and values, added (wrapping) into
//! its counter's sum: the sum does not depend on the order rows sit in memory, so two
//! engines holding the same rows give the same digest whatever their history. Each
//! counter's sum is then hashed with its name and column specs, counters in name order.
//! The digest is read at one lsn: it is taken twice and kept only when the lsn and the
//! value did not move in between (a write landing mid-pass would mix two states).

use std::sync::Arc;

use parking_lot::RwLock;
use xxhash_rust::xxh3::Xxh3;

use crate::counter::Counter;
use crate::error::{Error, Result};
use crate::hash::FastMap;
use crate::key::Key;
use crate::log::Log;
use crate::record::write_spec;

/// The state of some counters at one lsn, reduced to one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    /// The lsn the next record gets: every record below it is in the state digested.
    pub lsn: u64,
    /// The digest; equal on two engines exactly when they hold the same rows (up to a
    /// 128-bit hash collision).
    pub value: u128,
    /// Rows digested.
    pub rows: u64,
}

/// How many passes are tried before giving up on writes that never pause.
const TRIES: usize = 5;

/// The digest of counter `only` (every counter when `None`) at one lsn; an error when
/// writes kept landing during [`TRIES`] pairs of passes, or when rows live in the cold
/// tier (on disk, which this pass does not read).
pub(crate) fn digest(
    log: &Log,
    counters: &RwLock<FastMap<String, Arc<Counter>>>,
    only: Option<&str>,
) -> Result<Digest> {
    let mut previous: Option<Digest> = None;
    for _ in 0..TRIES * 2 {
        let lsn = log.next_lsn();
        let (value, rows) = pass(counters, only)?;
        let now = Digest { lsn, value, rows };
        if log.next_lsn() == lsn && previous == Some(now) {
            return Ok(now);
        }
        previous = Some(now);
    }
    Err(Error::Busy(
        "the counters changed during every pass of the digest; try again when writes pause".into(),
    ))
}

/// One pass over the counters: (digest, rows).
fn pass(
    counters: &RwLock<FastMap<String, Arc<Counter>>>,
    only: Option<&str>,
) -> Result<(u128, u64)> {
    let mut chosen: Vec<Arc<Counter>> = {
        let all = counters.read();
        match only {
            Some(name) => vec![all
                .get(name)
                .cloned()
                .ok_or_else(|| Error::NoSuchCounter(name.to_string()))?],
            None => all.values().cloned().collect(),
        }
    };
    chosen.sort_by(|a, b| a.name.cmp(&b.name));
    let mut total = Xxh3::new();
    let mut rows = 0u64;
    for counter in chosen {
        let (sum, n) = counter_sum(&counter)?;
        rows += n;
        let mut specs = Vec::new();
        for spec in counter.schema.read().iter() {
            write_spec(&mut specs, spec);
        }
        total.update(&(counter.name.len() as u64).to_le_bytes());
        total.update(counter.name.as_bytes());
        total.update(&(specs.len() as u64).to_le_bytes());
        total.update(&specs);
        total.update(&sum.to_le_bytes());
        total.update(&n.to_le_bytes());
    }
    Ok((total.digest128(), rows))
}

/// The order-free sum of one counter's row hashes, and its row count.
fn counter_sum(counter: &Counter) -> Result<(u128, u64)> {
    let specs = counter.schema.read();
    let mut sum = 0u128;
    let mut rows = 0u64;
    let mut buf = Vec::new();
    for stripe in counter.stripes.iter() {
        let st = stripe.read();
        let cold = st.cold_rows();
        if cold > 0 {
            return Err(Error::Busy(format!(
                "counter `{}` has {cold} rows in the cold tier; the digest reads rows in memory only",
                counter.name
            )));
        }
        st.for_each_row(&specs, |key, values| {
            buf.clear();
            match key {
                Key::Id(id) => {
                    buf.push(0);
                    buf.extend_from_slice(&id.to_le_bytes());
                }
                Key::Name(name) => {
                    buf.push(1);
                    buf.extend_from_slice(&(name.len() as u64).to_le_bytes());
                    buf.extend_from_slice(name.as_bytes());
                }
            }
            for v in values {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            sum = sum.wrapping_add(xxhash_rust::xxh3::xxh3_128(&buf));
            rows += 1;
        });
    }
    Ok((sum, rows))
}

//! Log records: what one mutation looks like on disk.
//!
//! Increments are logged as the value they produced (`Set`), so replay never has to
//! re-run a bounds check and applying a record twice is harmless. A run of increments
//! of one column ([`crate::Engine::incr_run`]) is logged as one `SetRun` record: the
//! same values, one frame, lsn and CRC for up to [`RUN_RECORD_ITEMS`] of them instead
//! of one each (a `Set` record of an integer key is ~40 bytes, a run's item ~11).

use crate::codec::{Put, Reader};
use crate::column::ColumnSpec;
use crate::key::{Key, OwnedKey};

/// A mutation, as written to the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// `create_counter`.
    CreateCounter { name: String },
    /// `add_column`.
    AddColumn { counter: String, spec: ColumnSpec },
    /// A column of a row took `value` (from incr or set), optionally under a txid.
    Set {
        counter: String,
        key: OwnedKey,
        col: u16,
        value: u64,
        txid: Option<String>,
    },
    /// Column `col` of each row took its value, in order: what `Set` records one by
    /// one would say (no txids).
    SetRun {
        counter: String,
        col: u16,
        items: Vec<(OwnedKey, u64)>,
    },
    /// A row was deleted.
    Delete { counter: String, key: OwnedKey },
    /// Every row of a counter was deleted (its columns stay).
    Clear { counter: String },
}

/// One log record: a sequence number, the wall-clock time and the mutation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// Log sequence number: consecutive within the log, starting at 1.
    pub lsn: u64,
    /// Milliseconds since the Unix epoch when it was applied.
    pub ts_ms: u64,
    /// The mutation.
    pub op: Op,
}

fn put_key(out: &mut Vec<u8>, key: Key<'_>) {
    match key {
        Key::Id(id) => {
            out.put_u8(0);
            out.put_u64(id);
        }
        Key::Name(n) => {
            out.put_u8(1);
            out.put_str(n);
        }
    }
}

/// Reads a key written by [`put_key`].
pub(crate) fn get_key(r: &mut Reader<'_>) -> Option<OwnedKey> {
    match r.u8()? {
        0 => Some(OwnedKey::Id(r.u64()?)),
        1 => Some(OwnedKey::Name(r.str()?.into())),
        _ => None,
    }
}

/// Writes a key (shared with snapshots); borrowed, so a writer need not copy a name.
pub(crate) fn write_key(out: &mut Vec<u8>, key: Key<'_>) {
    put_key(out, key)
}

/// Writes a column spec (shared with snapshots).
pub(crate) fn write_spec(out: &mut Vec<u8>, s: &ColumnSpec) {
    out.put_str(&s.name);
    out.put_u8(s.bits);
    out.put_u8(s.max_bits);
    out.put_var(s.default);
}

/// Reads a column spec written by [`write_spec`].
pub(crate) fn read_spec(r: &mut Reader<'_>) -> Option<ColumnSpec> {
    Some(ColumnSpec {
        name: r.str()?.to_string(),
        bits: r.u8()?,
        max_bits: r.u8()?,
        default: r.var()?,
    })
}

/// Writes the body of a `Set` op from borrowed parts (the hot path: no allocation).
pub(crate) fn encode_set_body(
    out: &mut Vec<u8>,
    counter: &str,
    key: Key<'_>,
    col: u16,
    value: u64,
    txid: Option<&str>,
) {
    out.put_u8(if txid.is_some() { 4 } else { 3 });
    out.put_str(counter);
    put_key(out, key);
    out.put_var(col as u64);
    out.put_var(value);
    if let Some(t) = txid {
        out.put_str(t);
    }
}

/// Most items one `SetRun` record holds: a run of more is logged as several, so a record
/// stays well below a JetStream message's limit (~11 bytes an integer-keyed item; string
/// keys, up to 512 bytes each, also end a record at [`RUN_RECORD_BYTES`]).
pub(crate) const RUN_RECORD_ITEMS: usize = 4096;

/// Bytes past which a `SetRun` record is ended and another begun (see
/// [`RUN_RECORD_ITEMS`]).
const RUN_RECORD_BYTES: usize = 256 << 10;

/// A `SetRun` record's body being gathered: its head, then one item per applied
/// increment. Exists so a run of increments pays one frame, lsn and CRC, not one per
/// increment.
pub(crate) struct RunRecord<'k> {
    body: Vec<u8>,
    head: usize,
    items: usize,
    counter: &'k str,
    col: u16,
    /// The last item pushed: a record of one item is written as the `Set` record it
    /// stands for, 4 bytes shorter (no count) and readable by any build.
    last: Option<(Key<'k>, u64)>,
}

impl<'k> RunRecord<'k> {
    /// An empty record for column `col` of `counter`, with room for about `items`.
    pub(crate) fn new(counter: &'k str, col: u16, items: usize) -> RunRecord<'k> {
        let mut body = Vec::with_capacity(16 + counter.len() + items.min(RUN_RECORD_ITEMS) * 11);
        body.put_u8(7);
        body.put_str(counter);
        body.put_var(col as u64);
        // The item count, filled in by `body` (a record cut short never parses).
        body.put_u32(0);
        let head = body.len();
        RunRecord {
            body,
            head,
            items: 0,
            counter,
            col,
            last: None,
        }
    }

    /// Adds one item: `key`'s column took `value`.
    #[inline]
    pub(crate) fn push(&mut self, key: Key<'k>, value: u64) {
        put_key(&mut self.body, key);
        self.body.put_var(value);
        self.items += 1;
        self.last = Some((key, value));
    }

    /// Whether it holds no item (then it is not logged).
    pub(crate) fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// Whether it should be logged now and a new one begun.
    #[inline]
    pub(crate) fn full(&self) -> bool {
        self.items >= RUN_RECORD_ITEMS || self.body.len() >= RUN_RECORD_BYTES
    }

    /// Writes the record's body (a `Set` record's if it holds one item) to `out`: what
    /// the log appends.
    pub(crate) fn write_body(&mut self, out: &mut Vec<u8>) {
        if let (1, Some((key, value))) = (self.items, self.last) {
            encode_set_body(out, self.counter, key, self.col, value, None);
            return;
        }
        let at = self.head - 4;
        self.body[at..self.head].copy_from_slice(&(self.items as u32).to_le_bytes());
        out.extend_from_slice(&self.body);
    }

    /// Empties it for the next record of the same counter and column.
    pub(crate) fn clear(&mut self) {
        self.body.truncate(self.head);
        self.items = 0;
        self.last = None;
    }
}

/// Writes the common header of every record payload.
pub(crate) fn encode_head(out: &mut Vec<u8>, lsn: u64, ts_ms: u64) {
    out.put_u64(lsn);
    out.put_u64(ts_ms);
}

impl Record {
    /// Serialises the payload (framing is added by the log); the engine writes the same
    /// bytes through [`encode_set_body`] and friends without building a `Record`.
    #[cfg(test)]
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        encode_head(out, self.lsn, self.ts_ms);
        match &self.op {
            Op::CreateCounter { name } => {
                out.put_u8(1);
                out.put_str(name);
            }
            Op::AddColumn { counter, spec } => {
                out.put_u8(2);
                out.put_str(counter);
                write_spec(out, spec);
            }
            Op::Set {
                counter,
                key,
                col,
                value,
                txid,
            } => {
                encode_set_body(out, counter, key.as_key(), *col, *value, txid.as_deref());
            }
            Op::SetRun {
                counter,
                col,
                items,
            } => {
                let mut run = RunRecord::new(counter, *col, items.len());
                for (key, value) in items {
                    run.push(key.as_key(), *value);
                }
                run.write_body(out);
            }
            Op::Delete { counter, key } => {
                out.put_u8(5);
                out.put_str(counter);
                put_key(out, key.as_key());
            }
            Op::Clear { counter } => {
                out.put_u8(6);
                out.put_str(counter);
            }
        }
    }

    /// Parses a payload; `None` if it is malformed.
    pub(crate) fn decode(payload: &[u8]) -> Option<Record> {
        let mut r = Reader::new(payload);
        let lsn = r.u64()?;
        let ts_ms = r.u64()?;
        let op = match r.u8()? {
            1 => Op::CreateCounter {
                name: r.str()?.to_string(),
            },
            2 => Op::AddColumn {
                counter: r.str()?.to_string(),
                spec: read_spec(&mut r)?,
            },
            t @ (3 | 4) => {
                let counter = r.str()?.to_string();
                let key = get_key(&mut r)?;
                let col = u16::try_from(r.var()?).ok()?;
                let value = r.var()?;
                let txid = if t == 4 {
                    Some(r.str()?.to_string())
                } else {
                    None
                };
                Op::Set {
                    counter,
                    key,
                    col,
                    value,
                    txid,
                }
            }
            5 => Op::Delete {
                counter: r.str()?.to_string(),
                key: get_key(&mut r)?,
            },
            6 => Op::Clear {
                counter: r.str()?.to_string(),
            },
            7 => {
                let counter = r.str()?.to_string();
                let col = u16::try_from(r.var()?).ok()?;
                let n = r.u32()? as usize;
                if n == 0 {
                    return None;
                }
                // At least 2 bytes an item: a count past the bytes left is garbage.
                let mut items = Vec::with_capacity(n.min(r.remaining() / 2));
                for _ in 0..n {
                    items.push((get_key(&mut r)?, r.var()?));
                }
                Op::SetRun {
                    counter,
                    col,
                    items,
                }
            }
            _ => return None,
        };
        r.is_empty().then_some(Record { lsn, ts_ms, op })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of one item is logged as the `Set` record it stands for (4 bytes shorter,
    /// and readable by builds that do not know `SetRun`); more items make a `SetRun`.
    #[test]
    fn a_run_of_one_is_a_set_record() {
        let mut run = RunRecord::new("w", 1, 1);
        run.push(Key::Id(9), 70000);
        let (mut one, mut set) = (Vec::new(), Vec::new());
        run.write_body(&mut one);
        encode_set_body(&mut set, "w", Key::Id(9), 1, 70000, None);
        assert_eq!(one, set);
        run.push(Key::Name("home"), 5);
        let mut two = Vec::new();
        run.write_body(&mut two);
        assert_eq!(two[0], 7);
        let mut payload = Vec::new();
        encode_head(&mut payload, 1, 2);
        payload.extend_from_slice(&two);
        let rec = Record::decode(&payload).unwrap();
        assert!(matches!(rec.op, Op::SetRun { ref items, .. } if items.len() == 2));
    }

    #[test]
    fn records_round_trip_and_garbage_is_refused() {
        let recs = vec![
            Record {
                lsn: 1,
                ts_ms: 5,
                op: Op::CreateCounter {
                    name: "weibo".into(),
                },
            },
            Record {
                lsn: 2,
                ts_ms: 6,
                op: Op::AddColumn {
                    counter: "weibo".into(),
                    spec: ColumnSpec {
                        name: "likes".into(),
                        bits: 16,
                        max_bits: 32,
                        default: 3,
                    },
                },
            },
            Record {
                lsn: 3,
                ts_ms: 7,
                op: Op::Set {
                    counter: "w".into(),
                    key: OwnedKey::Id(9),
                    col: 1,
                    value: 70000,
                    txid: Some("t".into()),
                },
            },
            Record {
                lsn: 4,
                ts_ms: 8,
                op: Op::Delete {
                    counter: "w".into(),
                    key: OwnedKey::Name("home".into()),
                },
            },
            Record {
                lsn: 5,
                ts_ms: 9,
                op: Op::Clear {
                    counter: "w".into(),
                },
            },
            Record {
                lsn: 6,
                ts_ms: 10,
                op: Op::SetRun {
                    counter: "w".into(),
                    col: 2,
                    items: vec![
                        (OwnedKey::Id(1 << 40), 3),
                        (OwnedKey::Name("pageviews:/home".into()), 300),
                        (OwnedKey::Id(7), u64::MAX >> 1),
                    ],
                },
            },
        ];
        for r in recs {
            let mut b = Vec::new();
            r.encode(&mut b);
            assert_eq!(Record::decode(&b), Some(r.clone()));
            for cut in 0..b.len() {
                assert_eq!(Record::decode(&b[..cut]), None);
            }
        }
    }
}

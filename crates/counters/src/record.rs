//! Log records: what one mutation looks like on disk.
//!
//! Increments are logged as the value they produced (`Set`), so replay never has to
//! re-run a bounds check and applying a record twice is harmless.

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
            _ => return None,
        };
        r.is_empty().then_some(Record { lsn, ts_ms, op })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

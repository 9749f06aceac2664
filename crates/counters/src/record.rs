//! Log records: what one mutation looks like on disk.
//!
//! Increments are logged as the value they produced (`Set`), so replay never has to
//! re-run a bounds check and applying a record twice is harmless. A run of increments
//! of one column ([`crate::Engine::incr_run`]) is logged as one `SetRun` record: the
//! same values, one frame, lsn and CRC for up to [`RUN_RECORD_ITEMS`] of them instead
//! of one each (a `Set` record of an integer key is ~40 bytes, a run's item ~11).
//! Several columns of several rows ([`crate::Engine::incr_rows`] and `set_rows`) are
//! one `SetRows` record: each row's key once, then its `(column, value)` items (a link's
//! first click of the day wrote seven `Set` records of ~60 bytes for its day row).

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
    /// Each row's columns took their values, rows in order and a row's items in
    /// order: what `Set` records item by item would say (no txids).
    SetRows {
        counter: String,
        rows: Vec<(OwnedKey, Vec<(u16, u64)>)>,
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

/// Whether a `SetRun` or `SetRows` record of `items` items and `bytes` bytes is to be
/// logged now and another begun.
#[inline]
fn past_record_limits(items: usize, bytes: usize) -> bool {
    items >= RUN_RECORD_ITEMS || bytes >= RUN_RECORD_BYTES
}

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
        past_record_limits(self.items, self.body.len())
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

/// A `SetRows` record's body being gathered: its head, then each row's key, item count
/// (u16 LE, filled in when the row ends) and `(column, value)` items. Exists so the
/// columns written to one row cost its key once and the rows of a call one frame, lsn
/// and CRC, not one each per column.
pub(crate) struct RowsRecord<'k> {
    body: Vec<u8>,
    head: usize,
    rows: usize,
    items: usize,
    counter: &'k str,
    /// The row being added to: its key, where the key starts and where its item count
    /// sits in `body`.
    open: Option<(Key<'k>, usize, usize)>,
    /// Items in the open row.
    row_items: usize,
    /// The row that was open when the record was written: it goes on in the next one.
    reopen: Option<Key<'k>>,
    /// The last item pushed: a record of one item is written as the `Set` record it
    /// stands for, readable by any build.
    last: Option<(Key<'k>, u16, u64)>,
}

impl<'k> RowsRecord<'k> {
    /// An empty record for rows of `counter`.
    pub(crate) fn new(counter: &'k str) -> RowsRecord<'k> {
        let mut body = Vec::with_capacity(256);
        body.put_u8(8);
        body.put_str(counter);
        // The row count, filled in by `write_body` (a record cut short never parses).
        body.put_u32(0);
        let head = body.len();
        RowsRecord {
            body,
            head,
            rows: 0,
            items: 0,
            counter,
            open: None,
            row_items: 0,
            reopen: None,
            last: None,
        }
    }

    /// Starts the items of row `key` (ending the open row, if any).
    pub(crate) fn begin_row(&mut self, key: Key<'k>) {
        self.end_row();
        let start = self.body.len();
        put_key(&mut self.body, key);
        let at = self.body.len();
        self.body.extend_from_slice(&[0, 0]);
        self.open = Some((key, start, at));
        self.row_items = 0;
    }

    /// Adds one item to the open row: its column `col` took `value`. Call
    /// [`RowsRecord::begin_row`] first (an item with no row begun is not recorded).
    #[inline]
    pub(crate) fn push(&mut self, col: u16, value: u64) {
        let Some((key, _, _)) = self.open else {
            debug_assert!(false, "an item pushed with no row begun");
            return;
        };
        if self.row_items == usize::from(u16::MAX) {
            // A row's count is a u16: more items go on as the same row again.
            self.begin_row(key);
        }
        self.body.put_var(u64::from(col));
        self.body.put_var(value);
        self.row_items += 1;
        self.items += 1;
        self.last = Some((key, col, value));
    }

    /// Ends the open row: its count filled in, or its key taken back if it got no item.
    pub(crate) fn end_row(&mut self) {
        let Some((_, start, at)) = self.open.take() else {
            return;
        };
        if self.row_items == 0 {
            self.body.truncate(start);
        } else {
            let n = u16::try_from(self.row_items).unwrap_or(u16::MAX);
            self.body[at..at + 2].copy_from_slice(&n.to_le_bytes());
            self.rows += 1;
        }
        self.row_items = 0;
    }

    /// Whether it holds no item (then it is not logged).
    pub(crate) fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// Whether it should be logged now and a new one begun.
    #[inline]
    pub(crate) fn full(&self) -> bool {
        past_record_limits(self.items, self.body.len())
    }

    /// Writes the record's body (a `Set` record's if it holds one item) to `out`, the
    /// open row ended: what the log appends. That row goes on in the next record, after
    /// [`RowsRecord::clear`].
    pub(crate) fn write_body(&mut self, out: &mut Vec<u8>) {
        self.reopen = self.open.map(|(key, _, _)| key);
        self.end_row();
        if let (1, Some((key, col, value))) = (self.items, self.last) {
            encode_set_body(out, self.counter, key, col, value, None);
            return;
        }
        let at = self.head - 4;
        let rows = u32::try_from(self.rows).unwrap_or(u32::MAX);
        self.body[at..self.head].copy_from_slice(&rows.to_le_bytes());
        out.extend_from_slice(&self.body);
    }

    /// Empties it for the next record of the same counter; a row that was open when it
    /// was written is begun again.
    pub(crate) fn clear(&mut self) {
        self.body.truncate(self.head);
        self.rows = 0;
        self.items = 0;
        self.last = None;
        self.open = None;
        self.row_items = 0;
        if let Some(key) = self.reopen.take() {
            self.begin_row(key);
        }
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
            Op::SetRows { counter, rows } => {
                let mut record = RowsRecord::new(counter);
                for (key, items) in rows {
                    record.begin_row(key.as_key());
                    for &(col, value) in items {
                        record.push(col, value);
                    }
                }
                record.write_body(out);
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
            8 => {
                let counter = r.str()?.to_string();
                let n = r.u32()? as usize;
                if n == 0 {
                    return None;
                }
                // At least 5 bytes a row (key, count, one item): past that, garbage.
                let mut rows = Vec::with_capacity(n.min(r.remaining() / 5));
                for _ in 0..n {
                    let key = get_key(&mut r)?;
                    let count = usize::from(r.u16()?);
                    if count == 0 {
                        return None;
                    }
                    let mut items = Vec::with_capacity(count.min(r.remaining() / 2));
                    for _ in 0..count {
                        items.push((u16::try_from(r.var()?).ok()?, r.var()?));
                    }
                    rows.push((key, items));
                }
                Op::SetRows { counter, rows }
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

    /// Rows whose every item was refused leave nothing; one item in all is logged as
    /// the `Set` record it stands for; more make one `SetRows` record, rows and items in
    /// the order pushed.
    #[test]
    fn a_rows_record_keeps_rows_in_order_and_one_item_is_a_set_record() {
        let decode = |body: &[u8]| {
            let mut payload = Vec::new();
            encode_head(&mut payload, 1, 2);
            payload.extend_from_slice(body);
            Record::decode(&payload).unwrap().op
        };
        let mut record = RowsRecord::new("w");
        record.begin_row(Key::Name("refused"));
        record.begin_row(Key::Id(9));
        record.push(1, 70000);
        record.begin_row(Key::Name("also refused"));
        assert!(!record.is_empty());
        let (mut one, mut set) = (Vec::new(), Vec::new());
        record.write_body(&mut one);
        encode_set_body(&mut set, "w", Key::Id(9), 1, 70000, None);
        assert_eq!(one, set);
        record.clear();
        assert!(record.is_empty());
        record.begin_row(Key::Name("home"));
        record.push(0, 5);
        record.push(3, 6);
        record.begin_row(Key::Id(9));
        record.push(1, 7);
        let mut body = Vec::new();
        record.write_body(&mut body);
        assert_eq!(
            decode(&body),
            Op::SetRows {
                counter: "w".into(),
                rows: vec![
                    (OwnedKey::Name("home".into()), vec![(0, 5), (3, 6)]),
                    (OwnedKey::Id(9), vec![(1, 7)]),
                ],
            }
        );
    }

    /// A row cut by a full record goes on in the next one: the two records hold every
    /// item once, in order; a row of more than 65,535 items is the same row again.
    #[test]
    fn a_full_rows_record_ends_and_its_open_row_goes_on_in_the_next() {
        let mut record = RowsRecord::new("w");
        let mut bodies = Vec::new();
        record.begin_row(Key::Name("wide"));
        let total = RUN_RECORD_ITEMS + 10;
        for i in 0..total {
            record.push((i % 7) as u16, i as u64);
            if record.full() {
                let mut body = Vec::new();
                record.write_body(&mut body);
                bodies.push(body);
                record.clear();
            }
        }
        let mut body = Vec::new();
        record.write_body(&mut body);
        bodies.push(body);
        let mut seen = Vec::new();
        for body in &bodies {
            let mut payload = Vec::new();
            encode_head(&mut payload, 1, 2);
            payload.extend_from_slice(body);
            let Op::SetRows { rows, .. } = Record::decode(&payload).unwrap().op else {
                panic!("not a rows record");
            };
            for (key, items) in rows {
                assert_eq!(key, OwnedKey::Name("wide".into()));
                seen.extend(items.into_iter().map(|(_, v)| v as usize));
            }
        }
        assert_eq!(bodies.len(), 2);
        assert_eq!(seen, (0..total).collect::<Vec<_>>());

        let mut long = RowsRecord::new("w");
        long.begin_row(Key::Id(3));
        for i in 0..70_000u64 {
            long.push(0, i);
        }
        let mut body = Vec::new();
        long.write_body(&mut body);
        let mut payload = Vec::new();
        encode_head(&mut payload, 1, 2);
        payload.extend_from_slice(&body);
        let Op::SetRows { rows, .. } = Record::decode(&payload).unwrap().op else {
            panic!("not a rows record");
        };
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].1.len(), usize::from(u16::MAX));
        assert_eq!(rows[1].1.last(), Some(&(0, 69_999)));
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
            Record {
                lsn: 7,
                ts_ms: 11,
                op: Op::SetRows {
                    counter: "link_day_stats".into(),
                    rows: vec![
                        (
                            OwnedKey::Name("7300000000000000000:20418".into()),
                            vec![(0, 1), (2, 1), (3, 1), (86, 70_000)],
                        ),
                        (OwnedKey::Id(1 << 40), vec![(1, u64::MAX >> 1)]),
                        (OwnedKey::Name("7:o".into()), vec![(0, 2), (0, 3)]),
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

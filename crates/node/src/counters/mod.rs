//! The counter engine as the network sees it: Redis-style keys
//! (`<counter>:<id>[:<column>]`) and DESIGN.md's `auto_create` rule, shared by the
//! RESP commands and the HTTP API so both behave the same.
//!
//! With `auto_create` on (the default), writing to a counter that does not exist
//! creates it with one column `value`, and writing to a column named for the first
//! time adds it (16 bits inline, max 64 bits); reads of either answer "absent". With it
//! off, both are errors that say how to create them.
//!
//! [`settings`]: the `[counters]` section.
//! [`commit_task`]: the one task per store that makes a batch of writes durable and
//! wakes the connections waiting for it (group commit).

pub mod commit_task;
pub mod settings;

use shardkit_counters::{ColumnOptions, Engine, Error, Key};

/// The column of a key that names none.
pub const DEFAULT_COLUMN: &str = "value";

/// A Redis key taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterKey<'a> {
    /// The counter (table).
    pub counter: &'a str,
    /// The row: a canonical decimal id takes the compact path, anything else the string map.
    pub row: &'a str,
    /// The column, if the key named one.
    pub column: Option<&'a str>,
}

impl<'a> CounterKey<'a> {
    /// `weibo:123` is row 123 of counter `weibo`; `weibo:123:comments` names the column
    /// too. The counter is up to the first `:`, the column after the last `:` when
    /// there are two or more; a key with no `:` is refused.
    ///
    /// The id may be written as a Redis Cluster hash tag, `weibo:{123}` and
    /// `weibo:{123}:comments`, so that every column of a row hashes to one slot: it is
    /// the same row as `weibo:123` (the braces are not part of it), and the column is
    /// everything after `}:`.
    pub fn parse(key: &'a [u8]) -> Result<Self, &'static str> {
        const SHAPE: &str = "ERR keys are <counter>:<id>[:<column>], like weibo:123:comments";
        let key = std::str::from_utf8(key).map_err(|_| "ERR keys must be UTF-8 text")?;
        let (counter, rest) = key.split_once(':').ok_or(SHAPE)?;
        if counter.is_empty() || rest.is_empty() {
            return Err(SHAPE);
        }
        if let Some((row, after)) = tagged_row(rest) {
            match after {
                "" => {
                    return Ok(Self {
                        counter,
                        row,
                        column: None,
                    })
                }
                _ => {
                    if let Some(column) = after.strip_prefix(':').filter(|c| !c.is_empty()) {
                        return Ok(Self {
                            counter,
                            row,
                            column: Some(column),
                        });
                    }
                }
            }
        }
        Ok(match rest.rsplit_once(':') {
            Some((row, column)) if !row.is_empty() && !column.is_empty() => Self {
                counter,
                row,
                column: Some(column),
            },
            _ => Self {
                counter,
                row: rest,
                column: None,
            },
        })
    }

    /// A hash key (`HINCRBY weibo:123 comments 1`): everything after the first `:`
    /// is the row, the column comes as a separate field; `weibo:{123}` is row 123 too.
    pub fn parse_row(key: &'a [u8]) -> Result<Self, &'static str> {
        const SHAPE: &str = "ERR hash keys are <counter>:<id>, like weibo:123";
        let key = std::str::from_utf8(key).map_err(|_| "ERR keys must be UTF-8 text")?;
        match key.split_once(':') {
            Some((counter, row)) if !counter.is_empty() && !row.is_empty() => Ok(Self {
                counter,
                row: match tagged_row(row) {
                    Some((tagged, "")) => tagged,
                    _ => row,
                },
                column: None,
            }),
            _ => Err(SHAPE),
        }
    }

    /// The row as an engine key.
    pub fn key(&self) -> Key<'a> {
        Key::parse(self.row)
    }

    /// The named column, else `value`.
    pub fn column_or_default(&self) -> &'a str {
        self.column.unwrap_or(DEFAULT_COLUMN)
    }
}

/// What [`Counters::before_auto_create`] runs (given the engine about to be written).
pub type BeforeAutoCreate = Box<dyn Fn(&Engine) + Send + Sync>;

/// The engine plus the `auto_create` rule.
pub struct Counters {
    /// The engine itself.
    pub engine: Engine,
    /// Whether writes create missing counters and columns.
    pub auto_create: bool,
    /// Whether a write waits for an fsync before it returns (fsync `always`).
    pub writes_wait_for_disk: bool,
    /// The shared fsync for RESP batches under fsync `always`.
    pub group_commit: crate::counters::commit_task::GroupCommit,
    /// Runs before `auto_create` makes a missing counter or column with the default
    /// options: a cluster group's store sets it to apply the cluster's schema read
    /// afresh, so a counter or column made by `COUNTER.CREATE|ADDCOL` on another node a
    /// moment ago gets the options it was declared with.
    pub before_auto_create: std::sync::OnceLock<BeforeAutoCreate>,
}

impl Counters {
    /// Runs a write, creating the counter or column first if `auto_create` allows.
    pub fn write<T>(
        &self,
        counter: &str,
        column: &str,
        mut op: impl FnMut(&Engine) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            match op(&self.engine) {
                Err(Error::NoSuchCounter(_) | Error::NoSuchColumn { .. })
                    if self.auto_create
                        && attempts == 1
                        && self.before_auto_create.get().is_some() =>
                {
                    if let Some(hook) = self.before_auto_create.get() {
                        hook(&self.engine);
                    }
                }
                Err(Error::NoSuchCounter(_)) if self.auto_create && attempts <= 3 => {
                    ignore_exists(self.engine.create_counter(counter))?;
                    ignore_exists(self.engine.add_column(
                        counter,
                        DEFAULT_COLUMN,
                        ColumnOptions::default(),
                    ))?;
                }
                Err(Error::NoSuchColumn { .. }) if self.auto_create && attempts <= 3 => {
                    ignore_exists(self.engine.add_column(
                        counter,
                        column,
                        ColumnOptions::default(),
                    ))?;
                }
                other => return other,
            }
        }
    }

    /// Runs a read; a missing counter or column is "absent" (`None`) when
    /// `auto_create` is on, an error otherwise.
    pub fn read<T>(
        &self,
        op: impl FnOnce(&Engine) -> Result<T, Error>,
    ) -> Result<Option<T>, Error> {
        match op(&self.engine) {
            Ok(v) => Ok(Some(v)),
            Err(Error::NoSuchCounter(_) | Error::NoSuchColumn { .. }) if self.auto_create => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counters")
            .field("dir", &self.engine.dir())
            .field("auto_create", &self.auto_create)
            .finish()
    }
}

/// A row id as the HTTP API and the link clicks take it (no counter or column around
/// it): `{123}` is `123` there too, as in a RESP key.
pub fn row_key(text: &str) -> Key<'_> {
    match tagged_row(text) {
        Some((row, "")) => Key::parse(row),
        _ => Key::parse(text),
    }
}

/// A row written as a hash tag: `{123}...` gives `123` and what follows the `}`; `None`
/// when `rest` does not start with a non-empty `{…}` (then the braces are plain text).
fn tagged_row(rest: &str) -> Option<(&str, &str)> {
    let inner = rest.strip_prefix('{')?;
    let close = inner.find('}')?;
    (close > 0).then(|| (&inner[..close], &inner[close + 1..]))
}

/// Another request may have created it a moment ago: that is fine.
fn ignore_exists(result: Result<(), Error>) -> Result<(), Error> {
    match result {
        Err(Error::CounterExists(_) | Error::ColumnExists { .. }) => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_into_counter_row_and_column() {
        assert_eq!(
            CounterKey::parse(b"weibo:123").unwrap(),
            CounterKey {
                counter: "weibo",
                row: "123",
                column: None
            }
        );
        assert_eq!(
            CounterKey::parse(b"weibo:123:comments").unwrap(),
            CounterKey {
                counter: "weibo",
                row: "123",
                column: Some("comments")
            }
        );
        assert_eq!(
            CounterKey::parse(b"pv:home:page:views").unwrap(),
            CounterKey {
                counter: "pv",
                row: "home:page",
                column: Some("views")
            }
        );
        assert_eq!(
            CounterKey::parse(b"counter:000012").unwrap().key(),
            Key::Name("000012")
        );
        assert_eq!(CounterKey::parse(b"counter:12").unwrap().key(), Key::Id(12));
        for bad in [&b"nocolon"[..], b":1", b"c:", b"\xff:1"] {
            assert!(CounterKey::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_hash_tagged_id_is_the_same_row() {
        let plain = CounterKey::parse(b"weibo:123:likes").unwrap();
        assert_eq!(CounterKey::parse(b"weibo:{123}:likes").unwrap(), plain);
        assert_eq!(
            CounterKey::parse(b"weibo:{123}").unwrap(),
            CounterKey::parse(b"weibo:123").unwrap()
        );
        assert_eq!(
            CounterKey::parse_row(b"weibo:{123}").unwrap(),
            CounterKey::parse_row(b"weibo:123").unwrap()
        );
        assert_eq!(
            CounterKey::parse(b"weibo:{123}").unwrap().key(),
            Key::Id(123)
        );
        // A tagged row may hold colons; the column is all after `}:`.
        let k = CounterKey::parse(b"pv:{home:page}:views").unwrap();
        assert_eq!((k.row, k.column), ("home:page", Some("views")));
        // Not a tag: the braces stay in the row, as plain text.
        assert_eq!(CounterKey::parse(b"c:{}:x").unwrap().row, "{}");
        assert_eq!(CounterKey::parse(b"c:{7").unwrap().row, "{7");
        assert_eq!(CounterKey::parse(b"c:{7}x").unwrap().row, "{7}x");
        assert_eq!(CounterKey::parse_row(b"c:{7}x").unwrap().row, "{7}x");
        for bad in [&b"nocolon"[..], b":1", b"c:", b"\xff:1"] {
            assert!(CounterKey::parse(bad).is_err(), "{bad:?}");
        }
    }
}

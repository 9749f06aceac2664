//! The embedded ticket store: one redb file, one fsynced transaction per reservation.

use super::spec::{validate_name, SequenceSpec, MAX_TICKET};
use super::TicketStore;
use crate::error::TicketError;
use redb::{Database, Durability, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// name -> (increment, offset, next free position).
const SEQUENCES: TableDefinition<&str, (u64, u64, u64)> = TableDefinition::new("ticket_sequences");

/// Ticket sequences in a redb file. Every [`TicketStore::reserve`] is one write
/// transaction committed with immediate durability (fsync) before it returns, so a
/// reserved block survives any crash; the positions of a block handed out but not used
/// before a crash are skipped, never reissued.
#[derive(Debug)]
pub struct EmbeddedTicketStore {
    db: Database,
    path: PathBuf,
    durable_writes: AtomicU64,
}

impl EmbeddedTicketStore {
    /// Opens the store at `path`, creating the file and its directory if needed.
    /// Fails if another process has it open.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TicketError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| store_error(&path, e))?;
        }
        let db = Database::create(&path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => TicketError::StoreInUse(path.clone()),
            other => store_error(&path, other),
        })?;
        Ok(Self {
            db,
            path,
            durable_writes: AtomicU64::new(0),
        })
    }

    /// How many durable (fsynced) writes this store has made: one per reservation.
    pub fn durable_writes(&self) -> u64 {
        self.durable_writes.load(Ordering::Relaxed)
    }

    /// The increment, offset and next free position of a sequence, if it exists.
    pub fn describe(&self, name: &str) -> Result<Option<(SequenceSpec, u64)>, TicketError> {
        let txn = self
            .db
            .begin_read()
            .map_err(|e| store_error(&self.path, e))?;
        let table = match txn.open_table(SEQUENCES) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(store_error(&self.path, e)),
        };
        let Some((increment, offset, next)) = table
            .get(name)
            .map_err(|e| store_error(&self.path, e))?
            .map(|v| v.value())
        else {
            return Ok(None);
        };
        Ok(Some((SequenceSpec::new(increment, offset)?, next)))
    }
}

impl TicketStore for EmbeddedTicketStore {
    fn reserve(&self, name: &str, spec: SequenceSpec, count: u64) -> Result<u64, TicketError> {
        validate_name(name)?;
        if count == 0 {
            return Err(TicketError::BadCount {
                got: 0,
                max: u64::MAX,
            });
        }
        let err = |e: redb::Error| store_error(&self.path, e);
        let mut txn = self.db.begin_write().map_err(|e| err(e.into()))?;
        txn.set_durability(Durability::Immediate);
        let first = {
            let mut table = txn.open_table(SEQUENCES).map_err(|e| err(e.into()))?;
            let stored = table
                .get(name)
                .map_err(|e| err(e.into()))?
                .map(|v| v.value());
            let first = match stored {
                None => 0,
                Some((increment, offset, next)) => {
                    if (increment, offset) != (spec.increment(), spec.offset()) {
                        return Err(TicketError::SpecMismatch {
                            name: name.to_string(),
                            stored_increment: increment,
                            stored_offset: offset,
                            increment: spec.increment(),
                            offset: spec.offset(),
                        });
                    }
                    next
                }
            };
            let end = first
                .checked_add(count)
                .filter(|&end| spec.number(end - 1).is_some_and(|n| n <= MAX_TICKET));
            let Some(end) = end else {
                return Err(TicketError::Exhausted(name.to_string()));
            };
            table
                .insert(name, (spec.increment(), spec.offset(), end))
                .map_err(|e| err(e.into()))?;
            first
        };
        txn.commit().map_err(|e| err(e.into()))?;
        self.durable_writes.fetch_add(1, Ordering::Relaxed);
        Ok(first)
    }
}

fn store_error(path: &Path, e: impl std::fmt::Display) -> TicketError {
    TicketError::Store {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_disjoint_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tickets.redb");
        let spec = SequenceSpec::default();
        {
            let store = EmbeddedTicketStore::open(&path).unwrap();
            assert_eq!(store.reserve("photos", spec, 10).unwrap(), 0);
            assert_eq!(store.reserve("photos", spec, 5).unwrap(), 10);
            assert_eq!(store.reserve("accounts", spec, 1).unwrap(), 0);
            assert_eq!(store.durable_writes(), 3);
        }
        let store = EmbeddedTicketStore::open(&path).unwrap();
        assert_eq!(store.reserve("photos", spec, 1).unwrap(), 15);
        assert_eq!(store.describe("photos").unwrap(), Some((spec, 16)));
        assert_eq!(store.describe("nothing").unwrap(), None);
    }

    #[test]
    fn a_changed_spec_or_bad_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedTicketStore::open(dir.path().join("t.redb")).unwrap();
        store
            .reserve("photos", SequenceSpec::new(2, 1).unwrap(), 1)
            .unwrap();
        assert!(matches!(
            store.reserve("photos", SequenceSpec::new(2, 2).unwrap(), 1),
            Err(TicketError::SpecMismatch { .. })
        ));
        assert!(matches!(
            store.reserve("no spaces", SequenceSpec::default(), 1),
            Err(TicketError::BadName(_))
        ));
        assert!(matches!(
            store.reserve("photos", SequenceSpec::new(2, 1).unwrap(), 0),
            Err(TicketError::BadCount { .. })
        ));
    }

    #[test]
    fn exhaustion_is_an_error_not_a_wrap() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedTicketStore::open(dir.path().join("t.redb")).unwrap();
        let spec = SequenceSpec::default();
        store.reserve("big", spec, MAX_TICKET - 1).unwrap();
        assert!(matches!(
            store.reserve("big", spec, 2),
            Err(TicketError::Exhausted(_))
        ));
        assert_eq!(store.reserve("big", spec, 1).unwrap(), MAX_TICKET - 1);
        assert!(matches!(
            store.reserve("big", spec, 1),
            Err(TicketError::Exhausted(_))
        ));
    }
}

//! The counters and columns every group of a cluster has. Each group is a counter store
//! of its own, so `COUNTER.CREATE` and `COUNTER.ADDCOL` on one node would otherwise
//! reach only the groups that node leads. Instead they change this schema, kept in the
//! cluster's KV bucket (key `schema`, changed only by compare-and-set), and every node
//! applies it to each group it leads: when it reads a newer schema, when it comes to
//! lead a group (opened, taken over, moved to it), and at once on the node that took
//! the command. Applying only adds what a group lacks, so it is safe to repeat.

use serde::{Deserialize, Serialize};
use shardkit_counters::{check_name, ColumnOptions, ColumnSpec, Engine, Error};
use std::collections::BTreeMap;

/// The cluster's counters, each with its columns in the order they were added.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    /// Counter name → columns.
    pub counters: BTreeMap<String, Vec<Column>>,
}

/// One column as `COUNTER.ADDCOL` made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    /// The column's name.
    pub name: String,
    /// Inline width in bits.
    pub bits: u8,
    /// Widest value, in bits.
    pub max_bits: u8,
    /// Value of rows that never set it.
    pub default: u64,
}

impl Column {
    fn options(&self) -> ColumnOptions {
        ColumnOptions {
            bits: self.bits,
            max_bits: self.max_bits,
            default: self.default,
        }
    }
}

impl Schema {
    /// This schema with counter `name` added, or the error `COUNTER.CREATE` gives on a
    /// lone node (a bad name, a counter that exists).
    pub fn with_counter(&self, name: &str) -> Result<Schema, Error> {
        check_name(name)?;
        if self.counters.contains_key(name) {
            return Err(Error::CounterExists(name.to_string()));
        }
        let mut next = self.clone();
        next.counters.insert(name.to_string(), Vec::new());
        Ok(next)
    }

    /// This schema with `column` added to `counter`, or the error `COUNTER.ADDCOL`
    /// gives on a lone node.
    pub fn with_column(
        &self,
        counter: &str,
        column: &str,
        options: ColumnOptions,
    ) -> Result<Schema, Error> {
        let spec = ColumnSpec::new(column, options)?;
        let mut next = self.clone();
        let columns = next
            .counters
            .get_mut(counter)
            .ok_or_else(|| Error::NoSuchCounter(counter.to_string()))?;
        if columns.iter().any(|c| c.name == column) {
            return Err(Error::ColumnExists {
                counter: counter.to_string(),
                column: column.to_string(),
            });
        }
        columns.push(Column {
            name: spec.name,
            bits: spec.bits,
            max_bits: spec.max_bits,
            default: spec.default,
        });
        Ok(next)
    }

    /// Creates in `engine` every counter and column of this schema it lacks; answers
    /// how many it made. A counter or column that is there already (made by an earlier
    /// apply, or by a write with `auto_create` before the schema arrived) is left as it
    /// is.
    pub fn apply(&self, engine: &Engine) -> Result<usize, Error> {
        let mut made = 0;
        for (name, columns) in &self.counters {
            match engine.create_counter(name) {
                Ok(()) => made += 1,
                Err(Error::CounterExists(_)) => {}
                Err(e) => return Err(e),
            }
            let have = engine.columns(name)?;
            for column in columns {
                if !have.iter().any(|h| h.name == column.name) {
                    match engine.add_column(name, &column.name, column.options()) {
                        Ok(()) => made += 1,
                        Err(Error::ColumnExists { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(made)
    }
}

/// Changes the cluster's schema (the NATS side implements it: `cluster/nats`).
pub trait SchemaWriter: Send + Sync + std::fmt::Debug {
    /// Reads the stored schema, makes the next one with `change` and stores it by
    /// compare-and-set, again from the top if someone stored another meanwhile.
    /// Answers the stored schema and its revision; `Err(Refused)` is `change`'s own
    /// error.
    fn change(
        &self,
        change: &(dyn Fn(&Schema) -> Result<Schema, Error> + Sync),
    ) -> Result<(u64, Schema), ChangeError>;

    /// The stored schema and its revision, read now (a node's copy may be up to a map
    /// poll old).
    fn load(&self) -> Result<(u64, Schema), String>;
}

/// Why a schema change was not stored.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// The change itself was refused (a counter that exists, a bad column).
    #[error(transparent)]
    Refused(#[from] Error),
    /// NATS failed, or the schema kept changing under this writer.
    #[error("{0}")]
    Unavailable(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_refused_as_on_a_lone_node_and_apply_adds_only_what_is_missing() {
        let schema = Schema::default().with_counter("visits").unwrap();
        assert!(matches!(
            schema.with_counter("visits"),
            Err(Error::CounterExists(_))
        ));
        assert!(matches!(
            schema.with_counter("a:b"),
            Err(Error::BadName { .. })
        ));
        let narrow = ColumnOptions {
            bits: 8,
            max_bits: 32,
            default: 0,
        };
        let schema = schema.with_column("visits", "n", narrow).unwrap();
        assert!(matches!(
            schema.with_column("visits", "n", narrow),
            Err(Error::ColumnExists { .. })
        ));
        assert!(matches!(
            schema.with_column("nope", "n", narrow),
            Err(Error::NoSuchCounter(_))
        ));
        let bad = ColumnOptions { bits: 12, ..narrow };
        assert!(matches!(
            schema.with_column("visits", "m", bad),
            Err(Error::BadColumn { .. })
        ));

        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), Default::default()).unwrap();
        // A write with auto_create made the counter before the schema arrived.
        engine.create_counter("visits").unwrap();
        engine
            .add_column("visits", "value", ColumnOptions::default())
            .unwrap();
        assert_eq!(schema.apply(&engine).unwrap(), 1);
        assert_eq!(
            schema.apply(&engine).unwrap(),
            0,
            "a second apply makes nothing"
        );
        let columns = engine.columns("visits").unwrap();
        let n = columns.iter().find(|c| c.name == "n").unwrap();
        assert_eq!((n.bits, n.max_bits), (8, 32));
        let json = serde_json::to_string(&schema).unwrap();
        assert_eq!(serde_json::from_str::<Schema>(&json).unwrap(), schema);
    }
}

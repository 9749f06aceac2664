//! The three kinds of id shardkit issues, as one choice the CLI, HTTP and RESP read the
//! same way: the layout's 63-bit ids (`snowflake`, sharded, leased per shard), RFC 9562
//! UUIDv7 and ULID (128 bits, no shard: their random bits keep nodes apart).
//!
//! UUIDv7 and ULID each have their own generator and their own durable time guard in
//! the data directory, beside the layout's `ids.guard`: a clock stepped back never
//! yields one that sorts before an id already issued, across restarts too.

use shardkit_ids::{
    GenerateError, GeneratorOptions, GuardOptions, SystemClock, UlidGenerator, Uuid7Generator,
};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Which kind of id to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdFormat {
    /// The configured layout's 63-bit id, in decimal.
    #[default]
    Snowflake,
    /// A version 7 UUID, hyphenated lowercase.
    Uuid7,
    /// A ULID, 26 characters of Crockford base32.
    Ulid,
}

/// The words every surface accepts, for error messages.
pub const FORMAT_NAMES: &str = "snowflake, uuid7 or ulid";

/// The 128-bit kinds, which one generator per node issues without shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeOrdered {
    /// A version 7 UUID.
    Uuid7,
    /// A ULID.
    Ulid,
}

impl IdFormat {
    /// The 128-bit kind, or `None` for the layout's sharded ids.
    pub const fn time_ordered(self) -> Option<TimeOrdered> {
        match self {
            IdFormat::Snowflake => None,
            IdFormat::Uuid7 => Some(TimeOrdered::Uuid7),
            IdFormat::Ulid => Some(TimeOrdered::Ulid),
        }
    }

    /// The name as the surfaces take it.
    pub const fn name(self) -> &'static str {
        match self {
            IdFormat::Snowflake => "snowflake",
            IdFormat::Uuid7 => "uuid7",
            IdFormat::Ulid => "ulid",
        }
    }
}

impl fmt::Display for IdFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for IdFormat {
    type Err = String;

    /// Case-insensitive, as Redis reads its keywords.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        [IdFormat::Snowflake, IdFormat::Uuid7, IdFormat::Ulid]
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| format!("format must be {FORMAT_NAMES}, got {text:?}"))
    }
}

/// The UUIDv7 generator's time guard in a data directory.
pub fn uuid7_guard(data: &Path) -> PathBuf {
    data.join("uuid7.guard")
}

/// The ULID generator's time guard in a data directory.
pub fn ulid_guard(data: &Path) -> PathBuf {
    data.join("ulid.guard")
}

/// A UUIDv7 generator guarded by `<data>/uuid7.guard`; `options`' own guard is replaced.
pub fn open_uuid7(
    data: &Path,
    options: &GeneratorOptions,
) -> Result<Uuid7Generator, GenerateError> {
    Uuid7Generator::with_clock(SystemClock, &guarded(options, uuid7_guard(data)))
}

/// A ULID generator guarded by `<data>/ulid.guard`; `options`' own guard is replaced.
pub fn open_ulid(data: &Path, options: &GeneratorOptions) -> Result<UlidGenerator, GenerateError> {
    UlidGenerator::with_clock(SystemClock, &guarded(options, ulid_guard(data)))
}

fn guarded(options: &GeneratorOptions, guard: PathBuf) -> GeneratorOptions {
    GeneratorOptions {
        guard: Some(GuardOptions::new(guard)),
        ..options.clone()
    }
}

/// The server's UUIDv7 and ULID generators.
#[derive(Debug)]
pub struct TimeOrderedIds {
    /// UUIDv7s, guarded by `<data>/uuid7.guard`.
    pub uuid7: Uuid7Generator,
    /// ULIDs, guarded by `<data>/ulid.guard`.
    pub ulid: UlidGenerator,
}

impl TimeOrderedIds {
    /// Opens both generators of a data directory.
    pub fn open(data: &Path, options: &GeneratorOptions) -> Result<Self, GenerateError> {
        Ok(Self {
            uuid7: open_uuid7(data, options)?,
            ulid: open_ulid(data, options)?,
        })
    }

    /// `count` new ids of `kind` as text, increasing.
    pub fn next_texts(&self, kind: TimeOrdered, count: u64) -> Result<Vec<String>, GenerateError> {
        let count = count as usize;
        match kind {
            TimeOrdered::Uuid7 => (0..count)
                .map(|_| self.uuid7.next_id().map(|id| id.to_string()))
                .collect(),
            TimeOrdered::Ulid => (0..count)
                .map(|_| self.ulid.next_id().map(|id| id.to_string()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_read_in_any_case_and_name_the_choices_otherwise() {
        assert_eq!("UUID7".parse(), Ok(IdFormat::Uuid7));
        assert_eq!("ulid".parse(), Ok(IdFormat::Ulid));
        assert_eq!("Snowflake".parse(), Ok(IdFormat::Snowflake));
        let err = "uuid4".parse::<IdFormat>().unwrap_err();
        assert!(
            err.contains("snowflake, uuid7 or ulid") && err.contains("uuid4"),
            "{err}"
        );
    }

    #[test]
    fn each_generator_keeps_its_own_guard() {
        let dir = tempfile::tempdir().unwrap();
        let ids = TimeOrderedIds::open(dir.path(), &GeneratorOptions::default()).unwrap();
        let uuids = ids.next_texts(TimeOrdered::Uuid7, 3).unwrap();
        let ulids = ids.next_texts(TimeOrdered::Ulid, 3).unwrap();
        assert!(uuids.windows(2).all(|w| w[0] < w[1]), "{uuids:?}");
        assert!(ulids.windows(2).all(|w| w[0] < w[1]), "{ulids:?}");
        assert_eq!(IdFormat::Snowflake.time_ordered(), None);
        assert!(uuid7_guard(dir.path()).exists() && ulid_guard(dir.path()).exists());
        // A second opener of the same directory is refused, as for `ids.guard`.
        assert!(matches!(
            TimeOrderedIds::open(dir.path(), &GeneratorOptions::default()),
            Err(GenerateError::GuardInUse(_))
        ));
    }
}

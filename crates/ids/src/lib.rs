#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod base62;
mod clock;
pub mod durable_file;
mod error;
mod guard;
mod issuer;
mod layout;
mod options;
mod random;
mod sequence;
mod shard_generator;
mod sharded_generator;
pub mod tickets;
mod ticking_clock;
mod ulid;
mod ulid_generator;
mod uuid7;
mod uuid7_generator;

pub use clock::{now_ms, Clock, ManualClock, SystemClock};
pub use error::{
    Base62Error, DecodeError, GenerateError, LayoutError, TicketError, UlidError, UuidError,
};
pub use layout::{
    DecodedId, FieldOrder, IdParts, Layout, LayoutKind, DEFAULT_EPOCH_UNIX_MS, MIN_TIME_BITS,
    SONYFLAKE_EPOCH_UNIX_MS, SONYFLAKE_LEGACY_NAME,
};
pub use options::{BackwardPolicy, GeneratorOptions, GuardOptions};
pub use shard_generator::ShardGenerator;
pub use sharded_generator::ShardedGenerator;
pub use ticking_clock::TickingClock;
pub use ulid::{Ulid, ULID_LEN, ULID_MAX_RANDOM, ULID_MAX_UNIX_MS};
pub use ulid_generator::UlidGenerator;
pub use uuid7::{Uuid7, UUID7_MAX_COUNTER, UUID7_MAX_RAND_B, UUID7_MAX_UNIX_MS};
pub use uuid7_generator::Uuid7Generator;

//! Sequence names and their increment/offset: checked once, then used to turn
//! positions into numbers.

use crate::error::TicketError;

/// The most tickets one call may ask for (CLI, HTTP and RESP share this bound).
pub const MAX_TICKETS_PER_CALL: u64 = 1_000_000;

/// The largest ticket number: ticket numbers stay below 2^63 so they fit a signed
/// 64-bit column (PostgreSQL `bigint`, MySQL `BIGINT`).
pub const MAX_TICKET: u64 = i64::MAX as u64;

/// `increment` and `offset` of a sequence, as MySQL's `auto_increment_increment` and
/// `auto_increment_offset`: position `k` is the number `offset + k * increment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SequenceSpec {
    increment: u64,
    offset: u64,
}

impl SequenceSpec {
    /// Checks `increment >= 1` and `1 <= offset <= increment`: servers sharing an
    /// increment with distinct offsets then never hand out the same number.
    pub fn new(increment: u64, offset: u64) -> Result<Self, TicketError> {
        if increment == 0 || offset == 0 || offset > increment {
            return Err(TicketError::BadSpec { increment, offset });
        }
        Ok(Self { increment, offset })
    }

    /// The step between two numbers of this sequence.
    pub const fn increment(&self) -> u64 {
        self.increment
    }

    /// The first number of this sequence.
    pub const fn offset(&self) -> u64 {
        self.offset
    }

    /// The number at `position`, or `None` past `i64::MAX` (the largest number a SQL `bigint` holds).
    #[inline]
    pub fn number(&self, position: u64) -> Option<u64> {
        position
            .checked_mul(self.increment)?
            .checked_add(self.offset)
            .filter(|&n| n <= MAX_TICKET)
    }
}

impl Default for SequenceSpec {
    /// One ticket server: 1, 2, 3, ...
    fn default() -> Self {
        Self {
            increment: 1,
            offset: 1,
        }
    }
}

/// Checks a sequence name: 1 to 64 characters of `A-Z a-z 0-9 _ - . :`.
pub fn validate_name(name: &str) -> Result<(), TicketError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(TicketError::BadName(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_servers_interleave() {
        let odd = SequenceSpec::new(2, 1).unwrap();
        let even = SequenceSpec::new(2, 2).unwrap();
        assert_eq!(
            (0..3).map(|k| odd.number(k).unwrap()).collect::<Vec<_>>(),
            [1, 3, 5]
        );
        assert_eq!(
            (0..3).map(|k| even.number(k).unwrap()).collect::<Vec<_>>(),
            [2, 4, 6]
        );
        assert_eq!(odd.number(u64::MAX / 2), None);
    }

    #[test]
    fn bad_specs_and_names_are_refused() {
        assert!(SequenceSpec::new(0, 1).is_err());
        assert!(SequenceSpec::new(2, 0).is_err());
        assert!(SequenceSpec::new(2, 3).is_err());
        assert!(validate_name("photos").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("a/b").is_err());
        assert!(validate_name(&"x".repeat(65)).is_err());
    }
}

//! ULIDs (github.com/ulid/spec) as values: 48 bits of Unix milliseconds and 80 bits of
//! randomness, written as 26 characters of Crockford's base32 that sort like the
//! numbers they stand for.

use crate::error::UlidError;
use std::fmt;
use std::str::FromStr;

/// Crockford's base32 digits, in value order: no I, L, O or U, so that a ULID read
/// aloud or copied by hand cannot be misread.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Digit values by byte; `INVALID` for bytes outside the alphabet. Lowercase reads
/// like uppercase, as the spec asks.
const DIGITS: [u8; 256] = {
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < 32 {
        let c = ALPHABET[i];
        table[c as usize] = i as u8;
        table[c.to_ascii_lowercase() as usize] = i as u8;
        i += 1;
    }
    table
};
const INVALID: u8 = 0xFF;

/// Characters in a ULID's text.
pub const ULID_LEN: usize = 26;
const RANDOM_BITS: u32 = 80;
/// The largest value of a ULID's random part (80 bits).
pub const ULID_MAX_RANDOM: u128 = (1 << RANDOM_BITS) - 1;
/// The largest Unix-ms time a ULID holds (48 bits: the year 10889).
pub const ULID_MAX_UNIX_MS: u64 = (1 << 48) - 1;

/// A ULID: sorts by creation time as a number and as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ulid(u128);

impl Ulid {
    /// A ULID from its time and random part; `None` if either does not fit its bits.
    pub const fn from_parts(unix_ms: u64, random: u128) -> Option<Self> {
        if unix_ms > ULID_MAX_UNIX_MS || random > ULID_MAX_RANDOM {
            return None;
        }
        Some(Self(((unix_ms as u128) << RANDOM_BITS) | random))
    }

    /// Every 128-bit number is a ULID.
    pub const fn from_u128(value: u128) -> Self {
        Self(value)
    }

    /// The ULID as a 128-bit number.
    pub const fn as_u128(&self) -> u128 {
        self.0
    }

    /// The ULID's 16 bytes, most significant first (the spec's binary form).
    pub const fn to_bytes(&self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// A ULID from its 16-byte binary form.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(u128::from_be_bytes(bytes))
    }

    /// When it was made, in Unix milliseconds: what decoding a ULID is for.
    pub const fn unix_ms(&self) -> u64 {
        (self.0 >> RANDOM_BITS) as u64
    }

    /// The 80-bit random part.
    pub const fn random(&self) -> u128 {
        self.0 & ULID_MAX_RANDOM
    }

    /// The 26 characters, uppercase, into a buffer: no allocation.
    pub fn encode<'b>(&self, buf: &'b mut [u8; ULID_LEN]) -> &'b str {
        // 26 digits of 5 bits hold 130 bits: the first digit takes the top 3.
        for (i, slot) in buf.iter_mut().enumerate() {
            let shift = 5 * (ULID_LEN - 1 - i);
            *slot = ALPHABET[((self.0 >> shift) & 31) as usize];
        }
        // Only alphabet bytes, all ASCII, were written.
        std::str::from_utf8(buf).unwrap_or_default()
    }
}

impl fmt::Display for Ulid {
    /// The 26 characters, uppercase, as the spec writes them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.encode(&mut [0; ULID_LEN]))
    }
}

impl FromStr for Ulid {
    type Err = UlidError;

    /// Reads 26 Crockford base32 characters, either case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bytes = text.as_bytes();
        if bytes.len() != ULID_LEN {
            return Err(UlidError::WrongLength {
                text: text.to_string(),
                len: text.chars().count(),
            });
        }
        let mut value = 0u128;
        for (position, &b) in bytes.iter().enumerate() {
            let digit = DIGITS[b as usize];
            if digit == INVALID {
                return Err(UlidError::BadCharacter {
                    text: text.to_string(),
                    character: crate::error::character_at(text, position),
                    position,
                });
            }
            if position == 0 && digit > 7 {
                return Err(UlidError::Overflow {
                    text: text.to_string(),
                });
            }
            value = (value << 5) | u128::from(digit);
        }
        Ok(Self(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ulids_read_and_print() {
        // The spec's example; its time is 0x01_6B_F5_41_B4_B5 ms.
        let ulid: Ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV".parse().unwrap();
        assert_eq!(ulid.unix_ms(), 1_469_922_850_259);
        assert_eq!(ulid.to_string(), "01ARZ3NDEKTSV4RRFFQ69G5FAV");
        assert_eq!("01arz3ndektsv4rrffq69g5fav".parse::<Ulid>(), Ok(ulid));
        assert_eq!(Ulid::from_u128(0).to_string(), "00000000000000000000000000");
        assert_eq!(
            Ulid::from_u128(u128::MAX).to_string(),
            "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
        );
        let built = Ulid::from_parts(1, 2).unwrap();
        assert_eq!(built.as_u128(), (1 << 80) | 2);
        assert_eq!((built.unix_ms(), built.random()), (1, 2));
        assert_eq!(Ulid::from_bytes(built.to_bytes()), built);
        assert_eq!(Ulid::from_parts(1 << 48, 0), None);
        assert_eq!(Ulid::from_parts(0, 1 << 80), None);
    }

    #[test]
    fn each_kind_of_bad_input_gets_its_own_error() {
        assert!(matches!(
            "01ARZ3NDEKTSV4RRFFQ69G5FA".parse::<Ulid>(),
            Err(UlidError::WrongLength { len: 25, .. })
        ));
        for (bad, position) in [('I', 3), ('L', 3), ('O', 3), ('U', 3), ('u', 3), ('-', 3)] {
            let mut text = String::from("01ARZ3NDEKTSV4RRFFQ69G5FAV");
            text.replace_range(3..4, &bad.to_string());
            assert_eq!(
                text.parse::<Ulid>(),
                Err(UlidError::BadCharacter {
                    text: text.clone(),
                    character: bad,
                    position
                })
            );
        }
        assert!(matches!(
            "8ZZZZZZZZZZZZZZZZZZZZZZZZZ".parse::<Ulid>(),
            Err(UlidError::Overflow { .. })
        ));
        assert!(matches!(
            "é1ARZ3NDEKTSV4RRFFQ69G5FA".parse::<Ulid>(),
            Err(UlidError::BadCharacter {
                character: 'é',
                position: 0,
                ..
            })
        ));
    }
}

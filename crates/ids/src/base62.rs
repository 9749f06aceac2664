//! Base62 with the alphabet `0-9A-Za-z`, in ASCII order, so that codes of equal length
//! sort (bytewise) like the numbers they encode.

use crate::error::Base62Error;

/// The digits, in ASCII order.
pub const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Length of the longest encoding of a `u64` (62^11 > 2^64).
pub const MAX_LEN: usize = 11;

/// Encodes a number with no leading zeros (`0` encodes as `"0"`).
pub fn encode(mut value: u64) -> String {
    let mut digits = [0u8; MAX_LEN];
    let mut at = MAX_LEN;
    loop {
        at -= 1;
        digits[at] = ALPHABET[(value % 62) as usize];
        value /= 62;
        if value == 0 {
            break;
        }
    }
    // Every byte comes from ALPHABET, which is ASCII.
    digits[at..].iter().map(|&b| b as char).collect()
}

/// Encodes a number left-padded with `0` to at least `width` characters, so that all
/// codes of one width sort like their numbers.
pub fn encode_padded(value: u64, width: usize) -> String {
    let plain = encode(value);
    if plain.len() >= width {
        plain
    } else {
        let mut padded = "0".repeat(width - plain.len());
        padded.push_str(&plain);
        padded
    }
}

/// Decodes a base62 string (leading zeros allowed).
pub fn decode(text: &str) -> Result<u64, Base62Error> {
    if text.is_empty() {
        return Err(Base62Error::Empty);
    }
    let mut value: u64 = 0;
    for (position, byte) in text.bytes().enumerate() {
        let digit = match byte {
            b'0'..=b'9' => byte - b'0',
            b'A'..=b'Z' => byte - b'A' + 10,
            b'a'..=b'z' => byte - b'a' + 36,
            _ => {
                let character = text[position..].chars().next().unwrap_or('?');
                return Err(Base62Error::BadDigit {
                    character,
                    position,
                });
            }
        };
        value = value
            .checked_mul(62)
            .and_then(|v| v.checked_add(u64::from(digit)))
            .ok_or_else(|| Base62Error::Overflow(text.to_string()))?;
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(encode(0), "0");
        assert_eq!(encode(61), "z");
        assert_eq!(encode(62), "10");
        assert_eq!(encode(u64::MAX), "LygHa16AHYF");
        assert_eq!(decode("LygHa16AHYF"), Ok(u64::MAX));
        assert_eq!(encode_padded(62, 7), "0000010");
    }

    #[test]
    fn bad_input_is_named() {
        assert_eq!(decode(""), Err(Base62Error::Empty));
        assert_eq!(
            decode("ab-c"),
            Err(Base62Error::BadDigit {
                character: '-',
                position: 2
            })
        );
        assert!(matches!(
            decode("é"),
            Err(Base62Error::BadDigit {
                character: 'é',
                position: 0
            })
        ));
        assert!(matches!(
            decode("LygHa16AHYG"),
            Err(Base62Error::Overflow(_))
        ));
    }
}

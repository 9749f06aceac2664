//! Row keys: numeric ids take the compact path, anything else the string-keyed map.

/// Longest string key accepted, in bytes (Redis allows more; counters do not need it).
pub const MAX_KEY_LEN: usize = 1024;

/// The key of one row of a counter.
///
/// Exists because most keys are 64-bit post ids that fit the compact table, while a
/// Redis client may send any key (`pageviews:home`); both must work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key<'a> {
    /// An unsigned 64-bit id: stored in the compact open-addressing tables.
    Id(u64),
    /// Any other key: stored in the counter's string-keyed side map.
    Name(&'a str),
}

impl<'a> Key<'a> {
    /// Reads a key as a client wrote it: a canonical decimal `u64` (no sign, no leading
    /// zero unless it is `0`) becomes [`Key::Id`], anything else [`Key::Name`], so the
    /// text `"007"` and the id `7` stay different rows, as they are in Redis.
    pub fn parse(text: &'a str) -> Key<'a> {
        let b = text.as_bytes();
        let canonical = !b.is_empty()
            && b.len() <= 20
            && b.iter().all(u8::is_ascii_digit)
            && (b[0] != b'0' || b.len() == 1);
        if canonical {
            if let Ok(id) = text.parse::<u64>() {
                return Key::Id(id);
            }
        }
        Key::Name(text)
    }

    /// Checks a string key's length; ids are always valid.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        match self {
            Key::Id(_) => Ok(()),
            Key::Name("") => Err(crate::Error::BadKey("a string key must not be empty")),
            Key::Name(s) if s.len() > MAX_KEY_LEN => Err(crate::Error::BadKey(
                "a string key must be at most 1024 bytes",
            )),
            Key::Name(_) => Ok(()),
        }
    }

    /// An owned copy, for maps that outlive the call.
    pub fn to_owned_key(&self) -> OwnedKey {
        match *self {
            Key::Id(id) => OwnedKey::Id(id),
            Key::Name(s) => OwnedKey::Name(s.into()),
        }
    }
}

impl From<u64> for Key<'_> {
    fn from(id: u64) -> Self {
        Key::Id(id)
    }
}

impl<'a> From<&'a str> for Key<'a> {
    /// Same as [`Key::parse`].
    fn from(s: &'a str) -> Self {
        Key::parse(s)
    }
}

/// An owned [`Key`], used in the transaction-id window and in log records.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OwnedKey {
    /// See [`Key::Id`].
    Id(u64),
    /// See [`Key::Name`].
    Name(Box<str>),
}

impl OwnedKey {
    /// Borrows it back as a [`Key`].
    pub fn as_key(&self) -> Key<'_> {
        match self {
            OwnedKey::Id(id) => Key::Id(*id),
            OwnedKey::Name(s) => Key::Name(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_keeps_non_canonical_numbers_as_names() {
        assert_eq!(Key::parse("42"), Key::Id(42));
        assert_eq!(Key::parse("0"), Key::Id(0));
        assert_eq!(Key::parse("18446744073709551615"), Key::Id(u64::MAX));
        assert_eq!(
            Key::parse("18446744073709551616"),
            Key::Name("18446744073709551616")
        );
        assert_eq!(Key::parse("007"), Key::Name("007"));
        assert_eq!(Key::parse("-1"), Key::Name("-1"));
        assert_eq!(Key::parse("+1"), Key::Name("+1"));
        assert_eq!(Key::parse(""), Key::Name(""));
        assert_eq!(Key::parse("home"), Key::Name("home"));
    }
}

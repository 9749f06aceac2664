//! Every error of the links crate, named for what is wrong, so the server can turn
//! each into a 400, 409 or 503 without reading strings.

/// Why a long URL was refused; each says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Nothing to shorten.
    #[error("the url is empty")]
    Empty,
    /// Longer than [`crate::MAX_URL_LEN`]: browsers and proxies cut such URLs.
    #[error("the url is {len} characters long (or bytes, normalized); at most {max} are accepted")]
    TooLong {
        /// Bytes given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Not a URL at all.
    #[error("the url cannot be parsed ({0}); give an absolute http:// or https:// URL")]
    Unparsable(String),
    /// `javascript:`, `ftp:`, `data:` … would make a short link dangerous or useless.
    #[error("the url scheme `{0}` is not allowed; only http and https are")]
    Scheme(String),
    /// `http:///path` and the like.
    #[error("the url has no host")]
    NoHost,
    /// Not of the documented shape (`NewLink.url`'s pattern in `/openapi.json`).
    #[error("the url must be http(s)://host[:port][/path][?query][#fragment] with a host name of ASCII letters, digits, `-` and `_` (punycode for international names) or an IPv4 address, no user name or password, and no spaces or control characters")]
    Shape,
    /// A short link to a short link of ours could loop forever.
    #[error("the url points at this short-link service itself ({0}); shorten the target instead")]
    OwnDomain(String),
}

/// Why a custom alias was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AliasError {
    /// Aliases are path segments: 1 to 64 characters.
    #[error("the alias must be 1 to {max} characters long, got {len}")]
    Length {
        /// Characters given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Only characters that need no escaping in a URL path.
    #[error("the alias {0:?} may only contain A-Z a-z 0-9 _ -")]
    Characters(String),
    /// The alias would hide one of the server's own paths.
    #[error("the alias {0:?} is a reserved path of this service; pick another")]
    Reserved(String),
    /// Generated codes are 7+ letters and digits; such an alias could equal one.
    #[error("the alias {0:?} could equal a generated code: aliases of 7 or more characters must contain - or _")]
    CodeShaped(String),
}

/// A code that cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    /// Groups are the 62 base62 digits.
    #[error("group {0} is out of range: there are 62 groups (0 to 61)")]
    BadGroup(u8),
    /// Past the widest tier (62^6 + … + 62^10 numbers per group).
    #[error("sequence number {0} is past the last code this group can have")]
    Exhausted(u64),
}

/// Storage failed: the disk, the database file, or a record that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The backend could not read or write; retrying later may work.
    #[error("link storage failed: {0}")]
    Backend(String),
    /// A stored record does not decode: the file is damaged or from a newer version.
    #[error("stored link {id} is damaged: {reason}")]
    Corrupt {
        /// The link id.
        id: u64,
        /// What did not decode.
        reason: String,
    },
    /// A code or id already stored: codes are unique by construction, so this is a bug
    /// (or two servers sharing ticket sequences); the batch was not stored.
    #[error("{0} is already stored; nothing of the batch was stored (are two servers using the same ticket offset?)")]
    Duplicate(String),
    /// `replace` of a link that is not stored (deleted meanwhile).
    #[error("link {0} does not exist")]
    Missing(u64),
    /// `replace` tried to change what is fixed at creation.
    #[error("the code and alias of link {0} are fixed at creation and cannot change")]
    Immutable(u64),
}

/// Anything creating a link can fail with.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The long URL.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The alias.
    #[error(transparent)]
    Alias(#[from] AliasError),
    /// The code space.
    #[error(transparent)]
    Code(#[from] CodeError),
    /// The per-group ticket sequence.
    #[error("the code sequence failed: {0}")]
    Ticket(#[from] shardkit_ids::TicketError),
    /// Storage.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A field of the request other than url and alias.
    #[error("{0}")]
    Invalid(String),
}

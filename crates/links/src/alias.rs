//! Custom aliases (`/launch-2026`): the classic design's custom-URL table.
//!
//! The rule that keeps aliases and generated codes apart, provably: a generated code
//! is 7 to 11 characters, all letters and digits. An alias is 1 to 64 characters of
//! `[A-Za-z0-9_-]` and, if it is 7 or more characters long, must contain `-` or `_`.
//! So no alias has the shape of a generated code, and an alias can be taken without
//! ever looking at the code table (and vice versa).

use crate::code::looks_generated;
use crate::error::AliasError;

/// Longest alias.
pub const MAX_ALIAS_LEN: usize = 64;

/// Paths the server answers itself; neither an alias nor a generated code may equal
/// one (compared without case, so `/API` does not look like ours either).
pub const RESERVED: &[&str] = &[
    "api",
    "healthz",
    "metrics",
    "openapi.json",
    "static",
    "ui",
    "favicon.ico",
    "robots.txt",
    "assets",
    "admin",
    "login",
    "logout",
    "index.html",
    "sitemap.xml",
    "well-known",
    ".well-known",
];

/// Whether `path` (one segment, no `/`) is one of the server's own.
pub fn is_reserved(path: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(path))
}

/// Checks an alias against the rules above.
pub fn validate_alias(alias: &str) -> Result<(), AliasError> {
    if alias.is_empty() || alias.len() > MAX_ALIAS_LEN {
        return Err(AliasError::Length {
            len: alias.chars().count(),
            max: MAX_ALIAS_LEN,
        });
    }
    if !alias
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(AliasError::Characters(alias.to_string()));
    }
    if is_reserved(alias) {
        return Err(AliasError::Reserved(alias.to_string()));
    }
    if alias.len() >= crate::MIN_CODE_LEN && !alias.contains(['-', '_']) {
        return Err(AliasError::CodeShaped(alias.to_string()));
    }
    debug_assert!(!looks_generated(alias));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        for ok in [
            "a",
            "launch-2026",
            "promo",
            "abcdef",
            "x_y_z_long_enough",
            &"a-".repeat(32),
        ] {
            assert_eq!(validate_alias(ok), Ok(()), "{ok}");
        }
        assert!(matches!(validate_alias(""), Err(AliasError::Length { .. })));
        assert!(matches!(
            validate_alias(&"a-".repeat(33)),
            Err(AliasError::Length { .. })
        ));
        assert!(matches!(
            validate_alias("a b"),
            Err(AliasError::Characters(_))
        ));
        assert!(matches!(
            validate_alias("héllo"),
            Err(AliasError::Characters(_))
        ));
        assert!(matches!(
            validate_alias("API"),
            Err(AliasError::Reserved(_))
        ));
        assert!(matches!(
            validate_alias("healthz"),
            Err(AliasError::Reserved(_))
        ));
        assert!(matches!(
            validate_alias("summer2026"),
            Err(AliasError::CodeShaped(_))
        ));
    }
}

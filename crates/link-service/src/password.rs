//! Link passwords: hashed with Argon2id (a slow hash, since people choose them) into
//! a PHC string, which is all the store keeps; checked in constant time by the
//! `argon2` crate. Hashing takes tens of milliseconds by design, so callers run it
//! off the async runtime.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

/// Password attempts per client address: a burst of 10, then one every 6 seconds.
pub type PasswordAttempts = governor::DefaultKeyedRateLimiter<IpAddr>;

/// The limiter `POST /{code}` checks before looking at a password.
pub fn password_attempts() -> Arc<PasswordAttempts> {
    Arc::new(governor::RateLimiter::keyed(
        governor::Quota::with_period(std::time::Duration::from_secs(6))
            .unwrap_or_else(|| governor::Quota::per_second(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN)),
    ))
}

/// Longest password accepted, in characters.
pub const MAX_PASSWORD_LEN: usize = 128;

/// Why `password` cannot be a link's password, if it cannot: 1 to
/// [`MAX_PASSWORD_LEN`] characters.
pub fn check(password: &str) -> Result<(), String> {
    if password.is_empty() || password.chars().count() > MAX_PASSWORD_LEN {
        return Err(format!(
            "password must be 1 to {MAX_PASSWORD_LEN} characters (give none for a link without one)"
        ));
    }
    Ok(())
}

/// The PHC string of `password` with a fresh random salt, or why it is refused.
pub fn hash(password: &str) -> Result<String, String> {
    check(password)?;
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| format!("no randomness for the salt: {e}"))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| format!("the password could not be hashed: {e}"))
}

/// Whether `password` matches the stored PHC string (false for a damaged hash too).
pub fn verify(password: &[u8], phc: &str) -> bool {
    PasswordHash::new(phc)
        .is_ok_and(|parsed| Argon2::default().verify_password(password, &parsed).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn right_and_wrong_passwords_and_salts_differ() {
        let a = hash("open sesame").unwrap();
        let b = hash("open sesame").unwrap();
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "a fresh salt each time");
        assert!(verify(b"open sesame", &a));
        assert!(!verify(b"open sesame!", &a));
        assert!(!verify(b"open sesame", "not a hash"));
        assert!(hash("").is_err());
        assert!(hash(&"x".repeat(MAX_PASSWORD_LEN + 1)).is_err());
    }
}

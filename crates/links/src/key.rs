//! The Feistel key: 16 random bytes in a file of the data directory, made once, so
//! codes stay decodable across restarts and differ between installations.

use std::path::Path;

/// Reads the key at `path`, or makes a random one and writes it there (hex, written
/// to a temporary file, fsynced, renamed) if the file does not exist.
pub fn load_or_create_key(path: &Path) -> std::io::Result<[u8; 16]> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(text.trim()).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} must hold 32 hex digits (the code key); restore it from a backup",
                    path.display()
                ),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut key = [0u8; 16];
            getrandom::fill(&mut key).map_err(|e| {
                std::io::Error::other(format!("no randomness for the code key: {e}"))
            })?;
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            shardkit_ids::durable_file::replace_durably(path, format!("{hex}\n").as_bytes())?;
            Ok(key)
        }
        Err(e) => Err(e),
    }
}

fn parse(hex: &str) -> Option<[u8; 16]> {
    if hex.len() != 32 {
        return None;
    }
    let mut key = [0u8; 16];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    #[test]
    fn made_once_then_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("links.key");
        let first = super::load_or_create_key(&path).unwrap();
        assert_eq!(super::load_or_create_key(&path).unwrap(), first);
        std::fs::write(&path, "zz").unwrap();
        assert!(super::load_or_create_key(&path).is_err());
    }
}

//! Making the data directory, with an error that says what is wrong with the path
//! (a file where the directory should be) instead of the OS's bare "File exists".

use anyhow::{bail, Context};
use std::path::Path;

/// Creates `dir` (and its parents) if missing; fails, naming the path, if it is not
/// a directory.
pub fn create(dir: &Path) -> anyhow::Result<()> {
    if let Ok(meta) = std::fs::metadata(dir) {
        if !meta.is_dir() {
            bail!(
                "data directory {} is a file, not a directory: give --data (SHARDKIT_DATA) \
                 a directory, which is created if missing",
                dir.display()
            );
        }
        return Ok(());
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create data directory {}", dir.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_is_named_as_not_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let err = super::create(&file).unwrap_err().to_string();
        assert!(err.contains("is a file, not a directory"), "{err}");
        super::create(&dir.path().join("a/b")).unwrap();
        assert!(dir.path().join("a/b").is_dir());
    }
}

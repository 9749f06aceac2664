//! Replacing a small file so that a crash leaves either the old contents or the new,
//! never a torn file, and the new contents survive power loss once this returns: the
//! id generator's time guard and the short-link code key both need exactly this.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `contents` to `<path>.tmp`, fsyncs it, renames it over `path` and fsyncs
/// the directory (so the rename itself is durable).
pub fn replace_durably(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    {
        let mut file = File::create(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::replace_durably;

    #[test]
    fn replaces_the_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mark");
        replace_durably(&path, b"first, and longer\n").unwrap();
        replace_durably(&path, b"second\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second\n");
        assert!(!dir.path().join("mark.tmp").exists());
    }
}

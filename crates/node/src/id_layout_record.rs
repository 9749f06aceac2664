//! The id layout a data directory was set up with, recorded beside its time guard.
//!
//! A layout is part of what an id means: decoded under another one, an id gives
//! another time and shard, and ids issued under two layouts may collide. So the first
//! start records the layout's name (`<data>/ids.layout`) and later starts compare: a
//! different name is said at start, with both names. A directory from a release that
//! kept no record but has issued ids (`ids.guard` exists) under a preset name whose
//! meaning changed since (`sonyflake`) is told which name keeps the old meaning.

use shardkit_ids::Layout;
use std::path::Path;

/// The file holding the name.
pub const FILE: &str = "ids.layout";

/// Compares `configured` (as `[ids] layout` names it) with what `data` recorded, says
/// what differs, and records it when nothing was recorded yet.
pub fn check_and_record(data: &Path, configured: &str, layout: &Layout) -> anyhow::Result<()> {
    let path = data.join(FILE);
    let name = layout.to_string();
    match std::fs::read_to_string(&path) {
        Ok(recorded) => {
            let recorded = recorded.trim();
            if recorded != name {
                tracing::warn!(
                    recorded,
                    configured = %name,
                    "this data directory issued ids under another layout: ids issued before now decode to other times and shards, and new ids may repeat old ones; set [ids] layout back to the recorded one unless every old id is gone"
                );
            }
            return Ok(());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
    }
    if data.join("ids.guard").exists() {
        if let Some(former) = Layout::former_meaning(configured) {
            tracing::warn!(
                layout = configured,
                former = %former,
                "layout `sonyflake` now means Sony's Sonyflake (10 ms since 2014-09-01, an 8-bit sequence above a 16-bit machine id); this data directory issued ids before that, under the earlier meaning, now named `sonyflake-legacy`: set [ids] layout = \"sonyflake-legacy\" to go on as before"
            );
            // Not recorded: the operator decides which name the directory keeps.
            return Ok(());
        }
    }
    shardkit_ids::durable_file::replace_durably(&path, format!("{name}\n").as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot record the id layout in {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_start_records_the_layout_and_later_starts_keep_it() {
        let dir = tempfile::tempdir().unwrap();
        check_and_record(dir.path(), "snowflake", &Layout::snowflake()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(FILE)).unwrap(),
            "snowflake\n"
        );
        // Another layout later: said, not recorded over.
        check_and_record(dir.path(), "instagram", &Layout::instagram()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(FILE)).unwrap(),
            "snowflake\n"
        );
    }

    #[test]
    fn an_old_directory_under_sonyflake_is_not_recorded_as_the_new_meaning() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ids.guard"), b"0").unwrap();
        check_and_record(dir.path(), "sonyflake", &Layout::sonyflake()).unwrap();
        assert!(!dir.path().join(FILE).exists());
        // A new directory under `sonyflake` records Sony's layout.
        let fresh = tempfile::tempdir().unwrap();
        check_and_record(fresh.path(), "sonyflake", &Layout::sonyflake()).unwrap();
        assert_eq!(
            std::fs::read_to_string(fresh.path().join(FILE)).unwrap(),
            "sonyflake\n"
        );
    }
}

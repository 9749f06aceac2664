//! A cluster node's id: 40 lowercase hex characters (the shape of a Redis Cluster node
//! id), made once and kept in `<data>/cluster/node.id`, so a restarted node is the same
//! node to the map and gets its groups back.

use anyhow::Context;
use std::path::Path;

/// The id kept in `data`, made (and written durably) on the first start.
pub fn load_or_create(data: &Path) -> anyhow::Result<String> {
    let dir = data.join("cluster");
    let path = dir.join("node.id");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let id = text.trim().to_owned();
            if id.len() != 40 || !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                anyhow::bail!(
                    "{} does not hold a node id (40 lowercase hex characters); remove it to \
                     join as a new node",
                    path.display()
                );
            }
            Ok(id)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut bytes = [0u8; 20];
            getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
            let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot make {}", dir.display()))?;
            shardkit_ids::durable_file::replace_durably(&path, id.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(id)
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

//! The start check that keeps codes at home: a region's store may hold links only in
//! the groups `[regions.groups]` gives it, or other regions would send those codes
//! elsewhere. `<data>/regions.json` records the groups last checked; a start whose
//! groups include them needs no scan, any other start (the first with regions, a region
//! that gave groups away) reads every stored link once.

use super::map::RegionMap;
use serde::{Deserialize, Serialize};
use shardkit_links::{Codec, LinkStore};
use std::path::{Path, PathBuf};

/// The file in the data directory.
pub const CLAIM_FILE: &str = "regions.json";

/// What the last check found the store to hold.
#[derive(Debug, Serialize, Deserialize)]
struct Claim {
    /// The region it was checked for.
    region: String,
    /// Groups every stored link was in.
    groups: Vec<u8>,
}

fn path(data: &Path) -> PathBuf {
    data.join(CLAIM_FILE)
}

/// Without `[regions]` every group is this server's: the next start with regions must
/// scan again, so the record goes.
pub fn forget(data: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path(data)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(anyhow::anyhow!(
            "cannot remove {}: {e}",
            path(data).display()
        )),
        _ => Ok(()),
    }
}

/// Refuses the start when `store` holds a link in a group this region does not own,
/// naming the groups, a code, and what to do.
pub fn check(data: &Path, map: &RegionMap, store: &dyn LinkStore) -> anyhow::Result<()> {
    let file = path(data);
    if let Ok(bytes) = std::fs::read(&file) {
        if let Ok(claim) = serde_json::from_slice::<Claim>(&bytes) {
            if claim.region == map.this() && claim.groups.iter().all(|&g| map.owns(g)) {
                return Ok(());
            }
        }
    }
    let mut foreign: Vec<(u8, String, u64)> = Vec::new();
    let mut after = None;
    let mut count = 0u64;
    loop {
        let page = store.list(None, after, 1_000)?;
        for link in &page {
            count += 1;
            let Some(group) = Codec::group_of_code(&link.code) else {
                continue;
            };
            if !map.owns(group) {
                match foreign.iter_mut().find(|(g, _, _)| *g == group) {
                    Some(entry) => entry.2 += 1,
                    None => foreign.push((group, link.code.clone(), 1)),
                }
            }
        }
        match page.last() {
            Some(last) if page.len() == 1_000 => after = Some(last.id),
            _ => break,
        }
    }
    if !foreign.is_empty() {
        foreign.sort_unstable();
        let held: Vec<String> = foreign
            .iter()
            .map(|(g, code, n)| {
                format!(
                    "group '{}' ({} links, e.g. {code}{})",
                    shardkit_ids::base62::ALPHABET[usize::from(*g)] as char,
                    n,
                    map.owner(*g)
                        .map(|r| format!(", now given to {r}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        anyhow::bail!(
            "refusing to start as region {:?}: the link store holds links in groups regions.groups does not give this region: {}. \
             A code's first character names its home region, so those links would be sent elsewhere: give the groups back to {:?} \
             in regions.groups, or export those links and import them in their new home first",
            map.this(),
            held.join("; "),
            map.this()
        );
    }
    let claim = Claim {
        region: map.this().to_string(),
        groups: map.mine().to_vec(),
    };
    shardkit_ids::durable_file::replace_durably(&file, &serde_json::to_vec(&claim)?)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
    tracing::info!(
        links = count,
        region = map.this(),
        "the link store holds only this region's groups"
    );
    Ok(())
}

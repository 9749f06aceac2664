//! The measurement builds' patches under `bench/patches` still apply to this tree.
//!
//! A bench that compares the server against a build with one part taken out (what
//! counting clicks costs, say) makes that build from a patch; a patch that no longer
//! applies would only be found by the next person to measure, so every test run checks
//! them (`git apply --check`, which changes nothing).

use std::path::Path;
use std::process::Command;

#[test]
fn every_bench_patch_applies_to_this_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("bench/patches");
    let mut patches: Vec<_> = std::fs::read_dir(&dir)
        .expect("bench/patches exists")
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "patch"))
        .collect();
    patches.sort();
    assert!(!patches.is_empty(), "no patch under {}", dir.display());
    for patch in patches {
        let out = Command::new("git")
            .arg("apply")
            .arg("--check")
            .arg(&patch)
            .current_dir(&root)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "{} no longer applies; make it again against this tree (edit, then \
             `git diff > {}`): {}",
            patch.display(),
            patch.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

//! Files of a workspace by part of their path, for `@` in the composer: the ignore rules of
//! the project apply (`.gitignore`, `.ignore`), hidden files and private places are left
//! out, and a huge tree is walked only so far.

use std::path::Path;
use waymark_sandbox::private::Protected;

/// The most entries walked for one query (a monorepo answers from its first part).
pub const WALK_LIMIT: usize = 50_000;

/// Up to `limit` paths under `root` (relative, `/`-separated) holding `query` (any case):
/// names starting with it first, then the shortest paths. An empty query gives the files
/// nearest the root.
pub fn workspace_files(
    root: &Path,
    query: &str,
    limit: usize,
    protected: &Protected,
) -> Vec<String> {
    let q = query.trim().to_lowercase();
    let protected = protected.clone();
    let walk = crate::walk::builder(root)
        .hidden(true)
        .filter_entry(move |e| {
            (e.depth() == 0 || protected.place_of(e.path()).is_none()) && crate::walk::descend(e)
        })
        .build();
    let mut found: Vec<(u8, usize, String)> = Vec::new();
    for entry in walk.take(WALK_LIMIT).flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let lower = rel.to_lowercase();
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        let rank = if q.is_empty() {
            1
        } else if name.starts_with(&q) {
            0
        } else if lower.contains(&q) {
            1
        } else {
            continue;
        };
        found.push((rank, rel.len(), rel));
    }
    found.sort();
    found.into_iter().take(limit).map(|(_, _, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_found_by_part_of_their_path_with_ignored_hidden_and_private_ones_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "src/main.rs",
            "src/lib.rs",
            "src/mainframe/x.rs",
            "docs/main-notes.md",
            "target/debug/main",
            ".env",
            ".git/config",
            "secrets/key.pem",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        // `ignore` reads .gitignore only in a git repository.
        std::fs::create_dir_all(root.join(".git")).unwrap();
        // Canonical, as the runtime's places are.
        let protected = Protected::new(
            std::sync::Arc::new(vec![root.canonicalize().unwrap().join("secrets")]),
            Default::default(),
            Default::default(),
            Vec::new(),
            Default::default(),
        );
        let got = workspace_files(root, "MAIN", 10, &protected);
        assert_eq!(
            got,
            ["src/main.rs", "docs/main-notes.md", "src/mainframe/x.rs"]
        );
        assert!(workspace_files(root, "key", 10, &protected).is_empty());
        assert!(workspace_files(root, "env", 10, &protected).is_empty());
        assert_eq!(workspace_files(root, "", 2, &protected).len(), 2);
    }
}

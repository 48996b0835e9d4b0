//! Fifth red-team: git writes an index through a link at its path (it locks and renames the
//! file the link points at), and the worktree's index is in a folder the agent writes. A
//! merge writes no index through a link, waits for no other git, and keeps a split index
//! working.

use super::*;

/// A copy of the index at `index` outside every repository, and a link to it at `index`.
fn index_made_a_link(r: &Repo, index: &Path, name: &str) -> (PathBuf, Vec<u8>) {
    let victim = r._dir.path().join(name);
    std::fs::copy(index, &victim).unwrap();
    std::fs::remove_file(index).unwrap();
    std::os::unix::fs::symlink(&victim, index).unwrap();
    let bytes = std::fs::read(&victim).unwrap();
    (victim, bytes)
}

#[test]
fn the_worktrees_index_made_a_link_is_never_written_through() {
    let r = repo();
    let m = create(&r.main, &r.root, "link").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    let wt = git::Worktree::of(&r.main, &m.path).unwrap();
    // The link points at a file outside that holds a valid index, so every read works and
    // the merge reaches the step that brings the worktree's index up to date.
    let (victim, before) = index_made_a_link(&r, &wt.index(), "victim-index");
    merge(&m.row("s", 0), "work", None).unwrap();
    assert_eq!(read(&r, "src/lib.rs"), "fn a() { 1 }\n");
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        before,
        "the file the link points at is untouched"
    );
    assert!(std::fs::symlink_metadata(wt.index()).unwrap().is_symlink());
}

#[test]
fn the_checkouts_index_made_a_link_is_refused() {
    let r = repo();
    let m = create(&r.main, &r.root, "link").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    let index = r.main.join(".git/index");
    let (victim, before) = index_made_a_link(&r, &index, "victim-checkout-index");
    let head = git(&r.main, &["rev-parse", "HEAD"]);
    let e = merge(&m.row("s", 0), "work", None).unwrap_err();
    assert!(e.to_string().contains("link"), "{e}");
    assert!(e.to_string().contains("Nothing was changed"), "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), before);
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]), head);
    assert_eq!(read(&r, "src/lib.rs"), "fn a() {}\n");
    assert!(!r.main.join(".git/index.lock").exists());
}

#[test]
fn a_held_index_lock_refuses_the_merge_and_stays() {
    let r = repo();
    let m = create(&r.main, &r.root, "locked").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    let lock = r.main.join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let head = git(&r.main, &["rev-parse", "HEAD"]);
    let e = merge(&m.row("s", 0), "work", None).unwrap_err();
    assert_eq!(e.code(), "index_busy", "{e}");
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]), head);
    assert_eq!(read(&r, "src/lib.rs"), "fn a() {}\n");
    assert!(lock.exists(), "another git's lock is never removed");
}

#[test]
fn a_split_index_keeps_working_after_a_merge() {
    let r = repo();
    git(&r.main, &["config", "core.splitIndex", "true"]);
    std::fs::write(r.main.join("staged.txt"), "staged\n").unwrap();
    git(&r.main, &["add", "staged.txt"]);
    let m = create(&r.main, &r.root, "split").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    // Sixth red-team: many files of the name pushed the real shared index out of those
    // copied. Only the one the index names is.
    for i in 0..20 {
        std::fs::write(r.main.join(format!(".git/sharedindex.{i:040}")), "junk").unwrap();
    }
    merge(&m.row("s", 0), "work", None).unwrap();
    assert_eq!(read(&r, "src/lib.rs"), "fn a() { 1 }\n");
    // The user's staged file is still staged, and git reads the index as usual.
    assert_eq!(
        git(&r.main, &["status", "--porcelain", "-uno"]).trim(),
        "A  staged.txt"
    );
}

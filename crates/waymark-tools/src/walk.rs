//! Walking a workspace with its ignore rules (`.gitignore`, `.ignore`, `.git/info/exclude`)
//! without ever opening an ignore file that is not a small regular file: the `ignore` crate
//! opens each one it finds, and a FIFO the model made under such a name would block the walk
//! (the search tools, `@` in the composer) for good.

use std::path::Path;

/// The ignore files the walker reads in a folder.
const IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", ".git/info/exclude"];

/// The largest ignore file read (real ones are a few KiB).
const IGNORE_FILE_MAX: u64 = 1024 * 1024;

/// Whether every ignore file `dir` holds, if any, is a regular file of a sane size (a link
/// is followed; one that leads nowhere counts as unsafe).
pub fn ignore_files_safe(dir: &Path) -> bool {
    IGNORE_FILES.iter().all(|name| {
        let p = dir.join(name);
        match std::fs::symlink_metadata(&p) {
            Err(_) => true,
            Ok(_) => std::fs::metadata(&p).is_ok_and(|m| m.is_file() && m.len() <= IGNORE_FILE_MAX),
        }
    })
}

/// A walker of `root` that reads the ignore files of `root` and of the folders above it only
/// when they are safe to open. Folders below are checked as they are reached: pass each
/// entry to [`descend`] in the walker's `filter_entry`.
pub fn builder(root: &Path) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(root);
    b.parents(root.ancestors().skip(1).all(ignore_files_safe));
    if !ignore_files_safe(root) {
        b.git_ignore(false).ignore(false).git_exclude(false);
    }
    b
}

/// Whether the walk may go into `entry`: anything but a folder whose ignore files are not
/// safe to open (it is left out whole).
pub fn descend(entry: &ignore::DirEntry) -> bool {
    entry.depth() == 0
        || !entry.file_type().is_some_and(|t| t.is_dir())
        || ignore_files_safe(entry.path())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn mkfifo(p: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap();
        assert!(made.success());
    }

    /// Walks `root` on another thread; the paths found, or a failure after 10 s (a walk that
    /// opened a FIFO would never return).
    fn walk(root: &Path) -> Vec<String> {
        let root = root.to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let found: Vec<String> = builder(&root)
                .hidden(false)
                .filter_entry(descend)
                .build()
                .flatten()
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .map(|e| e.path().strip_prefix(&root).unwrap().display().to_string())
                .collect();
            let _ = tx.send(found);
        });
        let mut found = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the walk blocked on an ignore file");
        found.sort();
        found
    }

    #[test]
    fn a_fifo_under_an_ignore_name_never_blocks_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::create_dir_all(root.join("trap")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "x").unwrap();
        std::fs::write(root.join("trap/a.rs"), "x").unwrap();
        std::fs::write(root.join("build.log"), "x").unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        mkfifo(&root.join("trap/.gitignore"));
        let found = walk(root);
        // The folder with the FIFO is left out; the root's rules still hold.
        assert!(found.contains(&"src/main.rs".to_string()), "{found:?}");
        assert!(!found.iter().any(|f| f.starts_with("trap/")), "{found:?}");
        assert!(!found.contains(&"build.log".to_string()), "{found:?}");
        // At the root itself (and as `.ignore`, or git's exclude file): no rules are read.
        for name in [".ignore", ".git/info/exclude"] {
            let p = root.join(name);
            mkfifo(&p);
            let found = walk(root);
            assert!(
                found.contains(&"src/main.rs".to_string()),
                "{name}: {found:?}"
            );
            std::fs::remove_file(&p).unwrap();
        }
    }

    #[test]
    fn only_small_regular_ignore_files_are_safe() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(ignore_files_safe(d));
        std::fs::write(d.join(".gitignore"), "target/\n").unwrap();
        assert!(ignore_files_safe(d));
        std::fs::File::create(d.join(".ignore"))
            .unwrap()
            .set_len(IGNORE_FILE_MAX + 1)
            .unwrap();
        assert!(!ignore_files_safe(d));
        std::fs::remove_file(d.join(".ignore")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", d.join(".ignore")).unwrap();
        assert!(!ignore_files_safe(d));
        std::fs::remove_file(d.join(".ignore")).unwrap();
        std::os::unix::fs::symlink(d.join("nowhere"), d.join(".ignore")).unwrap();
        assert!(!ignore_files_safe(d));
    }
}

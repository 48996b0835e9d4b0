//! The sandboxed shell's temp folder: the one place its commands may write (besides the plan
//! file). It lives in the session's folder inside Waymark's data folder, so what a command
//! leaves there would stay on disk; it is therefore held to a total size while a command
//! runs, emptied when the command ends, and swept when the session's sandbox is first used
//! in a process (what a crash left).

use std::path::Path;

/// How often a running command's temp folder is measured.
pub const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// The most entries the temp folder may hold (files, folders, links), whatever their size:
/// millions of empty files fill a disk's inodes.
pub const MAX_ENTRIES: u64 = 100_000;

/// How much the temp folder at `dir` holds: the bytes its entries take on disk (allocated
/// blocks, so a sparse file counts only what it uses) and how many entries. The count stops
/// once it passes `max_bytes` or [`MAX_ENTRIES`], so measuring a huge folder stays cheap.
pub fn usage(dir: &Path, max_bytes: u64) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    let (mut bytes, mut entries) = (0u64, 0u64);
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(list) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in list.flatten() {
            let Ok(m) = e.metadata() else { continue };
            entries += 1;
            bytes = bytes.saturating_add(m.blocks().saturating_mul(512));
            if m.is_dir() {
                todo.push(e.path());
            }
            if bytes > max_bytes || entries > MAX_ENTRIES {
                return (bytes, entries);
            }
        }
    }
    (bytes, entries)
}

/// Whether the temp folder at `dir` holds more than `max_bytes` or [`MAX_ENTRIES`].
pub fn over(dir: &Path, max_bytes: u64) -> bool {
    let (bytes, entries) = usage(dir, max_bytes);
    bytes > max_bytes || entries > MAX_ENTRIES
}

/// Empties the temp folder at `dir` (it stays, empty): everything in it is removed, links as
/// links (never followed). A folder that is not there is already empty.
pub fn empty(dir: &Path) -> std::io::Result<()> {
    let list = match std::fs::read_dir(dir) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut first_error = None;
    for e in list.flatten() {
        let path = e.path();
        let gone = match e.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if let Err(err) = gone
            && err.kind() != std::io::ErrorKind::NotFound
        {
            first_error.get_or_insert(err);
        }
    }
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temp_folder_is_measured_by_its_blocks_and_emptied_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(tmp.join("a/b")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), "not the sandbox's").unwrap();
        std::fs::write(tmp.join("a/b/data"), vec![7u8; 1 << 20]).unwrap();
        std::os::unix::fs::symlink(&outside, tmp.join("link")).unwrap();
        // A sparse file of a gigabyte takes almost nothing.
        std::fs::File::create(tmp.join("sparse"))
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let (bytes, entries) = usage(&tmp, u64::MAX);
        assert!(((1 << 20)..(2 << 20)).contains(&bytes), "{bytes}");
        assert_eq!(entries, 5);
        assert!(over(&tmp, 512 * 1024));
        assert!(!over(&tmp, 4 << 20));
        empty(&tmp).unwrap();
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
        assert!(outside.join("keep").exists(), "the link was not followed");
        empty(&dir.path().join("never-made")).unwrap();
    }
}

//! Writing an index a merge changes (the user's checkout's, the worktree's) the way git's own
//! commands do, but never through a link: under git's lock for that index, git works on a
//! copy in Waymark's sealed folder, and the result is written into a fresh file of a random
//! name beside the index, through its open folder, then renamed over it.
//!
//! Git writes an index by locking `<index>.lock` and renaming the lock over the index, and
//! it follows a link at the index's path (or at a lock's) to do so. The worktree's index is
//! in a folder the agent writes, where a process it left running can swap any file for a link
//! at any moment: an index made a link to `~/.ssh/authorized_keys` would have a merge write
//! the index over that file.

use crate::at::Dir;
use crate::{Result, WorktreeError};
use std::path::{Path, PathBuf};

/// A new version of one index being made: git's lock taken, the current content copied.
pub(crate) struct IndexSwap {
    dir: Dir,
    work: PathBuf,
    shared: Vec<PathBuf>,
}

/// Longest index (or shared index of a split one) copied: far past any real project's.
const INDEX_MAX: u64 = 512 * 1024 * 1024;

impl IndexSwap {
    /// Takes git's lock on the index in `dir` (of the checkout at `repo`, for messages;
    /// refused when another git command holds it) and copies the index, which must be a
    /// regular file or absent, to `work` (in Waymark's sealed folder), with the shared index
    /// files a split index needs beside it.
    pub(crate) fn begin(dir: Dir, work: PathBuf, repo: &str) -> Result<IndexSwap> {
        if !dir.create("index.lock", b"")? {
            return Err(WorktreeError::IndexBusy {
                repo: repo.to_string(),
                lock: dir.path_of("index.lock").display().to_string(),
            });
        }
        let mut swap = IndexSwap {
            dir,
            work,
            shared: Vec::new(),
        };
        swap.copy()?;
        Ok(swap)
    }

    /// Copies the index (nothing when there is none yet) and its shared files.
    fn copy(&mut self) -> Result<()> {
        let index = self
            .dir
            .read("index", INDEX_MAX)
            .map_err(|e| self.not_a_file(e))?;
        let Some(index) = index else {
            return Ok(());
        };
        let folder = self.work.parent().unwrap_or(Path::new("."));
        // A split index names its shared part in its `link` extension: that file alone is
        // copied (the names of other files there say nothing).
        for name in shared_named(&index) {
            if let Ok(Some(content)) = self.dir.read(&name, INDEX_MAX) {
                let to = folder.join(&name);
                std::fs::write(&to, content).map_err(crate::error::io(&to))?;
                self.shared.push(to);
            }
        }
        std::fs::write(&self.work, index).map_err(crate::error::io(&self.work))
    }

    fn not_a_file(&self, e: WorktreeError) -> WorktreeError {
        WorktreeError::Io {
            path: self.dir.path_of("index").display().to_string(),
            source: std::io::Error::other(format!(
                "the index is not a file git wrote ({e}); Waymark writes no index through it. Nothing was changed."
            )),
        }
    }

    /// The copy, for git to read and write (`GIT_INDEX_FILE`).
    pub(crate) fn path(&self) -> &Path {
        &self.work
    }

    /// Puts the copy as git left it in place of the index: written into a new file beside
    /// it, then renamed over it (whatever stands at the index's path is replaced, never
    /// written through). The lock is let go.
    pub(crate) fn finish(self) -> Result<()> {
        let content = std::fs::read(&self.work).map_err(crate::error::io(&self.work))?;
        let temp = format!("index.waymark-{:016x}", fastrand::u64(..));
        if !self.dir.create(&temp, &content)? {
            return Err(WorktreeError::Io {
                path: self.dir.path_of(&temp).display().to_string(),
                source: std::io::Error::other("a file of this name appeared; nothing was written"),
            });
        }
        let placed = self.dir.rename(&temp, "index");
        if placed.is_err() {
            let _ = self.dir.remove(&temp);
        }
        placed
    }
}

/// The shared index files (`sharedindex.<id>`) a split index may name: each place its bytes
/// read `link`, then a size, then an id (git's extension), at most two.
fn shared_named(index: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = index[at..].windows(4).position(|w| w == b"link") {
        let start = at + i + 8;
        for len in [20, 32] {
            if let Some(id) = index.get(start..start + len) {
                let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                out.push(format!("sharedindex.{hex}"));
            }
        }
        at += i + 4;
        if out.len() >= 8 {
            break;
        }
    }
    out
}

impl Drop for IndexSwap {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.work);
        for f in &self.shared {
            let _ = std::fs::remove_file(f);
        }
        let _ = self.dir.remove("index.lock");
    }
}

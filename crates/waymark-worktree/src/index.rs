//! Writing an index a merge changes (the user's checkout's, the worktree's) the way git's own
//! commands do, but never through a link: under git's lock for that index, into a fresh
//! file of a random name beside it, then renamed over it.
//!
//! Git writes an index by locking `<index>.lock` and renaming the lock over the index, and it
//! follows a link at the index's path to do so. The worktree's index (and, for an agent whose
//! commands run as the user, the checkout's) is in a folder the agent writes: an index made a
//! link to `~/.bashrc` would have a merge write the index over that file.

use crate::{Result, WorktreeError};
use std::path::{Path, PathBuf};

/// A new version of one index being made: git's lock taken, the current content copied.
pub(crate) struct IndexSwap {
    index: PathBuf,
    lock: PathBuf,
    temp: PathBuf,
    done: bool,
}

/// Longest index copied (git refuses far smaller ones in practice).
const INDEX_MAX: u64 = 4 * 1024 * 1024 * 1024;

impl IndexSwap {
    /// Takes git's lock on `index` (of the checkout at `repo`, for messages; refused when
    /// another git command holds it) and copies the index, which must be a regular file or
    /// absent, into a new file beside it.
    pub(crate) fn begin(index: &Path, repo: &str) -> Result<IndexSwap> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let lock = with_suffix(index, ".lock");
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&lock)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(WorktreeError::IndexBusy {
                    repo: repo.to_string(),
                    lock: lock.display().to_string(),
                });
            }
            Err(e) => return Err(crate::io(&lock)(e)),
        }
        let mut swap = IndexSwap {
            temp: with_suffix(index, &format!(".waymark-{:016x}", fastrand::u64(..))),
            index: index.to_path_buf(),
            lock,
            done: false,
        };
        swap.copy()?;
        Ok(swap)
    }

    /// Copies the index into the new file (nothing when there is no index yet).
    fn copy(&mut self) -> Result<()> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let from = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&self.index)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.not_a_file(e)),
        };
        let meta = from.metadata().map_err(crate::io(&self.index))?;
        if !meta.is_file() {
            return Err(self.not_a_file(std::io::Error::other("not a regular file")));
        }
        let mut to = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.temp)
            .map_err(crate::io(&self.temp))?;
        use std::io::Read as _;
        std::io::copy(&mut from.take(INDEX_MAX), &mut to).map_err(crate::io(&self.temp))?;
        Ok(())
    }

    fn not_a_file(&self, e: std::io::Error) -> WorktreeError {
        let why = if e.raw_os_error() == Some(libc::ELOOP) {
            "it is a link, which git would write through".to_string()
        } else {
            e.to_string()
        };
        WorktreeError::Io {
            path: self.index.display().to_string(),
            source: std::io::Error::other(format!(
                "the index is not a file git wrote ({why}); Waymark writes no index through it. Nothing was changed."
            )),
        }
    }

    /// The new index, for git to read and write (`GIT_INDEX_FILE`).
    pub(crate) fn path(&self) -> &Path {
        &self.temp
    }

    /// Puts the new index in place of the old (the entry at the index's path replaced,
    /// whatever it is) and lets go of the lock.
    pub(crate) fn finish(mut self) -> Result<()> {
        std::fs::rename(&self.temp, &self.index).map_err(crate::io(&self.index))?;
        self.done = true;
        Ok(())
    }
}

impl Drop for IndexSwap {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.temp);
            let _ = std::fs::remove_file(with_suffix(&self.temp, ".lock"));
        }
        let _ = std::fs::remove_file(&self.lock);
    }
}

/// `path` with `suffix` added to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

//! Files in folders the agent can write (the project's git folder, a worktree), reached one
//! folder at a time from an open one and never through a link, so a link the agent puts
//! anywhere on the way, at any moment, sends no read or write outside. git's own file code
//! follows links (it appends a reflog or writes an index through one), so what Waymark
//! writes in the project's git folder it writes through here.

use crate::{Result, WorktreeError};
use rustix::fs::{Mode, OFlags};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// A folder opened for what goes below it: never through a link.
pub(crate) const DIR: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

/// An open folder, and its path for messages.
pub(crate) struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// The folder at `path`, which Waymark named itself (the project's git folder as git
    /// reports it, a worktree's folder as recorded); its last step is not a link.
    pub(crate) fn open(path: &Path) -> Result<Dir> {
        let fd = rustix::fs::openat(rustix::fs::CWD, path, DIR, Mode::empty())
            .map_err(|e| error(path, e))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The folder `rel` below this one (`/`-separated), each step opened without following
    /// a link; made where missing when `make`.
    pub(crate) fn walk(&self, rel: &str, make: bool) -> Result<Dir> {
        let mut fd = rustix::fs::openat(&self.fd, ".", DIR, Mode::empty())
            .map_err(|e| error(&self.path, e))?;
        let mut path = self.path.clone();
        for step in rel.split('/').filter(|s| !s.is_empty()) {
            if step == ".." || step == "." {
                return Err(error(&path.join(step), rustix::io::Errno::INVAL));
            }
            path.push(step);
            if make {
                match rustix::fs::mkdirat(&fd, step, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(error(&path, e)),
                }
            }
            // A link here (or a file) fails: ELOOP, ENOTDIR.
            fd = rustix::fs::openat(&fd, step, DIR, Mode::empty()).map_err(|e| error(&path, e))?;
        }
        Ok(Dir { fd, path })
    }

    /// The path of `name` in this folder, for messages.
    pub(crate) fn path_of(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Opens `name` without following a link or waiting on a pipe: `None` when absent; an
    /// error when it is not a regular file.
    fn open_file(&self, name: &str, flags: OFlags) -> Result<Option<std::fs::File>> {
        let flags = flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(error(&self.path_of(name), e)),
        };
        let file = std::fs::File::from(fd);
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        if !regular {
            return Err(error(&self.path_of(name), rustix::io::Errno::INVAL));
        }
        Ok(Some(file))
    }

    /// The content of the regular file `name`, at most `max` bytes; `None` when absent.
    pub(crate) fn read(&self, name: &str, max: u64) -> Result<Option<Vec<u8>>> {
        let Some(file) = self.open_file(name, OFlags::RDONLY)? else {
            return Ok(None);
        };
        use std::io::Read as _;
        let mut buf = Vec::new();
        file.take(max)
            .read_to_end(&mut buf)
            .map_err(crate::error::io(&self.path_of(name)))?;
        Ok(Some(buf))
    }

    /// Creates `name`, which must not exist (nor a link by that name), holding `content`;
    /// `false` when something is there already.
    pub(crate) fn create(&self, name: &str, content: &[u8]) -> Result<bool> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::EXIST) => return Ok(false),
            Err(e) => return Err(error(&self.path_of(name), e)),
        };
        use std::io::Write as _;
        std::fs::File::from(fd)
            .write_all(content)
            .map_err(crate::error::io(&self.path_of(name)))?;
        Ok(true)
    }

    /// Adds `line` at the end of the regular file `name`, if there is one (a link, a pipe or
    /// a folder there gets nothing) of at most `max` bytes. The file is never written in
    /// place: what it held and the line go into a new file, renamed over it, so a name made a
    /// second one of a file outside (a hard link, which no flag refuses) at any moment only
    /// loses that name.
    pub(crate) fn append(&self, name: &str, line: &[u8], max: u64) -> Result<()> {
        let Ok(Some(mut content)) = self.read(name, max + 1) else {
            return Ok(());
        };
        if content.len() as u64 > max {
            return Ok(());
        }
        content.extend_from_slice(line);
        let temp = format!("{name}.waymark-{:016x}", fastrand::u64(..));
        if !self.create(&temp, &content)? {
            return Ok(());
        }
        let placed = self.rename(&temp, name);
        if placed.is_err() {
            let _ = self.remove(&temp);
        }
        placed
    }

    /// Renames `from` to `to` in this folder: whatever is at `to` (a link too) is replaced,
    /// never written through.
    pub(crate) fn rename(&self, from: &str, to: &str) -> Result<()> {
        rustix::fs::renameat(&self.fd, from, &self.fd, to).map_err(|e| error(&self.path_of(to), e))
    }

    /// Moves `from` in this folder to `to` in folder `into`.
    pub(crate) fn move_to(&self, from: &str, into: &Dir, to: &str) -> Result<()> {
        rustix::fs::renameat(&self.fd, from, &into.fd, to)
            .map_err(|e| error(&self.path_of(from), e))
    }

    /// Removes the entry `name` (a file or a link, never what a link names); nothing when it
    /// is absent.
    pub(crate) fn remove(&self, name: &str) -> Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, rustix::fs::AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(error(&self.path_of(name), e)),
        }
    }

    /// The names in this folder.
    pub(crate) fn names(&self) -> Result<Vec<String>> {
        let fd = rustix::fs::openat(&self.fd, ".", DIR, Mode::empty())
            .map_err(|e| error(&self.path, e))?;
        let dir = rustix::fs::Dir::new(fd).map_err(|e| error(&self.path, e))?;
        Ok(dir
            .flatten()
            .filter_map(|e| e.file_name().to_str().ok().map(str::to_string))
            .filter(|n| n != "." && n != "..")
            .collect())
    }
}

fn error(path: &Path, e: rustix::io::Errno) -> WorktreeError {
    let why = match e {
        rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => std::io::Error::other(
            "a link (or something else than git keeps) stands here, where git keeps a file or folder of its own: Waymark reads and writes nothing through it",
        ),
        rustix::io::Errno::INVAL => std::io::Error::other(
            "not a regular file or folder where git keeps one: Waymark reads and writes nothing through it",
        ),
        e => e.into(),
    };
    WorktreeError::Io {
        path: path.display().to_string(),
        source: why,
    }
}

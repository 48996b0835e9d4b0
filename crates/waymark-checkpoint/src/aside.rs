//! Where what is in the way of a restore goes: a folder of the store (`aside/<time>`), each
//! entry under a number and its path in the folder's `manifest`, so nothing a restore
//! replaces or removes is lost. An entry is renamed there; when the store is on another file
//! system than the workspace, it is copied there (files, links and folders, never following
//! a link) and then removed.

use crate::access::{DIR, in_folder, movable};
use crate::{CheckpointError, Result};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

fn err(what: &str, e: Errno) -> CheckpointError {
    CheckpointError::Io {
        path: what.to_string(),
        source: e.into(),
    }
}

/// Folder `name` of `dir`, made if missing, opened without following a link.
pub(crate) fn sub(dir: &OwnedFd, name: &str, shown: &Path) -> Result<OwnedFd> {
    match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(err(&shown.display().to_string(), e)),
    }
    rustix::fs::openat(dir, name, DIR, Mode::empty())
        .map_err(|e| err(&shown.display().to_string(), e))
}

/// The aside folder of one restore, made when something first needs it.
pub(crate) struct Aside<'a> {
    store: &'a Path,
    name: String,
    fd: Option<OwnedFd>,
    moved: usize,
    /// Bytes one restore may still copy aside (from a workspace on another file system
    /// than the store: a rename costs nothing, a copy costs the disk).
    copy_left: u64,
}

/// Most bytes (by file size, so a sparse file counts whole) one restore copies aside.
pub(crate) const COPY_MAX: u64 = 1024 * 1024 * 1024;
/// Deepest folder copied aside, and most entries.
const COPY_DEPTH: usize = 256;
const COPY_ENTRIES: usize = 100_000;

impl<'a> Aside<'a> {
    pub(crate) fn new(store: &'a Path) -> Aside<'a> {
        let name = format!(
            "{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        Aside {
            store,
            name,
            fd: None,
            moved: 0,
            copy_left: COPY_MAX,
        }
    }

    /// The folder, once something went into it.
    pub(crate) fn used(&self) -> Option<PathBuf> {
        (self.moved > 0).then(|| self.dir())
    }

    fn dir(&self) -> PathBuf {
        self.store.join("aside").join(&self.name)
    }

    /// Moves `name` of `dir` (the path `rel`) aside, under the next number; the folder's
    /// `manifest` says which path each number was.
    pub(crate) fn put(&mut self, dir: &OwnedFd, name: &str, rel: &str) -> Result<()> {
        if self.fd.is_none() {
            let store = rustix::fs::openat(rustix::fs::CWD, self.store, DIR, Mode::empty())
                .map_err(|e| err(&self.store.display().to_string(), e))?;
            let all = sub(&store, "aside", &self.store.join("aside"))?;
            self.fd = Some(sub(&all, &self.name.clone(), &self.dir())?);
        }
        let Some(aside) = &self.fd else {
            return Ok(());
        };
        self.moved += 1;
        let to = format!("{:06}", self.moved);
        match movable(dir, name, || {
            rustix::fs::renameat(dir, name, aside, to.as_str())
        }) {
            Ok(()) => {}
            // The store is on another file system: a copy, then the original removed, both
            // held to what a copy may cost (measured first, without going deep).
            Err(Errno::XDEV) => {
                let size = measure(dir, name, rel, self.copy_left)?;
                self.copy_left -= size;
                copy(dir, name, aside, &to, rel)?;
                remove(dir, name, rel)?;
            }
            Err(e) => return Err(err(rel, e)),
        }
        use std::io::Write as _;
        let manifest = rustix::fs::openat(
            aside,
            "manifest",
            OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| err(&self.dir().join("manifest").display().to_string(), e))?;
        std::fs::File::from(manifest)
            .write_all(format!("{to}\t{}\n", rel.replace(['\n', '\t'], " ")).as_bytes())
            .map_err(crate::io(&self.dir()))
    }
}

/// The bytes entry `name` of `dir` holds (files by size, a folder with all in it), walked
/// without recursion; refused when over `left` bytes, [`COPY_ENTRIES`] entries or
/// [`COPY_DEPTH`] folders deep, or holding a name that is not UTF-8: it cannot be copied
/// aside, and the user is told to move it.
fn measure(dir: &OwnedFd, name: &str, rel: &str, left: u64) -> Result<u64> {
    let refuse = |why: String| CheckpointError::Io {
        path: rel.to_string(),
        source: std::io::Error::other(format!(
            "it is in the way of the rewind and would be copied aside (the workspace is on another file system than Waymark's data folder), but {why}: move it out of the workspace yourself, then rewind again"
        )),
    };
    let mut total = 0u64;
    let mut entries = 0usize;
    // Folders still to list, by their names below `name` (opened again when their turn
    // comes: holding every one open could run out of descriptors).
    let mut stack: Vec<Vec<String>> = Vec::new();
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| err(rel, e))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => stack.push(Vec::new()),
        FileType::RegularFile => total = st.st_size as u64,
        _ => {}
    }
    while let Some(steps) = stack.pop() {
        if steps.len() >= COPY_DEPTH {
            return Err(refuse(format!("it is more than {COPY_DEPTH} folders deep")));
        }
        let at = std::iter::once(rel)
            .chain(steps.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("/");
        let mut fd = crate::access::open_dir(dir, name).map_err(|e| err(rel, e))?;
        for s in &steps {
            fd = crate::access::open_dir(&fd, s).map_err(|e| err(&at, e))?;
        }
        let listing = rustix::fs::Dir::read_from(&fd).map_err(|e| err(&at, e))?;
        for entry in listing {
            let entry = entry.map_err(|e| err(&at, e))?;
            let Ok(child) = entry.file_name().to_str() else {
                return Err(refuse("it holds a name that is not UTF-8".into()));
            };
            if child == "." || child == ".." {
                continue;
            }
            entries += 1;
            if entries > COPY_ENTRIES {
                return Err(refuse(format!("it holds more than {COPY_ENTRIES} entries")));
            }
            let st = rustix::fs::statat(&fd, child, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| err(&at, e))?;
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => {
                    let mut deeper = steps.clone();
                    deeper.push(child.to_string());
                    stack.push(deeper);
                }
                FileType::RegularFile => total = total.saturating_add(st.st_size as u64),
                _ => {}
            }
        }
        if total > left {
            break;
        }
    }
    if total > left {
        return Err(refuse(format!(
            "it holds more than the {} MiB one rewind copies aside",
            COPY_MAX / (1024 * 1024)
        )));
    }
    Ok(total)
}

/// Copies entry `name` of `from` to `to_name` in `to`: a file's content (read without
/// following a link or waiting on a pipe), a link as a link, a folder with all it holds.
/// Anything else (a pipe, a device) is left out of the copy.
fn copy(from: &OwnedFd, name: &str, to: &OwnedFd, to_name: &str, rel: &str) -> Result<()> {
    let st = rustix::fs::statat(from, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| err(rel, e))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {
            let src = in_folder(from, || {
                rustix::fs::openat(
                    from,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                    Mode::empty(),
                )
            })
            .map_err(|e| err(rel, e))?;
            let dst = rustix::fs::openat(
                to,
                to_name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(st.st_mode & 0o777),
            )
            .map_err(|e| err(rel, e))?;
            std::io::copy(&mut std::fs::File::from(src), &mut std::fs::File::from(dst))
                .map_err(crate::io(Path::new(rel)))?;
        }
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(from, name, Vec::new()).map_err(|e| err(rel, e))?;
            rustix::fs::symlinkat(target.as_c_str(), to, to_name).map_err(|e| err(rel, e))?;
        }
        FileType::Directory => {
            let src = crate::access::open_dir(from, name).map_err(|e| err(rel, e))?;
            rustix::fs::mkdirat(to, to_name, Mode::from_raw_mode(0o700))
                .map_err(|e| err(rel, e))?;
            let dst =
                rustix::fs::openat(to, to_name, DIR, Mode::empty()).map_err(|e| err(rel, e))?;
            for child in names(&src, rel)? {
                copy(&src, &child, &dst, &child, &format!("{rel}/{child}"))?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Removes entry `name` of `dir` and everything in it, never following a link.
fn remove(dir: &OwnedFd, name: &str, rel: &str) -> Result<()> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| err(rel, e))?;
    if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
        let inner = crate::access::open_dir(dir, name).map_err(|e| err(rel, e))?;
        for child in names(&inner, rel)? {
            remove(&inner, &child, &format!("{rel}/{child}"))?;
        }
        in_folder(dir, || rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR))
            .map_err(|e| err(rel, e))
    } else {
        in_folder(dir, || rustix::fs::unlinkat(dir, name, AtFlags::empty()))
            .map_err(|e| err(rel, e))
    }
}

/// The names in folder `dir` (`.` and `..` aside).
fn names(dir: &OwnedFd, rel: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let listing = rustix::fs::Dir::read_from(dir).map_err(|e| err(rel, e))?;
    for entry in listing {
        let entry = entry.map_err(|e| err(rel, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "." && name != ".." {
            out.push(name);
        }
    }
    Ok(out)
}

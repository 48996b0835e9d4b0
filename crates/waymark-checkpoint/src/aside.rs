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
                measure(dir, name, rel, self.copy_left)?;
                let mut budget = Copying {
                    bytes: self.copy_left,
                    copied: Vec::new(),
                };
                copy(dir, name, aside, &to, rel, "", &mut budget)?;
                self.copy_left = budget.bytes;
                remove_copied(dir, name, rel, &budget.copied)?;
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

/// What one copy aside may still use, and what it copied: each entry's path below the
/// entry copied (`""` for itself) and what it was when copied, in the order copied.
struct Copying {
    bytes: u64,
    copied: Vec<(String, Seen)>,
}

/// An entry as the copy saw it before reading it: its inode and its change time (which any
/// write since moves).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Seen {
    ino: u64,
    ctime: (i64, u64),
}

impl Seen {
    fn of(st: &rustix::fs::Stat) -> Seen {
        Seen {
            ino: st.st_ino,
            ctime: (st.st_ctime, st.st_ctime_nsec),
        }
    }
}

/// Copies entry `name` of `from` to `to_name` in `to`: a file's content (read without
/// following a link or waiting on a pipe), a link as a link, a folder with all it holds, at
/// most `depth` folders below (`below` is its path below the entry copied). Anything else (a
/// pipe, a device) is left out of the copy. Held to `budget`, whatever changed since it was
/// measured (a file grown, a folder deepened): past it the copy stops with an error.
fn copy(
    from: &OwnedFd,
    name: &str,
    to: &OwnedFd,
    to_name: &str,
    rel: &str,
    below: &str,
    budget: &mut Copying,
) -> Result<()> {
    let refuse = |why: &str| CheckpointError::Io {
        path: rel.to_string(),
        source: std::io::Error::other(format!(
            "it changed while it was copied aside ({why}): move it out of the workspace yourself, then rewind again"
        )),
    };
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
            use std::io::Read as _;
            let mut limited = std::fs::File::from(src).take(budget.bytes.saturating_add(1));
            let n = std::io::copy(&mut limited, &mut std::fs::File::from(dst))
                .map_err(crate::io(Path::new(rel)))?;
            if n > budget.bytes {
                return Err(refuse("it grew past what one rewind copies"));
            }
            budget.bytes -= n;
        }
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(from, name, Vec::new()).map_err(|e| err(rel, e))?;
            rustix::fs::symlinkat(target.as_c_str(), to, to_name).map_err(|e| err(rel, e))?;
        }
        FileType::Directory => {
            if below.matches('/').count() + 1 > COPY_DEPTH {
                return Err(refuse("it grew deeper than a copy goes"));
            }
            let src = crate::access::open_dir(from, name).map_err(|e| err(rel, e))?;
            rustix::fs::mkdirat(to, to_name, Mode::from_raw_mode(0o700))
                .map_err(|e| err(rel, e))?;
            let dst =
                rustix::fs::openat(to, to_name, DIR, Mode::empty()).map_err(|e| err(rel, e))?;
            budget.copied.push((below.to_string(), Seen::of(&st)));
            for child in names(&src, rel)? {
                if budget.copied.len() > COPY_ENTRIES {
                    return Err(refuse("it grew past what one rewind copies"));
                }
                let deeper = if below.is_empty() {
                    child.clone()
                } else {
                    format!("{below}/{child}")
                };
                copy(
                    &src,
                    &child,
                    &dst,
                    &child,
                    &format!("{rel}/{child}"),
                    &deeper,
                    budget,
                )?;
            }
            return Ok(());
        }
        _ => return Ok(()),
    }
    budget.copied.push((below.to_string(), Seen::of(&st)));
    Ok(())
}

/// Removes what [`copy`] copied of entry `name` of `dir`, and nothing else: the entries it
/// recorded, deepest first, each only if it is still as the copy saw it (a file written
/// since has another change time); a folder only once empty. What came or changed since
/// the copy stays where it is.
fn remove_copied(dir: &OwnedFd, name: &str, rel: &str, copied: &[(String, Seen)]) -> Result<()> {
    for (below, seen) in copied.iter().rev() {
        let (parent, leaf) = match below.rsplit_once('/') {
            Some((p, l)) => (Some(p), l),
            None if below.is_empty() => (None, name),
            None => (Some(""), below.as_str()),
        };
        let folder = match parent {
            None => None,
            Some(p) => {
                let mut fd = crate::access::open_dir(dir, name).map_err(|e| err(rel, e))?;
                for step in p.split('/').filter(|s| !s.is_empty()) {
                    fd = crate::access::open_dir(&fd, step).map_err(|e| err(rel, e))?;
                }
                Some(fd)
            }
        };
        let at = folder.as_ref().unwrap_or(dir);
        let Ok(st) = rustix::fs::statat(at, leaf, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let is_dir = FileType::from_raw_mode(st.st_mode) == FileType::Directory;
        // A folder's time moves as entries come and go; its removal fails if any came.
        if st.st_ino != seen.ino || (!is_dir && Seen::of(&st) != *seen) {
            continue;
        }
        let flags = if is_dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        match in_folder(at, || rustix::fs::unlinkat(at, leaf, flags)) {
            // A folder something came into since: it stays, with what came.
            Ok(()) | Err(Errno::NOTEMPTY) | Err(Errno::EXIST) => {}
            Err(e) => return Err(err(rel, e)),
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn open(p: &Path) -> OwnedFd {
        rustix::fs::openat(rustix::fs::CWD, p, DIR, Mode::empty()).unwrap()
    }

    /// Sixth red-team: what was measured was then copied without bound (a file grown since,
    /// a folder deepened), and everything found afterwards was removed, what came after the
    /// copy too. The copy holds to its budget whatever it finds, and only what it copied is
    /// removed.
    #[test]
    fn a_copy_aside_holds_to_its_budget_and_removes_only_what_it_copied() {
        let t = tempfile::tempdir().unwrap();
        let (ws, out) = (t.path().join("ws"), t.path().join("out"));
        std::fs::create_dir_all(ws.join("d/inner")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(ws.join("d/a.txt"), "a".repeat(100)).unwrap();
        std::fs::write(ws.join("d/inner/b.txt"), "b".repeat(100)).unwrap();
        let (w, o) = (open(&ws), open(&out));
        // A budget smaller than what is there now (it grew since it was measured).
        let mut small = Copying {
            bytes: 150,
            copied: Vec::new(),
        };
        let e = copy(&w, "d", &o, "000001", "d", "", &mut small).unwrap_err();
        assert!(e.to_string().contains("grew"), "{e}");
        assert!(ws.join("d/a.txt").exists() && ws.join("d/inner/b.txt").exists());
        // Within budget: copied; then something comes into the folder before the removal.
        let mut budget = Copying {
            bytes: 1_000,
            copied: Vec::new(),
        };
        copy(&w, "d", &o, "000002", "d", "", &mut budget).unwrap();
        assert_eq!(budget.bytes, 800);
        std::fs::write(ws.join("d/inner/late.txt"), "late").unwrap();
        // And a copied file is written again in place before the removal.
        std::fs::write(ws.join("d/a.txt"), "rewritten").unwrap();
        remove_copied(&w, "d", "d", &budget.copied).unwrap();
        assert!(!ws.join("d/inner/b.txt").exists());
        assert_eq!(
            std::fs::read_to_string(ws.join("d/a.txt")).unwrap(),
            "rewritten",
            "a file written since its copy stays"
        );
        assert_eq!(
            std::fs::read_to_string(ws.join("d/inner/late.txt")).unwrap(),
            "late",
            "what came after the copy stays"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("000002/inner/b.txt")).unwrap(),
            "b".repeat(100)
        );
    }
}

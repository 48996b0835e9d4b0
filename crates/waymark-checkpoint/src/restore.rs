//! Putting a workspace back as a checkpoint has it (G-29). Only what differs is touched. Every
//! change is made relative to an open folder (`openat`, `mkdirat`, `unlinkat`, `renameat`,
//! `symlinkat`), each folder opened without following a link, so a folder swapped for a link
//! at any moment, even during the restore, cannot send a write outside the workspace. What
//! is in the way is moved aside into the store, never deleted.

use crate::{CheckpointError, Result, Store, diff};
use gix_hash::ObjectId;
use gix_object::tree::EntryKind;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// How many bytes of the files a restore brings back are read before it changes anything;
/// the others are checked to be in the store, then read one at a time.
const PRELOAD_MAX: u64 = if cfg!(test) {
    64 * 1024
} else {
    256 * 1024 * 1024
};

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Paths written (files, links, empty folders).
    pub written: Vec<String>,
    /// Paths removed (they came after the checkpoint).
    pub removed: Vec<String>,
    /// Paths the target left out (ignored by its own rules, too big, in a folder it could
    /// not list), kept as they are though the checkpoint does not hold them.
    pub kept: Vec<String>,
    /// The folder things in the way were moved into, if anything was: each under a number,
    /// its path in the folder's `manifest`.
    pub moved_aside: Option<PathBuf>,
}

/// A folder opened for the changes below it: never through a link.
const DIR: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

fn err(what: &str, e: rustix::io::Errno) -> CheckpointError {
    CheckpointError::Io {
        path: what.to_string(),
        source: e.into(),
    }
}

/// What is at `name` in `dir` (a link is a link), or `None`.
fn kind_at(dir: &OwnedFd, name: &str) -> std::result::Result<Option<FileType>, rustix::io::Errno> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The workspace, held open, and where things in the way go.
struct Fs<'a> {
    root: OwnedFd,
    /// The store's folder, and the aside folder's name in its `aside/`.
    store: &'a Path,
    aside: String,
    aside_fd: Option<OwnedFd>,
    moved: usize,
}

/// Folder `name` of `dir`, made if missing, opened without following a link.
fn sub(dir: &OwnedFd, name: &str, shown: &Path) -> Result<OwnedFd> {
    match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(err(&shown.display().to_string(), e)),
    }
    rustix::fs::openat(dir, name, DIR, Mode::empty())
        .map_err(|e| err(&shown.display().to_string(), e))
}

impl Fs<'_> {
    /// The folder things in the way go to: `aside/<time>` in the store, each step opened
    /// without following a link (a link planted there sends nothing elsewhere).
    fn aside_dir(&self) -> PathBuf {
        self.store.join("aside").join(&self.aside)
    }

    /// Moves `name` of `dir` (the path `rel`) aside into the store, under a number; the
    /// folder's `manifest` says which path each number was.
    fn move_aside(&mut self, dir: &OwnedFd, name: &str, rel: &str) -> Result<()> {
        if self.aside_fd.is_none() {
            let store = rustix::fs::openat(rustix::fs::CWD, self.store, DIR, Mode::empty())
                .map_err(|e| err(&self.store.display().to_string(), e))?;
            let all = sub(&store, "aside", &self.store.join("aside"))?;
            self.aside_fd = Some(sub(&all, &self.aside.clone(), &self.aside_dir())?);
        }
        let Some(aside) = &self.aside_fd else {
            return Ok(());
        };
        self.moved += 1;
        let to = format!("{:06}", self.moved);
        rustix::fs::renameat(dir, name, aside, to.as_str()).map_err(|e| match e {
            rustix::io::Errno::XDEV => CheckpointError::Invalid(format!(
                "{rel} is in the way and cannot be moved aside into {}: it is on another file system (keep the data folder on the workspace's)",
                self.aside_dir().display()
            )),
            e => err(rel, e),
        })?;
        use std::io::Write as _;
        let manifest = rustix::fs::openat(
            aside,
            "manifest",
            OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| err(&self.aside_dir().join("manifest").display().to_string(), e))?;
        std::fs::File::from(manifest)
            .write_all(format!("{to}\t{}\n", rel.replace(['\n', '\t'], " ")).as_bytes())
            .map_err(crate::io(&self.aside_dir()))
    }

    /// Folder `parts` below the root, each made a real folder (whatever stood in its place
    /// moved aside), opened.
    fn folder(&mut self, parts: &[&str]) -> Result<OwnedFd> {
        let mut dir =
            rustix::fs::openat(&self.root, ".", DIR, Mode::empty()).map_err(|e| err(".", e))?;
        for (i, p) in parts.iter().enumerate() {
            let rel = parts[..=i].join("/");
            match rustix::fs::openat(&dir, *p, DIR, Mode::empty()) {
                Ok(next) => dir = next,
                Err(rustix::io::Errno::NOENT) => {
                    rustix::fs::mkdirat(&dir, *p, Mode::from_raw_mode(0o755))
                        .map_err(|e| err(&rel, e))?;
                    dir = rustix::fs::openat(&dir, *p, DIR, Mode::empty())
                        .map_err(|e| err(&rel, e))?;
                }
                // A link (to anywhere) or a file where a folder belongs.
                Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                    self.move_aside(&dir, p, &rel)?;
                    rustix::fs::mkdirat(&dir, *p, Mode::from_raw_mode(0o755))
                        .map_err(|e| err(&rel, e))?;
                    dir = rustix::fs::openat(&dir, *p, DIR, Mode::empty())
                        .map_err(|e| err(&rel, e))?;
                }
                Err(e) => return Err(err(&rel, e)),
            }
        }
        Ok(dir)
    }

    /// Folder `parts` below the root if every one of them is a real folder; else `None`
    /// (what is there is not what the checkpoint saw, and nothing is removed through it).
    fn existing(&self, parts: &[&str]) -> Option<OwnedFd> {
        let mut dir = rustix::fs::openat(&self.root, ".", DIR, Mode::empty()).ok()?;
        for p in parts {
            dir = rustix::fs::openat(&dir, *p, DIR, Mode::empty()).ok()?;
        }
        Some(dir)
    }
}

/// `path` split into its folders and its name.
fn split(path: &str) -> Option<(Vec<&str>, &str)> {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop()?;
    Some((parts, name))
}

impl Store {
    /// Puts `workspace` back as checkpoint `target` has it, from its state in `current` (a
    /// checkpoint just taken of it). Paths left out of either are not touched: what the
    /// target left out (`left_out`: the paths it noted, files or folders; and what its own
    /// ignore files ignore) stays even when it came since. Something a restored path would
    /// replace and `current` does not hold is moved aside.
    pub fn restore(
        &self,
        workspace: &Path,
        current: &ObjectId,
        target: &ObjectId,
        left_out: &[String],
    ) -> Result<Restored> {
        let root = rustix::fs::openat(rustix::fs::CWD, workspace, DIR, Mode::empty())
            .map_err(|e| err(&workspace.display().to_string(), e))?;
        let now = self.files(current)?;
        let want = self.files(target)?;
        let keeper = crate::keep::Keeper::of(self, &want, left_out)?;
        let aside = format!(
            "{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let mut fs = Fs {
            root,
            store: self.dir(),
            aside,
            aside_fd: None,
            moved: 0,
        };
        let mut done = Restored::default();
        // Read every object first: a damaged store fails before anything changes. Past
        // `PRELOAD_MAX` bytes the rest are only looked up now (there, and blobs) and read
        // when their turn comes, so memory stays bounded however much comes back.
        let mut contents = Vec::new();
        let mut held = 0u64;
        for change in diff(&now, &want) {
            if let crate::Change::Added(p) | crate::Change::Modified(p) = &change
                && let Some(e) = want.get(p)
            {
                let data = match e.kind {
                    EntryKind::Tree => Some(Vec::new()),
                    _ if held < PRELOAD_MAX => {
                        let data = self.read(&e.id, gix_object::Kind::Blob)?;
                        held += data.len() as u64;
                        Some(data)
                    }
                    _ => {
                        self.check_blob(&e.id)?;
                        None
                    }
                };
                contents.push((p.clone(), *e, data));
            }
        }
        // What came since goes, deepest first, and only through real folders; what the
        // target left out stays.
        let mut gone: Vec<&String> = Vec::new();
        for p in now.keys().filter(|p| !want.contains_key(*p)) {
            if keeper.keeps(p) {
                done.kept.push(p.clone());
            } else {
                gone.push(p);
            }
        }
        gone.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        for p in gone {
            let Some((parents, name)) = split(p) else {
                continue;
            };
            let Some(dir) = fs.existing(&parents) else {
                continue;
            };
            match kind_at(&dir, name).map_err(|e| err(p, e))? {
                // An empty folder of the checkpoint: removed only if still empty.
                Some(FileType::Directory) => {
                    let _ = rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR);
                }
                Some(_) => {
                    rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(|e| err(p, e))?
                }
                None => {}
            }
            done.removed.push(p.clone());
        }
        for (p, e, data) in contents {
            let Some((parents, name)) = split(&p) else {
                continue;
            };
            let data = match data {
                Some(d) => d,
                None => self.read(&e.id, gix_object::Kind::Blob)?,
            };
            let dir = fs.folder(&parents)?;
            let there = kind_at(&dir, name).map_err(|e| err(&p, e))?;
            // Something there that the checkpoint just taken does not hold (too big,
            // ignored, or come since) is not the checkpoint's to replace: it goes aside.
            if e.kind != EntryKind::Tree && there.is_some() && !now.contains_key(&p) {
                fs.move_aside(&dir, name, &p)?;
            }
            let there = kind_at(&dir, name).map_err(|e| err(&p, e))?;
            match e.kind {
                EntryKind::Tree => match there {
                    Some(FileType::Directory) => {}
                    Some(_) => {
                        fs.move_aside(&dir, name, &p)?;
                        rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755))
                            .map_err(|e| err(&p, e))?;
                    }
                    None => rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755))
                        .map_err(|e| err(&p, e))?,
                },
                EntryKind::Link => {
                    match there {
                        Some(FileType::Directory) => fs.move_aside(&dir, name, &p)?,
                        Some(_) => rustix::fs::unlinkat(&dir, name, AtFlags::empty())
                            .map_err(|e| err(&p, e))?,
                        None => {}
                    }
                    let target: &std::ffi::OsStr = std::os::unix::ffi::OsStrExt::from_bytes(&data);
                    rustix::fs::symlinkat(target, &dir, name).map_err(|e| err(&p, e))?;
                }
                kind => {
                    // A folder where the checkpoint has a file goes aside, whole.
                    if there == Some(FileType::Directory) {
                        fs.move_aside(&dir, name, &p)?;
                    }
                    write_file(&dir, name, &p, &data, kind == EntryKind::BlobExecutable)?;
                }
            }
            done.written.push(p);
        }
        // Folders the checkpoint did not have, left empty by the removals, go too.
        let kept: BTreeSet<&str> = want
            .keys()
            .flat_map(|p| {
                p.match_indices('/')
                    .map(move |(i, _)| &p[..i])
                    .chain(std::iter::once(p.as_str()))
            })
            .collect();
        let mut folders: Vec<String> = now
            .keys()
            .flat_map(|p| p.match_indices('/').map(move |(i, _)| p[..i].to_string()))
            .filter(|d| !kept.contains(d.as_str()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        folders.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        for d in folders {
            if let Some((parents, name)) = split(&d)
                && let Some(dir) = fs.existing(&parents)
            {
                let _ = rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR);
            }
        }
        done.moved_aside = (fs.moved > 0).then(|| fs.aside_dir());
        Ok(done)
    }
}

/// Writes `data` as file `name` of the open folder `dir`: into a new file beside it (a
/// name no one uses, created exclusively, never through a link), then renamed over whatever
/// is there (a link there is replaced, never followed).
fn write_file(dir: &OwnedFd, name: &str, rel: &str, data: &[u8], executable: bool) -> Result<()> {
    use std::io::Write as _;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = format!(".waymark-restore-{}-{n}", std::process::id());
    let mode = Mode::from_raw_mode(if executable { 0o755 } else { 0o644 });
    let fd = rustix::fs::openat(
        dir,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )
    .map_err(|e| err(rel, e))?;
    // The umask may have narrowed it.
    rustix::fs::fchmod(&fd, mode).map_err(|e| err(rel, e))?;
    let mut f = std::fs::File::from(fd);
    let written = f.write_all(data);
    drop(f);
    if let Err(e) = written {
        let _ = rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
        return Err(CheckpointError::Io {
            path: rel.to_string(),
            source: e,
        });
    }
    rustix::fs::renameat(dir, tmp.as_str(), dir, name).map_err(|e| err(rel, e))
}

//! Putting a workspace back as a checkpoint has it (G-29). Only what differs is touched. Every
//! change is made relative to an open folder (`openat`, `mkdirat`, `unlinkat`, `renameat`,
//! `symlinkat`), each folder opened without following a link, so a folder swapped for a link
//! at any moment, even during the restore, cannot send a write outside the workspace. What
//! is in the way is moved aside into the store, never deleted.

use crate::access::{DIR, in_folder, open_dir};
use crate::modes::Kind as ModeKind;
use crate::{CheckpointError, Modes, Point, Result, Store, diff};
use gix_object::tree::EntryKind;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::collections::{BTreeMap, BTreeSet};
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
    /// The target's mode record, when it has one.
    modes: Option<&'a Modes>,
}

/// The bits a file gets: exactly those the checkpoint recorded, or (a checkpoint from before
/// modes were recorded) the default left to the user's umask, never wider than `cap` (what the
/// file it replaces had).
#[derive(Debug, Clone, Copy)]
enum Bits {
    Exact(u32),
    Umask { base: u32, cap: u32 },
}

impl Bits {
    /// The mode to create with (the kernel narrows it by the umask).
    fn create(self) -> u32 {
        match self {
            Bits::Exact(b) => b,
            Bits::Umask { base, cap } => base & cap,
        }
    }
}

/// Makes folder `name` of `dir` (the path `rel`). With a mode record, it is made the user's
/// own to fill (0700), and gets its recorded bits once everything is in (a read-only folder
/// made read-only first could not be filled); without one, it gets the umask's default.
fn make_dir(dir: &OwnedFd, name: &str, rel: &str, modes: Option<&Modes>) -> Result<()> {
    let bits = if modes.is_some() { 0o700 } else { 0o777 };
    in_folder(dir, || {
        rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(bits))
    })
    .map_err(|e| err(rel, e))?;
    if modes.is_some() {
        // The umask may have taken the owner's own bits.
        let fd = open_dir(dir, name).map_err(|e| err(rel, e))?;
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700)).map_err(|e| err(rel, e))?;
    }
    Ok(())
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
        in_folder(dir, || rustix::fs::renameat(dir, name, aside, to.as_str())).map_err(|e| match e {
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
            match open_dir(&dir, p) {
                Ok(next) => dir = next,
                Err(rustix::io::Errno::NOENT) => {
                    make_dir(&dir, p, &rel, self.modes)?;
                    dir = open_dir(&dir, p).map_err(|e| err(&rel, e))?;
                }
                // A link (to anywhere) or a file where a folder belongs.
                Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                    self.move_aside(&dir, p, &rel)?;
                    make_dir(&dir, p, &rel, self.modes)?;
                    dir = open_dir(&dir, p).map_err(|e| err(&rel, e))?;
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
            dir = open_dir(&dir, p).ok()?;
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
    /// replace and `current` does not hold is moved aside. Files and folders get the
    /// permission bits the target recorded, those whose content is the same included; a
    /// target without a record gives what it writes the user's umask, never wider than what
    /// it replaces.
    pub fn restore(
        &self,
        workspace: &Path,
        current: &Point,
        target: &Point,
        left_out: &[String],
    ) -> Result<Restored> {
        let root = rustix::fs::openat(rustix::fs::CWD, workspace, DIR, Mode::empty())
            .map_err(|e| err(&workspace.display().to_string(), e))?;
        let now = self.files(&current.tree)?;
        let want = self.files(&target.tree)?;
        // The current checkpoint's record is read too: a damaged one stops here.
        current.modes.map(|m| self.modes(&m)).transpose()?;
        let want_modes = target.modes.map(|m| self.modes(&m)).transpose()?;
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
            modes: want_modes.as_ref(),
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
                    let _ = in_folder(&dir, || {
                        rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR)
                    });
                }
                Some(_) => in_folder(&dir, || rustix::fs::unlinkat(&dir, name, AtFlags::empty()))
                    .map_err(|e| err(p, e))?,
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
            // Without a record, never wider than the file it replaces.
            let cap = match there {
                Some(FileType::RegularFile) => {
                    rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
                        .map(|st| st.st_mode & 0o777)
                        .unwrap_or(0o777)
                }
                _ => 0o777,
            };
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
                        make_dir(&dir, name, &p, fs.modes)?;
                    }
                    None => make_dir(&dir, name, &p, fs.modes)?,
                },
                EntryKind::Link => {
                    match there {
                        Some(FileType::Directory) => fs.move_aside(&dir, name, &p)?,
                        Some(_) => {
                            in_folder(&dir, || rustix::fs::unlinkat(&dir, name, AtFlags::empty()))
                                .map_err(|e| err(&p, e))?
                        }
                        None => {}
                    }
                    let target: &std::ffi::OsStr = std::os::unix::ffi::OsStrExt::from_bytes(&data);
                    in_folder(&dir, || rustix::fs::symlinkat(target, &dir, name))
                        .map_err(|e| err(&p, e))?;
                }
                kind => {
                    // A folder where the checkpoint has a file goes aside, whole.
                    if there == Some(FileType::Directory) {
                        fs.move_aside(&dir, name, &p)?;
                    }
                    let executable = kind == EntryKind::BlobExecutable;
                    let bits = match fs.modes {
                        Some(m) => Bits::Exact(m.bits(
                            &p,
                            if executable {
                                ModeKind::Executable
                            } else {
                                ModeKind::File
                            },
                        )),
                        None => Bits::Umask {
                            base: if executable { 0o777 } else { 0o666 },
                            cap,
                        },
                    };
                    write_file(&dir, name, &p, &data, bits)?;
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
                let _ = in_folder(&dir, || {
                    rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR)
                });
            }
        }
        // Every file and folder of the target ends with the bits it recorded, whatever they
        // are on disk now: opened up, set-id, or changed with the content the same.
        if let Some(m) = &want_modes {
            self.settle_bits(&fs, &want, m)?;
        }
        done.moved_aside = (fs.moved > 0).then(|| fs.aside_dir());
        Ok(done)
    }
}

/// Writes `data` as file `name` of the open folder `dir`: into a new file beside it (a
/// name no one uses, created exclusively, never through a link, and never wider than its
/// `bits`), then renamed over whatever is there (a link there is replaced, never followed).
fn write_file(dir: &OwnedFd, name: &str, rel: &str, data: &[u8], bits: Bits) -> Result<()> {
    use std::io::Write as _;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = format!(".waymark-restore-{}-{n}", std::process::id());
    let fd = in_folder(dir, || {
        rustix::fs::openat(
            dir,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(bits.create()),
        )
    })
    .map_err(|e| err(rel, e))?;
    // The umask may have narrowed recorded bits: set exactly those. Without a record, the
    // umask's narrowing is the point.
    if let Bits::Exact(b) = bits {
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(b)).map_err(|e| err(rel, e))?;
    }
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
    in_folder(dir, || rustix::fs::renameat(dir, tmp.as_str(), dir, name)).map_err(|e| err(rel, e))
}

impl Store {
    /// Gives every file and folder of `want` (and the workspace folder itself) the bits record
    /// `modes` has for it, comparing with what is on disk: files first (a file linked to
    /// another name, inside or outside the workspace, is written again as a file of its own
    /// rather than changed through the link), then folders from the deepest up, so a folder
    /// recorded read-only is closed only once everything below it is in place.
    fn settle_bits(
        &self,
        fs: &Fs<'_>,
        want: &BTreeMap<String, crate::Entry>,
        modes: &Modes,
    ) -> Result<()> {
        let mut folders: BTreeSet<String> = BTreeSet::new();
        for (p, e) in want {
            folders.extend(p.match_indices('/').map(|(i, _)| p[..i].to_string()));
            let kind = match e.kind {
                EntryKind::Tree => {
                    folders.insert(p.clone());
                    continue;
                }
                EntryKind::Link | EntryKind::Commit => continue,
                EntryKind::BlobExecutable => ModeKind::Executable,
                EntryKind::Blob => ModeKind::File,
            };
            let Some((parents, name)) = split(p) else {
                continue;
            };
            let Some(dir) = fs.existing(&parents) else {
                continue;
            };
            let Some(st) = crate::access::stat_at(&dir, name).map_err(|e| err(p, e))? else {
                continue;
            };
            let bits = modes.bits(p, kind);
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
                || st.st_mode & 0o7777 == bits
            {
                continue;
            }
            if st.st_nlink > 1 {
                let data = self.read(&e.id, gix_object::Kind::Blob)?;
                write_file(&dir, name, p, &data, Bits::Exact(bits))?;
            } else {
                crate::access::set_bits(&dir, name, false, bits).map_err(|e| err(p, e))?;
            }
        }
        let mut folders: Vec<String> = folders.into_iter().collect();
        folders.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        for d in folders {
            if let Some((parents, name)) = split(&d)
                && let Some(dir) = fs.existing(&parents)
            {
                crate::access::set_bits(&dir, name, true, modes.bits(&d, ModeKind::Folder))
                    .map_err(|e| err(&d, e))?;
            }
        }
        let root = modes.bits(".", ModeKind::Folder);
        let st = rustix::fs::fstat(&fs.root).map_err(|e| err(".", e))?;
        if st.st_mode & 0o7777 != root {
            rustix::fs::fchmod(&fs.root, Mode::from_raw_mode(root)).map_err(|e| err(".", e))?;
        }
        Ok(())
    }
}

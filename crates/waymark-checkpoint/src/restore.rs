//! Putting a workspace back as a checkpoint has it (G-29). Only what differs is touched. Every
//! change is made relative to an open folder (`openat`, `mkdirat`, `unlinkat`, `renameat`,
//! `symlinkat`), each folder opened without following a link, so a folder swapped for a link
//! at any moment, even during the restore, cannot send a write outside the workspace; the
//! workspace folder itself is the one held open since the rewind checked it. What is in the
//! way is moved aside into the store, never deleted, and so is a file that changed since the
//! undo checkpoint listed it (a process still writing it).

use crate::access::{DIR, Set, in_folder, open_dir};
use crate::aside::Aside;
use crate::modes::Kind as ModeKind;
use crate::{CheckpointError, Modes, Point, Result, Root, Store, diff};
use gix_object::tree::EntryKind;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// How many bytes of the files a restore brings back are read before it changes anything;
/// the others are checked to be in the store, then read one at a time.
const PRELOAD_MAX: u64 = if cfg!(test) {
    64 * 1024
} else {
    256 * 1024 * 1024
};

/// What a restore is told besides the two checkpoints.
#[derive(Debug, Clone, Default)]
pub struct RestoreOptions<'a> {
    /// The paths the target noted as left out (too big, unreadable, a folder it could not
    /// list): they stay, even when they came since.
    pub left_out: &'a [String],
    /// The paths the undo checkpoint (`current`) noted as left out: what of them the target
    /// neither holds nor leaves out came since, and goes aside.
    pub current_left_out: &'a [String],
    /// When the target was taken (ms since the epoch): an entry changed since then has the
    /// access control lists and file capabilities it carries taken off (a checkpoint records
    /// none). 0 takes them off every entry the restore settles.
    pub since_ms: i64,
}

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
    aside: Aside<'a>,
    /// The target's mode record, when it has one.
    modes: Option<&'a Modes>,
    /// The regular files as the undo checkpoint listed them.
    listed: crate::cache::Cache,
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
/// made read-only first could not be filled); without one, it gets the umask's default. It
/// carries no access list inherited from its folder (what the checkpoint recorded is its bits).
fn make_dir(dir: &OwnedFd, name: &str, rel: &str, modes: Option<&Modes>) -> Result<()> {
    let bits = if modes.is_some() { 0o700 } else { 0o777 };
    in_folder(dir, || {
        rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(bits))
    })
    .map_err(|e| err(rel, e))?;
    let fd = open_dir(dir, name).map_err(|e| err(rel, e))?;
    crate::access::strip_extras(&fd).map_err(|e| err(rel, e))?;
    if modes.is_some() {
        // The umask may have taken the owner's own bits.
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700)).map_err(|e| err(rel, e))?;
    }
    Ok(())
}

impl Fs<'_> {
    fn move_aside(&mut self, dir: &OwnedFd, name: &str, rel: &str) -> Result<()> {
        self.aside.put(dir, name, rel)
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

    /// Whether regular file `name` of `dir` (the path `rel`) is still as the undo checkpoint
    /// listed it (same inode, size, times and mode, and where those cannot vouch for it, a
    /// file written through a memory map, the same content). One that changed since (a
    /// process of the agent's still writing it) is not the checkpoint's to remove or replace.
    fn as_listed(&self, dir: &OwnedFd, name: &str, rel: &str) -> bool {
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            return false;
        };
        let stat = crate::cache::Stat::of(&st);
        self.listed.unchanged(rel, &stat, st.st_dev, || {
            let fd = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()?;
            let mut data = Vec::new();
            use std::io::Read as _;
            std::fs::File::from(fd)
                .take((st.st_size as u64).saturating_add(1))
                .read_to_end(&mut data)
                .ok()?;
            Some(data)
        })
    }
}

/// `path` split into its folders and its name.
fn split(path: &str) -> Option<(Vec<&str>, &str)> {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop()?;
    Some((parts, name))
}

/// The user's umask, as the kernel reports it (`/proc/self/status`); 022 when it cannot say.
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

impl Store {
    /// Puts `workspace` back as checkpoint `target` has it, from its state in `current` (a
    /// checkpoint just taken of it): [`Store::restore_at`] on the folder at `workspace`, with
    /// `left_out` the paths the target noted.
    pub fn restore(
        &self,
        workspace: &Path,
        current: &Point,
        target: &Point,
        left_out: &[String],
    ) -> Result<Restored> {
        let root = Root::open(workspace)?;
        let opts = RestoreOptions {
            left_out,
            ..RestoreOptions::default()
        };
        self.restore_at(&root, current, target, &opts)
    }

    /// Puts the workspace held open as `root` back as checkpoint `target` has it, from its
    /// state in `current` (a checkpoint just taken of it, through the same handle). Paths
    /// left out of either are not touched: what the target left out (`opts.left_out`, and
    /// what its own ignore files ignore) stays even when it came since; what `current` left
    /// out that the target does not hold goes aside. Something a restored path would replace
    /// and `current` does not hold, or that changed since `current` listed it, is moved aside.
    /// Files and folders get the permission bits the target recorded, those whose content is
    /// the same included, and lose what was added since to widen them (access lists, file
    /// capabilities); a target without a record gives what it writes the user's umask,
    /// never wider than what it replaces. Every object needed, the content of files linked
    /// elsewhere included, is read before anything changes.
    pub fn restore_at(
        &self,
        root: &Root,
        current: &Point,
        target: &Point,
        opts: &RestoreOptions<'_>,
    ) -> Result<Restored> {
        let now = self.files(&current.tree)?;
        let want = self.files(&target.tree)?;
        // The current checkpoint's record is read too: a damaged one stops here.
        current.modes.map(|m| self.modes(&m)).transpose()?;
        let want_modes = target.modes.map(|m| self.modes(&m)).transpose()?;
        let keeper = crate::keep::Keeper::of(self, &want, opts.left_out)?;
        let mut fs = Fs {
            root: root.handle()?,
            aside: Aside::new(self.dir()),
            modes: want_modes.as_ref(),
            listed: self.listed(),
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
        // Files the restore leaves as they are but that have another name (a hard link):
        // they are written again as files of their own at the end, from the store, so their
        // content is read now.
        let linked = if want_modes.is_some() {
            self.linked_contents(&fs, &now, &want)?
        } else {
            HashMap::new()
        };
        // Folders the target needs: a path of `current` that is one of them is never removed
        // (it would come back a new folder, without what it carried).
        let needed: BTreeSet<&str> = want
            .keys()
            .flat_map(|p| {
                p.match_indices('/')
                    .map(move |(i, _)| &p[..i])
                    .chain(std::iter::once(p.as_str()))
            })
            .collect();
        // What came since goes, deepest first, and only through real folders; what the
        // target left out stays.
        let mut gone: Vec<&String> = Vec::new();
        for p in now
            .keys()
            .filter(|p| !want.contains_key(*p) && !needed.contains(p.as_str()))
        {
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
                // A file written since the undo checkpoint listed it: aside, not deleted.
                Some(FileType::RegularFile) if !fs.as_listed(&dir, name, p) => {
                    fs.move_aside(&dir, name, p)?;
                }
                Some(_) => in_folder(&dir, || rustix::fs::unlinkat(&dir, name, AtFlags::empty()))
                    .map_err(|e| err(p, e))?,
                None => {}
            }
            done.removed.push(p.clone());
        }
        // What the undo checkpoint could not take (unreadable, too big, a folder it could not
        // list) came since unless the target holds or leaves it out: it goes aside.
        for p in opts.current_left_out {
            // A folder it could not list goes whole, even one the target needs: what is in it
            // is not known (the target's files in it are written again).
            if p.is_empty() || want.contains_key(p) || keeper.keeps(p) {
                continue;
            }
            let Some((parents, name)) = split(p) else {
                continue;
            };
            if let Some(dir) = fs.existing(&parents)
                && kind_at(&dir, name).map_err(|e| err(p, e))?.is_some()
            {
                fs.move_aside(&dir, name, p)?;
                done.removed.push(p.clone());
            }
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
            // ignored, or come since), or a file changed since it was listed, is not the
            // checkpoint's to replace: it goes aside.
            if e.kind != EntryKind::Tree
                && there.is_some()
                && (!now.contains_key(&p)
                    || (there == Some(FileType::RegularFile) && !fs.as_listed(&dir, name, &p)))
            {
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
        let mut folders: Vec<String> = now
            .keys()
            .flat_map(|p| p.match_indices('/').map(move |(i, _)| p[..i].to_string()))
            .filter(|d| !needed.contains(d.as_str()))
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
            self.settle_bits(&fs, &want, m, &linked, opts.since_ms)?;
        }
        done.moved_aside = fs.aside.used();
        Ok(done)
    }

    /// The content, read from the store now, of each file of `want` the restore leaves as it
    /// is (the same in `now`) that has another name on disk: every one is read (a damaged
    /// object stops the restore before anything changes), and kept up to `PRELOAD_MAX` bytes
    /// in all; the rest are read again when their turn comes, so memory stays bounded
    /// however many such files there are.
    fn linked_contents(
        &self,
        fs: &Fs<'_>,
        now: &BTreeMap<String, crate::Entry>,
        want: &BTreeMap<String, crate::Entry>,
    ) -> Result<HashMap<String, Vec<u8>>> {
        let mut out = HashMap::new();
        let mut held = 0u64;
        for (p, e) in want {
            if !matches!(e.kind, EntryKind::Blob | EntryKind::BlobExecutable)
                || now.get(p) != Some(e)
            {
                continue;
            }
            let Some((parents, name)) = split(p) else {
                continue;
            };
            let Some(dir) = fs.existing(&parents) else {
                continue;
            };
            if let Some(st) = crate::access::stat_at(&dir, name).map_err(|e| err(p, e))?
                && FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                && st.st_nlink > 1
            {
                let data = self.read(&e.id, gix_object::Kind::Blob)?;
                held = held.saturating_add(data.len() as u64);
                if held <= PRELOAD_MAX {
                    out.insert(p.clone(), data);
                }
            }
        }
        Ok(out)
    }
}

/// Writes `data` as file `name` of the open folder `dir`: into a new file beside it (a
/// random name no one uses, created exclusively, never through a link, never wider than its
/// `bits`, and carrying no access list inherited from the folder), then renamed over whatever
/// is there (a link there is replaced, never followed).
fn write_file(dir: &OwnedFd, name: &str, rel: &str, data: &[u8], bits: Bits) -> Result<()> {
    use std::io::Write as _;
    let mut tries = 0;
    let (tmp, fd) = loop {
        let tmp = format!(".waymark-restore-{:016x}", fastrand::u64(..));
        match in_folder(dir, || {
            rustix::fs::openat(
                dir,
                tmp.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(bits.create()),
            )
        }) {
            Ok(fd) => break (tmp, fd),
            // A name taken (by anything: a file, a pipe, a link): another.
            Err(rustix::io::Errno::EXIST) if tries < 16 => tries += 1,
            Err(e) => return Err(err(rel, e)),
        }
    };
    let fail = |e: CheckpointError| {
        let _ = rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
        e
    };
    crate::access::strip_extras(&fd).map_err(|e| fail(err(rel, e)))?;
    // The umask may have narrowed recorded bits: set exactly those. Without a record, the
    // umask's narrowing is the point, and it is applied here too: a default access list on
    // the folder would have the kernel skip it.
    let mode = match bits {
        Bits::Exact(b) => b,
        Bits::Umask { base, cap } => base & cap & !umask(),
    };
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode)).map_err(|e| fail(err(rel, e)))?;
    let mut f = std::fs::File::from(fd);
    let written = f.write_all(data);
    drop(f);
    if let Err(e) = written {
        return Err(fail(CheckpointError::Io {
            path: rel.to_string(),
            source: e,
        }));
    }
    in_folder(dir, || rustix::fs::renameat(dir, tmp.as_str(), dir, name)).map_err(|e| err(rel, e))
}

impl Store {
    /// Gives every file and folder of `want` (and the workspace folder itself) the bits record
    /// `modes` has for it, comparing with what is on disk: files first (a file with another
    /// name, inside or outside the workspace, is written again as a file of its own from
    /// `linked`, read before anything changed, rather than changed through the link), then
    /// folders from the deepest up, so a folder recorded read-only is closed only once
    /// everything below it is in place. An entry changed since `since_ms` loses the access
    /// lists and capabilities it carries. What the user may not change (another's folder
    /// holding the workspace) is left as it is.
    fn settle_bits(
        &self,
        fs: &Fs<'_>,
        want: &BTreeMap<String, crate::Entry>,
        modes: &Modes,
        linked: &HashMap<String, Vec<u8>>,
        since_ms: i64,
    ) -> Result<()> {
        // A little before the checkpoint: a clock step must not let a change through.
        let since_ns = i128::from(since_ms.saturating_sub(2_000)) * 1_000_000;
        let fresh = |st: &rustix::fs::Stat| {
            i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec) >= since_ns
        };
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
                || (st.st_mode & 0o7777 == bits && st.st_nlink == 1 && !fresh(&st))
            {
                continue;
            }
            let set = if st.st_nlink > 1 {
                Set::Linked
            } else {
                crate::access::set_bits(&dir, name, false, bits, fresh).map_err(|e| err(p, e))?
            };
            if set == Set::Linked {
                // Linked since the content was read: read it now.
                match linked.get(p) {
                    Some(d) => write_file(&dir, name, p, d, Bits::Exact(bits))?,
                    None => {
                        let data = self.read(&e.id, gix_object::Kind::Blob)?;
                        write_file(&dir, name, p, &data, Bits::Exact(bits))?;
                    }
                }
            }
        }
        let mut folders: Vec<String> = folders.into_iter().collect();
        folders.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        for d in folders {
            if let Some((parents, name)) = split(&d)
                && let Some(dir) = fs.existing(&parents)
            {
                let bits = modes.bits(&d, ModeKind::Folder);
                crate::access::set_bits(&dir, name, true, bits, fresh).map_err(|e| err(&d, e))?;
            }
        }
        let root = modes.bits(".", ModeKind::Folder);
        let st = rustix::fs::fstat(&fs.root).map_err(|e| err(".", e))?;
        crate::access::set_root_bits(&fs.root, &st, root, fresh(&st)).map_err(|e| err(".", e))
    }
}

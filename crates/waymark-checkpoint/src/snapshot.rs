//! Taking a checkpoint: the workspace walked without following links, what the ignore
//! files leave in written as blobs and trees.

use crate::{CheckpointError, Limits, Result, Store, io};
use gix_hash::ObjectId;
use gix_object::tree::{Entry as TreeEntry, EntryKind};
use rustix::fs::FileType;
use std::collections::BTreeMap;
use std::path::Path;

/// A file left out of a checkpoint, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: String,
    pub bytes: u64,
    pub reason: String,
}

/// A checkpoint taken: its tree, the record of its permission bits, and what it left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub tree: ObjectId,
    /// The blob of its [`crate::Modes`].
    pub modes: ObjectId,
    pub skipped: Vec<Skipped>,
}

impl Snapshot {
    /// What a restore needs of it.
    pub fn point(&self) -> crate::Point {
        crate::Point {
            tree: self.tree,
            modes: Some(self.modes),
        }
    }
}

/// A folder being gathered: its files and links, and its folders.
#[derive(Default)]
struct Dir {
    leaves: BTreeMap<String, (EntryKind, ObjectId)>,
    dirs: BTreeMap<String, Dir>,
}

impl Dir {
    /// The folder at workspace-relative path `rel` (`""`: this one), made if missing.
    fn at(&mut self, rel: &str) -> &mut Dir {
        let mut d = self;
        if rel.is_empty() {
            return d;
        }
        for p in rel.split('/') {
            d = d.dirs.entry(p.to_string()).or_default();
        }
        d
    }
}

/// From this many files (as the last checkpoint counted), the workspace is listed on every
/// core; below, starting threads costs more than it saves.
const PARALLEL_FROM: usize = 2000;
/// From this many files to read, they are read and stored on every core.
const PARALLEL_READS: usize = 256;
/// From this many files to read, the new objects go into one pack (`crate::pack`).
const PACK_FROM: usize = 256;

/// The bytes one checkpoint reads to store (files, link targets), shared by its threads and
/// held to `checkpoints.max_total_mb`.
pub(crate) struct Reads {
    max: u64,
    done: std::sync::atomic::AtomicU64,
}

impl Reads {
    pub(crate) fn new(max: u64) -> Reads {
        Reads {
            max,
            done: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn over(&self) -> CheckpointError {
        CheckpointError::TooBig(format!(
            "the workspace's files grew past {} MB to keep while the checkpoint was taken (checkpoints.max_total_mb): leave its big folders out with .gitignore, or raise the setting",
            self.max / (1024 * 1024)
        ))
    }

    /// Reserves `n` bytes to read (or that were read); an error when they would go past the
    /// limit, with nothing reserved.
    fn reserve(&self, n: u64) -> Result<()> {
        use std::sync::atomic::Ordering;
        self.done
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |done| {
                done.checked_add(n).filter(|after| *after <= self.max)
            })
            .map(|_| ())
            .map_err(|_| self.over())
    }

    /// The bytes read (or reserved to read) so far.
    #[cfg(test)]
    pub(crate) fn done(&self) -> u64 {
        self.done.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Gives back `n` reserved bytes that were not read.
    fn give_back(&self, n: u64) {
        self.done.fetch_sub(n, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Why a file is left out of a checkpoint after all.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unread {
    #[error("it cannot be read: {0}")]
    Io(std::io::Error),
    #[error("it changed while the checkpoint was taken")]
    Changed,
    #[error("it grew while the checkpoint was taken (the next one takes it)")]
    Grew,
}

/// The bytes of regular file `path`, which the walk saw as `seen`: opened without following
/// a link or waiting on a pipe, checked to be that same file, and read no further than
/// `limit` (a file that grew past it is left out). `Err` says why it is left out.
fn read_file(
    path: &Path,
    seen: &rustix::fs::Stat,
    limit: u64,
) -> std::result::Result<Vec<u8>, Unread> {
    use std::io::Read as _;
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(Unread::Io)?;
    let m = f.metadata().map_err(Unread::Io)?;
    if !m.is_file() || m.ino() != seen.st_ino || m.dev() != seen.st_dev {
        return Err(Unread::Changed);
    }
    let mut data = Vec::with_capacity(usize::try_from(m.len().min(limit)).unwrap_or(0));
    f.take(limit + 1)
        .read_to_end(&mut data)
        .map_err(Unread::Io)?;
    if data.len() as u64 > limit {
        return Err(Unread::Grew);
    }
    Ok(data)
}

/// The target of the link at `rel` below the folder `root`, read through its folders opened
/// one at a time without following a link, if it is still the entry listed (inode `ino`):
/// a folder swapped for a link to `/proc/self` on the way reads nothing of Waymark's.
fn link_target(root: &std::os::fd::OwnedFd, rel: &str, ino: u64) -> Option<Vec<u8>> {
    let (parents, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let mut dir =
        rustix::fs::openat(root, ".", crate::access::DIR, rustix::fs::Mode::empty()).ok()?;
    for p in parents.split('/').filter(|p| !p.is_empty()) {
        dir = rustix::fs::openat(&dir, p, crate::access::DIR, rustix::fs::Mode::empty()).ok()?;
    }
    let st = rustix::fs::statat(&dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if st.st_ino != ino
        || rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Symlink
    {
        return None;
    }
    rustix::fs::readlinkat(&dir, name, Vec::new())
        .ok()
        .map(|t| t.into_bytes())
}

/// Whether the folder `fd` is on a file system whose pages are never written back (tmpfs,
/// ramfs), or may sit on one (an overlay, as containers use), where a file written through a
/// memory map changes with no new time at all.
pub(crate) fn volatile(fd: &std::os::fd::OwnedFd) -> bool {
    const TMPFS: u64 = 0x0102_1994;
    const RAMFS: u64 = 0x8584_58f6;
    const OVERLAY: u64 = 0x794c_7630;
    rustix::fs::fstatfs(fd).is_ok_and(|s| matches!(s.f_type as u64, TMPFS | RAMFS | OVERLAY))
}

impl Store {
    /// Takes a checkpoint of `workspace` (a folder; a link to one is taken as the folder).
    pub fn snapshot(&self, workspace: &Path, limits: &Limits) -> Result<Snapshot> {
        self.snapshot_of(&crate::Root::open(workspace)?, limits)
    }

    /// Takes a checkpoint of the workspace folder held open as `at`.
    pub fn snapshot_of(&self, at: &crate::Root, limits: &Limits) -> Result<Snapshot> {
        let workspace = at.path.as_path();
        let (root, root_fd) = (at.path.clone(), at.handle()?);
        // Link targets are read from here, one folder at a time.
        let links_from = at.handle()?;
        let mut held = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        self.check_objects(&mut held)?;
        let cache_file = self.dir().join("stat-cache");
        let cache = held.get_or_insert_with(|| crate::cache::Cache::load(&cache_file));
        let root_dev = rustix::fs::fstat(&root_fd).map(|st| st.st_dev).ok();
        cache.set_trusted(root_dev.filter(|_| !volatile(&root_fd)));
        let threads = if cache.len() >= PARALLEL_FROM {
            std::thread::available_parallelism().map_or(2, |n| n.get().min(8))
        } else {
            1
        };
        // The workspace folder's own bits go in the mode record too (as `.`).
        let root_mode = rustix::fs::fstat(&root_fd)
            .map(|st| st.st_mode)
            .map_err(|e| io(workspace)(e.into()))?;
        let listing = crate::walk::list(&root, root_fd, threads, &limits.skip, limits.max_entries);
        if let Some(over) = listing.over {
            let what = match over {
                crate::walk::Over::Kept => format!(
                    "more than {} files, links and folders to keep (checkpoints.max_files)",
                    limits.max_entries
                ),
                crate::walk::Over::LookedAt => format!(
                    "more than {} entries to look at, ignored ones included (ten times checkpoints.max_files)",
                    limits
                        .max_entries
                        .saturating_mul(crate::walk::LOOKED_AT_FACTOR)
                ),
                crate::walk::Over::IgnoreFiles => format!(
                    "ignore files of more than {} MiB in all",
                    crate::walk::MAX_IGNORE_BYTES / (1024 * 1024)
                ),
            };
            return Err(CheckpointError::TooBig(format!(
                "the workspace holds {what}: leave its big folders out with .gitignore, or raise the setting"
            )));
        }
        // Files to keep, link targets, every path's name, and the notes the checkpoint
        // records on what it left out.
        let noted: u64 = listing
            .notes
            .iter()
            .map(|(path, why)| (path.len() + why.len()) as u64)
            .chain(listing.not_utf8.iter().map(|p| p.len() as u64))
            .sum();
        let total: u64 = listing
            .found
            .iter()
            .map(|f| {
                let size = f.stat.st_size as u64;
                let kept = match f.kind() {
                    FileType::RegularFile if size <= limits.max_file_bytes => size,
                    FileType::Symlink => size,
                    _ => 0,
                };
                kept + f.rel.len() as u64
            })
            .sum::<u64>()
            + noted;
        if total > limits.max_total_bytes {
            return Err(CheckpointError::TooBig(format!(
                "the workspace holds {} MB of files to keep, over {} MB (checkpoints.max_total_mb): leave its big folders out with .gitignore, or raise the setting",
                total.div_ceil(1024 * 1024),
                limits.max_total_bytes / (1024 * 1024)
            )));
        }
        let mut seen = std::collections::HashMap::with_capacity(listing.found.len());
        let mut top = Dir::default();
        let mut skipped: Vec<Skipped> = listing
            .notes
            .into_iter()
            .map(|(path, reason)| Skipped {
                path,
                bytes: 0,
                reason,
            })
            .collect();
        skipped.extend(listing.not_utf8.into_iter().map(|path| Skipped {
            path,
            bytes: 0,
            reason: "its name is not UTF-8".into(),
        }));
        // Files the cache does not vouch for, read after the listing (on every core when
        // there are many, as on a first checkpoint).
        let mut unread = Vec::new();
        // What this checkpoint read to store: held to the limit as it reads, whatever
        // changed since the listing.
        let read = Reads::new(limits.max_total_bytes);
        // Every folder's and file's permission bits, for the checkpoint's mode record.
        let mut bits: Vec<(String, crate::modes::Kind, u32)> =
            vec![(".".into(), crate::modes::Kind::Folder, root_mode)];
        for found in listing.found {
            let kind = found.kind();
            let st = &found.stat;
            let rel = found.rel;
            let (parent, name) = match rel.rsplit_once('/') {
                Some((p, n)) => (p, n),
                None => ("", rel.as_str()),
            };
            let stat = crate::cache::Stat::of(st);
            let (entry_kind, id) = match kind {
                FileType::Directory => {
                    top.at(&rel);
                    bits.push((rel, crate::modes::Kind::Folder, st.st_mode));
                    continue;
                }
                FileType::Symlink => {
                    let id = match cache.blob(&rel, &stat, st.st_dev) {
                        Some(id) => id,
                        None => {
                            let Some(target) = link_target(&links_from, &rel, st.st_ino) else {
                                skipped.push(Skipped {
                                    path: rel,
                                    bytes: 0,
                                    reason: "it is a link that changed while it was read".into(),
                                });
                                continue;
                            };
                            read.reserve(target.len() as u64)?;
                            self.write(gix_object::Kind::Blob, &target)?
                        }
                    };
                    (EntryKind::Link, id)
                }
                FileType::RegularFile => {
                    let size = st.st_size as u64;
                    if size > limits.max_file_bytes {
                        skipped.push(Skipped {
                            path: rel,
                            bytes: size,
                            reason: format!(
                                "it is over {} MB (checkpoints.max_file_mb)",
                                limits.max_file_bytes / (1024 * 1024)
                            ),
                        });
                        continue;
                    }
                    let kind = if st.st_mode & 0o111 != 0 {
                        EntryKind::BlobExecutable
                    } else {
                        EntryKind::Blob
                    };
                    let mode_kind = if kind == EntryKind::BlobExecutable {
                        crate::modes::Kind::Executable
                    } else {
                        crate::modes::Kind::File
                    };
                    bits.push((rel.clone(), mode_kind, st.st_mode));
                    match cache.blob(&rel, &stat, st.st_dev) {
                        Some(id) => (kind, id),
                        None => {
                            unread.push((rel, found.stat, kind));
                            continue;
                        }
                    }
                }
                // Sockets, pipes and devices are not files to keep.
                _ => continue,
            };
            top.at(parent)
                .leaves
                .insert(name.to_string(), (entry_kind, id));
            seen.insert(rel, (stat, id));
        }
        // Many new files (a first checkpoint) go into one pack, not a file each.
        let packing = unread.len() >= PACK_FROM;
        if packing {
            self.begin_pack()?;
        }
        let built = self.read_in(
            &root,
            &unread,
            limits,
            &read,
            &mut top,
            &mut seen,
            &mut skipped,
            cache,
        );
        // The mode record goes with the rest (into the pack when there is one).
        let modes = crate::Modes::of(bits.iter().map(|(p, k, m)| (p.as_str(), *k, *m)));
        let built =
            built.and_then(|b| Ok((b, self.write(gix_object::Kind::Blob, &modes.encode())?)));
        if packing {
            self.end_pack(built.is_ok())?;
        }
        let ((tree, trees), modes) = built?;
        // Saved only when it learnt something (a cache that cannot be saved only makes the
        // next checkpoint slower).
        if !cache.knows(&seen, &trees) {
            let mut next = cache.next(seen, &trees);
            let _ = next.save(&cache_file);
            *cache = next;
        }
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Snapshot {
            tree,
            modes,
            skipped,
        })
    }

    /// Reads and stores the files the cache did not vouch for, then writes the trees: the
    /// root tree and the trees written.
    #[allow(clippy::too_many_arguments)]
    fn read_in(
        &self,
        root: &Path,
        unread: &[(String, rustix::fs::Stat, EntryKind)],
        limits: &Limits,
        read: &Reads,
        top: &mut Dir,
        seen: &mut std::collections::HashMap<String, (crate::cache::Stat, ObjectId)>,
        skipped: &mut Vec<Skipped>,
        cache: &crate::cache::Cache,
    ) -> Result<(ObjectId, Vec<ObjectId>)> {
        for ((rel, st, kind), got) in self.read_all(root, unread, limits, read)? {
            let stat = crate::cache::Stat::of(&st);
            match got {
                Ok(id) => {
                    let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
                    top.at(parent).leaves.insert(name.to_string(), (kind, id));
                    seen.insert(rel, (stat, id));
                }
                Err(why) => skipped.push(Skipped {
                    path: rel,
                    bytes: st.st_size as u64,
                    reason: why.to_string(),
                }),
            }
        }
        let mut trees = Vec::new();
        let tree = self.write_dir(top, cache, &mut trees)?;
        Ok((tree, trees))
    }

    /// Reads and stores each of `files` (workspace-relative, with the stat the walk saw):
    /// each with its blob, or why it is left out after all. On every core when there are
    /// enough of them to be worth the threads.
    #[allow(clippy::type_complexity)]
    pub(crate) fn read_all(
        &self,
        root: &Path,
        files: &[(String, rustix::fs::Stat, EntryKind)],
        limits: &Limits,
        read: &Reads,
    ) -> Result<
        Vec<(
            (String, rustix::fs::Stat, EntryKind),
            std::result::Result<ObjectId, Unread>,
        )>,
    > {
        let one = |(rel, st, _): &(String, rustix::fs::Stat, EntryKind)| -> Result<std::result::Result<ObjectId, Unread>> {
            // The size the listing saw, and one byte more to see a file that grew since: all
            // of it reserved before it is read, so threads together never read past the limit.
            let seen = (st.st_size as u64).min(limits.max_file_bytes);
            read.reserve(seen + 1)?;
            Ok(match read_file(&root.join(rel), st, seen) {
                Ok(data) => {
                    read.give_back(seen + 1 - data.len() as u64);
                    Ok(self.write(gix_object::Kind::Blob, &data)?)
                }
                // Read as reserved: it stays counted.
                Err(Unread::Grew) => Err(Unread::Grew),
                Err(why) => {
                    read.give_back(seen + 1);
                    Err(why)
                }
            })
        };
        let threads = if files.len() >= PARALLEL_READS {
            std::thread::available_parallelism().map_or(2, |n| n.get().min(8))
        } else {
            1
        };
        let results: Vec<Result<std::result::Result<ObjectId, Unread>>> = if threads <= 1 {
            files.iter().map(one).collect()
        } else {
            let per = files.len().div_ceil(threads);
            std::thread::scope(|s| {
                let parts: Vec<_> = files
                    .chunks(per)
                    .map(|chunk| s.spawn(move || chunk.iter().map(one).collect::<Vec<_>>()))
                    .collect();
                let mut all = Vec::with_capacity(files.len());
                for h in parts {
                    all.extend(h.join().map_err(|_| {
                        CheckpointError::Invalid(
                            "a thread reading files for the checkpoint failed".into(),
                        )
                    })?);
                }
                Ok::<_, CheckpointError>(all)
            })?
        };
        let mut out = Vec::with_capacity(files.len());
        for (f, r) in files.iter().zip(results) {
            out.push((f.clone(), r?));
        }
        Ok(out)
    }

    /// Writes `dir` and every folder in it as trees; its id.
    fn write_dir(
        &self,
        dir: &Dir,
        cache: &crate::cache::Cache,
        trees: &mut Vec<ObjectId>,
    ) -> Result<ObjectId> {
        let mut entries = Vec::with_capacity(dir.leaves.len() + dir.dirs.len());
        for (name, sub) in &dir.dirs {
            entries.push(TreeEntry {
                mode: EntryKind::Tree.into(),
                filename: name.as_str().into(),
                oid: self.write_dir(sub, cache, trees)?,
            });
        }
        for (name, (kind, id)) in &dir.leaves {
            entries.push(TreeEntry {
                mode: (*kind).into(),
                filename: name.as_str().into(),
                oid: *id,
            });
        }
        entries.sort();
        let tree = gix_object::Tree { entries };
        let mut buf = Vec::new();
        gix_object::WriteTo::write_to(&tree, &mut buf)
            .map_err(|e| CheckpointError::Invalid(format!("a tree could not be encoded: {e}")))?;
        let id = gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Tree, &buf)
            .map_err(|e| CheckpointError::Invalid(format!("a tree could not be hashed: {e}")))?;
        trees.push(id);
        if cache.has_tree(&id) {
            return Ok(id);
        }
        self.write(gix_object::Kind::Tree, &buf)
    }
}

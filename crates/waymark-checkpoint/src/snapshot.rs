//! Taking a checkpoint: the workspace walked without following links, what the ignore
//! files leave in written as blobs and trees.

use crate::{CheckpointError, Limits, Result, Store, io};
use gix_hash::ObjectId;
use gix_object::tree::{Entry as TreeEntry, EntryKind};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// A file left out of a checkpoint, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: String,
    pub bytes: u64,
    pub reason: String,
}

/// A checkpoint taken: its tree, and what it left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub tree: ObjectId,
    pub skipped: Vec<Skipped>,
}

/// A folder being gathered: its files and links, and its folders.
#[derive(Default)]
struct Dir {
    leaves: BTreeMap<String, (EntryKind, ObjectId)>,
    dirs: BTreeMap<String, Dir>,
}

impl Dir {
    fn at(&mut self, parts: &[&str]) -> &mut Dir {
        let mut d = self;
        for p in parts {
            d = d.dirs.entry((*p).to_string()).or_default();
        }
        d
    }
}

/// Every path below `root` that the ignore files leave in (`.git/` never), with its own
/// metadata (links not followed), in no order; listed on all cores, as `git status` does. Also
/// what could not be listed (a folder it may not read), as messages.
type Listed = Vec<(std::path::PathBuf, std::io::Result<std::fs::Metadata>)>;

fn walk(root: &Path) -> (Listed, Vec<String>) {
    let found = std::sync::Mutex::new(Vec::new());
    let failed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    // The walker reads a folder's ignore files as it enters it, following links and with
    // no limit: a pipe there would hang every checkpoint. Such a folder is left out, noted;
    // at the top, the ignore files are then not used at all.
    let top_plain = odd_ignore_file(root).is_none();
    if let Some(why) = odd_ignore_file(root) {
        failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("the workspace's ignore files are not used: {why}"));
    }
    let odd = failed.clone();
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .git_ignore(top_plain)
        .git_exclude(top_plain)
        .require_git(false)
        .ignore(false)
        .follow_links(false)
        .filter_entry(move |e| {
            if e.file_name().eq_ignore_ascii_case(".git") {
                return false;
            }
            if e.file_type().is_some_and(|t| t.is_dir())
                && let Some(why) = odd_ignore_file(e.path())
            {
                odd.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(format!("{} is left out: {why}", e.path().display()));
                return false;
            }
            true
        })
        .max_depth(Some(crate::MAX_DEPTH))
        .build_parallel()
        .run(|| {
            let (found, failed) = (&found, &failed);
            Box::new(move |entry| {
                match entry {
                    Ok(e) if e.path() == root => {}
                    Ok(e) => {
                        let meta = std::fs::symlink_metadata(e.path());
                        found
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((e.into_path(), meta));
                    }
                    // Left out, noted; the rest is still taken.
                    Err(e) => failed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(e.to_string()),
                }
                ignore::WalkState::Continue
            })
        });
    // In no order: the folders gathered are sorted maps.
    let found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    let failed = std::mem::take(&mut *failed.lock().unwrap_or_else(|p| p.into_inner()));
    (found, failed)
}

/// The largest ignore file read.
const MAX_IGNORE_FILE: u64 = 1024 * 1024;

/// Why folder `dir`'s ignore files (`.gitignore`, a `.git` file, `.git/info/exclude`) are
/// not safe to read (not a plain file, or over 1 MiB), if they are not.
fn odd_ignore_file(dir: &Path) -> Option<String> {
    let plain = |p: &Path| match std::fs::symlink_metadata(p) {
        Err(_) => None,
        Ok(m) if m.is_file() && m.len() <= MAX_IGNORE_FILE => None,
        Ok(m) if m.is_file() => Some(format!("{} is over 1 MiB", p.display())),
        Ok(_) => Some(format!("{} is not a plain file", p.display())),
    };
    let git = dir.join(".git");
    let git_odd = match std::fs::symlink_metadata(&git) {
        Ok(m) if m.is_dir() => plain(&git.join("info").join("exclude")),
        Ok(_) => plain(&git),
        Err(_) => None,
    };
    plain(&dir.join(".gitignore")).or(git_odd)
}

/// Why a file is left out of a checkpoint after all.
#[derive(Debug, thiserror::Error)]
enum Unread {
    #[error("it cannot be read: {0}")]
    Io(std::io::Error),
    #[error("it changed while the checkpoint was taken")]
    Changed,
    #[error("it grew over {0} MB while it was read (checkpoints.max_file_mb)")]
    Grew(u64),
}

/// The bytes of regular file `path`, which the walk saw as `seen`: opened without following
/// a link or waiting on a pipe, checked to be that same file, and read no further than
/// `limit` (a file that grew past it is left out). `Err` says why it is left out.
fn read_file(
    path: &Path,
    seen: &std::fs::Metadata,
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
    if !m.is_file() || m.ino() != seen.ino() || m.dev() != seen.dev() {
        return Err(Unread::Changed);
    }
    let mut data = Vec::with_capacity(usize::try_from(m.len().min(limit)).unwrap_or(0));
    f.take(limit + 1)
        .read_to_end(&mut data)
        .map_err(Unread::Io)?;
    if data.len() as u64 > limit {
        return Err(Unread::Grew(limit / (1024 * 1024)));
    }
    Ok(data)
}

/// The workspace-relative path of `path`, as `/`-separated UTF-8 parts; `None` for a name
/// that is not UTF-8 (left out: trees here hold UTF-8 names only).
fn parts<'a>(root: &Path, path: &'a Path) -> Option<Vec<&'a str>> {
    path.strip_prefix(root)
        .ok()?
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect()
}

impl Store {
    /// Takes a checkpoint of `workspace` (a folder; a link to one is taken as the folder).
    pub fn snapshot(&self, workspace: &Path, limits: &Limits) -> Result<Snapshot> {
        let root = workspace.canonicalize().map_err(io(workspace))?;
        if !root.is_dir() {
            return Err(CheckpointError::Invalid(format!(
                "{} is not a folder",
                root.display()
            )));
        }
        let mut held = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        self.check_objects(&mut held)?;
        let cache_file = self.dir().join("stat-cache");
        let cache = held.get_or_insert_with(|| crate::cache::Cache::load(&cache_file));
        let mut seen = std::collections::HashMap::new();
        let mut top = Dir::default();
        let mut skipped = Vec::new();
        let (listed, failed) = walk(&root);
        skipped.extend(failed.into_iter().map(|reason| Skipped {
            path: String::new(),
            bytes: 0,
            reason,
        }));
        for (path, meta) in listed {
            let path = path.as_path();
            let meta = match meta {
                Ok(m) => m,
                // Gone between the listing and the look: not there to keep.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(path)(e)),
            };
            let Some(parts) = parts(&root, path) else {
                skipped.push(Skipped {
                    path: path.display().to_string(),
                    bytes: 0,
                    reason: "its name is not UTF-8".into(),
                });
                continue;
            };
            let Some((name, parent)) = parts.split_last() else {
                continue;
            };
            let ft = meta.file_type();
            if ft.is_dir() {
                top.at(&parts);
            } else if ft.is_symlink() {
                let Ok(target) = std::fs::read_link(path) else {
                    continue;
                };
                let id = self.write(
                    gix_object::Kind::Blob,
                    std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()),
                )?;
                top.at(parent)
                    .leaves
                    .insert((*name).to_string(), (EntryKind::Link, id));
            } else if ft.is_file() {
                if meta.len() > limits.max_file_bytes {
                    skipped.push(Skipped {
                        path: parts.join("/"),
                        bytes: meta.len(),
                        reason: format!(
                            "it is over {} MB (checkpoints.max_file_mb)",
                            limits.max_file_bytes / (1024 * 1024)
                        ),
                    });
                    continue;
                }
                let stat = crate::cache::Stat::of(&meta);
                let rel = parts.join("/");
                let id = match cache.blob(&rel, &stat) {
                    Some(id) => id,
                    None => match read_file(path, &meta, limits.max_file_bytes) {
                        Ok(data) => self.write(gix_object::Kind::Blob, &data)?,
                        Err(why) => {
                            skipped.push(Skipped {
                                path: rel,
                                bytes: meta.len(),
                                reason: why.to_string(),
                            });
                            continue;
                        }
                    },
                };
                seen.insert(rel, (stat, id));
                let kind = if meta.permissions().mode() & 0o111 != 0 {
                    EntryKind::BlobExecutable
                } else {
                    EntryKind::Blob
                };
                top.at(parent)
                    .leaves
                    .insert((*name).to_string(), (kind, id));
            }
            // Sockets, pipes and devices are not files to keep.
        }
        let mut trees = Vec::new();
        let tree = self.write_dir(&top, cache, &mut trees)?;
        let mut next = cache.next(seen, &trees);
        // A cache that cannot be saved only makes the next checkpoint slower.
        let _ = next.save(&cache_file);
        *cache = next;
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Snapshot { tree, skipped })
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

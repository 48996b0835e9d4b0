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
/// metadata (links not followed), sorted; listed on all cores, as `git status` does.
type Listed = Vec<(std::path::PathBuf, std::io::Result<std::fs::Metadata>)>;

fn walk(root: &Path) -> Result<Listed> {
    let found = std::sync::Mutex::new(Vec::new());
    let failed = std::sync::Mutex::new(None);
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .ignore(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build_parallel()
        .run(|| {
            let (found, failed) = (&found, &failed);
            Box::new(move |entry| match entry {
                Ok(e) if e.path() == root => ignore::WalkState::Continue,
                Ok(e) => {
                    let meta = std::fs::symlink_metadata(e.path());
                    found
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((e.into_path(), meta));
                    ignore::WalkState::Continue
                }
                Err(e) => {
                    *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                    ignore::WalkState::Quit
                }
            })
        });
    if let Some(e) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(CheckpointError::Invalid(format!(
            "walking the workspace: {e}"
        )));
    }
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
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
        let cache_file = self.dir().join("stat-cache");
        let cache = held.get_or_insert_with(|| crate::cache::Cache::load(&cache_file));
        let mut seen = std::collections::HashMap::new();
        let mut top = Dir::default();
        let mut skipped = Vec::new();
        for (path, meta) in walk(&root)? {
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
                let target = std::fs::read_link(path).map_err(io(path))?;
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
                    None => {
                        let data = std::fs::read(path).map_err(io(path))?;
                        self.write(gix_object::Kind::Blob, &data)?
                    }
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

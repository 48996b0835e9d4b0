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
        let mut top = Dir::default();
        let mut skipped = Vec::new();
        let walk = ignore::WalkBuilder::new(&root)
            .hidden(false)
            .parents(false)
            .git_global(false)
            .git_ignore(true)
            .git_exclude(true)
            .require_git(false)
            .ignore(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        for entry in walk {
            let entry = entry
                .map_err(|e| CheckpointError::Invalid(format!("walking the workspace: {e}")))?;
            let path = entry.path();
            if path == root {
                continue;
            }
            let Some(parts) = parts(&root, path) else {
                skipped.push(Skipped {
                    path: path.display().to_string(),
                    bytes: 0,
                    reason: "its name is not UTF-8".into(),
                });
                continue;
            };
            let meta = std::fs::symlink_metadata(path).map_err(io(path))?;
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
                let data = std::fs::read(path).map_err(io(path))?;
                let id = self.write(gix_object::Kind::Blob, &data)?;
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
        let tree = self.write_dir(&top)?;
        Ok(Snapshot { tree, skipped })
    }

    /// Writes `dir` and every folder in it as trees; its id.
    fn write_dir(&self, dir: &Dir) -> Result<ObjectId> {
        let mut entries = Vec::with_capacity(dir.leaves.len() + dir.dirs.len());
        for (name, sub) in &dir.dirs {
            entries.push(TreeEntry {
                mode: EntryKind::Tree.into(),
                filename: name.as_str().into(),
                oid: self.write_dir(sub)?,
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
        self.write(gix_object::Kind::Tree, &buf)
    }
}

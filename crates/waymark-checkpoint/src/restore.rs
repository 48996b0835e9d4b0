//! Putting a workspace back as a checkpoint has it. Only what differs is touched; nothing
//! is written through a link; what is in the way is moved aside into the store.

use crate::{CheckpointError, Result, Store, diff, io};
use gix_hash::ObjectId;
use gix_object::tree::EntryKind;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Paths written (files, links, empty folders).
    pub written: Vec<String>,
    /// Paths removed (they came after the checkpoint).
    pub removed: Vec<String>,
    /// Where things in the way were moved, if anything was.
    pub moved_aside: Option<PathBuf>,
}

impl Store {
    /// Puts `workspace` back as checkpoint `target` has it, from its state in `current` (a
    /// checkpoint just taken of it). Paths left out of either (ignored, too big) are not
    /// touched.
    pub fn restore(
        &self,
        workspace: &Path,
        current: &ObjectId,
        target: &ObjectId,
    ) -> Result<Restored> {
        let root = workspace.canonicalize().map_err(io(workspace))?;
        let now = self.files(current)?;
        let want = self.files(target)?;
        let mut done = Restored::default();
        let aside = self.dir().join("aside").join(format!(
            "{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let mut mover = Mover {
            root: &root,
            aside: &aside,
            used: false,
        };
        // Read every object first: a damaged store fails before anything changes.
        let mut contents = Vec::new();
        for change in diff(&now, &want) {
            if let crate::Change::Added(p) | crate::Change::Modified(p) = &change
                && let Some(e) = want.get(p)
            {
                let data = match e.kind {
                    EntryKind::Tree => Vec::new(),
                    _ => self.read(&e.id, gix_object::Kind::Blob)?,
                };
                contents.push((p.clone(), *e, data));
            }
        }
        // What came since goes, deepest first.
        let mut gone: Vec<&String> = now.keys().filter(|p| !want.contains_key(*p)).collect();
        gone.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        for p in gone {
            let path = root.join(p);
            // Never through a link: a path whose folders are not all real folders is not
            // the one the checkpoint saw.
            if !real_folders(&root, p) {
                continue;
            }
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => {
                    // An empty folder of the checkpoint: removed only if still empty.
                    let _ = std::fs::remove_dir(&path);
                }
                Ok(_) => std::fs::remove_file(&path).map_err(io(&path))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&path)(e)),
            }
            done.removed.push(p.clone());
        }
        for (p, e, data) in contents {
            let parts: Vec<&str> = p.split('/').collect();
            let Some((name, parents)) = parts.split_last() else {
                continue;
            };
            let dir = mover.folder(parents)?;
            let path = dir.join(name);
            // Something there that the checkpoint just taken does not hold (too big,
            // ignored, or come since) is not the checkpoint's to replace: it goes aside.
            if !now.contains_key(&p)
                && e.kind != EntryKind::Tree
                && std::fs::symlink_metadata(&path).is_ok()
            {
                mover.move_aside(&path)?;
            }
            match e.kind {
                EntryKind::Tree => match std::fs::symlink_metadata(&path) {
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => {
                        mover.move_aside(&path)?;
                        std::fs::create_dir(&path).map_err(io(&path))?;
                    }
                    Err(_) => std::fs::create_dir(&path).map_err(io(&path))?,
                },
                EntryKind::Link => {
                    clear(&mut mover, &path)?;
                    let target: &std::ffi::OsStr = std::os::unix::ffi::OsStrExt::from_bytes(&data);
                    std::os::unix::fs::symlink(target, &path).map_err(io(&path))?;
                }
                kind => {
                    // A folder where the checkpoint has a file goes aside, whole.
                    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                        mover.move_aside(&path)?;
                    }
                    write_file(&dir, name, &data, kind == EntryKind::BlobExecutable)?;
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
            let path = root.join(&d);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                let _ = std::fs::remove_dir(&path);
            }
        }
        done.moved_aside = mover.used.then_some(aside);
        Ok(done)
    }
}

/// Whether every folder above `rel` (below `root`) is a real folder, not a link.
fn real_folders(root: &Path, rel: &str) -> bool {
    let mut dir = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    let Some((_, parents)) = parts.split_last() else {
        return false;
    };
    parents.iter().all(|p| {
        dir.push(p);
        std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())
    })
}

/// Makes room at `path` for a link: a file or link there is removed (it is in the
/// checkpoint taken just before), a folder moved aside.
fn clear(mover: &mut Mover<'_>, path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => mover.move_aside(path),
        Ok(_) => std::fs::remove_file(path).map_err(io(path)),
        Err(_) => Ok(()),
    }
}

/// Writes `data` as file `name` of folder `dir` (a real folder inside the workspace): into
/// a new file beside it, then renamed over whatever is there (a link there is replaced, never
/// followed).
fn write_file(dir: &Path, name: &str, data: &[u8], executable: bool) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
        return Err(CheckpointError::Invalid(format!(
            "{} is a folder where the checkpoint has a file",
            path.display()
        )));
    }
    // A name no one else uses (never an existing file or link: `create_new`).
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".waymark-restore-{}-{n}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if executable { 0o755 } else { 0o644 })
        .open(&tmp)
        .map_err(io(&tmp))?;
    f.write_all(data).map_err(io(&tmp))?;
    drop(f);
    std::fs::set_permissions(
        &tmp,
        std::fs::Permissions::from_mode(if executable { 0o755 } else { 0o644 }),
    )
    .map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))
}

/// Makes the folders of a path real folders inside the workspace, moving aside whatever
/// stands in their place (a link above all).
struct Mover<'a> {
    root: &'a Path,
    aside: &'a Path,
    used: bool,
}

impl Mover<'_> {
    fn move_aside(&mut self, path: &Path) -> Result<()> {
        let rel = path.strip_prefix(self.root).unwrap_or(path);
        let to = self.aside.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::rename(path, &to).map_err(io(path))?;
        self.used = true;
        Ok(())
    }

    /// The folder `parts` below the root, each a real folder when this returns.
    fn folder(&mut self, parts: &[&str]) -> Result<PathBuf> {
        let mut dir = self.root.to_path_buf();
        for p in parts {
            dir.push(p);
            match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    // A link (to anywhere) or a file where a folder belongs.
                    self.move_aside(&dir)?;
                    std::fs::create_dir(&dir).map_err(io(&dir))?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir(&dir).map_err(io(&dir))?;
                }
                Err(e) => return Err(io(&dir)(e)),
            }
        }
        Ok(dir)
    }
}

//! Checkpoints of a workspace, for rewind (G-27 … G-30): the store (this module, `snapshot`, `restore`)
//! and the extension that takes them in sessions (`extension`, its rows in `db`).
//!
//! A checkpoint is a git tree in a private object store (loose objects, or one pack for many
//! new ones, read through `gix-odb`, in the session's data folder; never the
//! project's own `.git`), so identical content is stored once. It covers what `.gitignore`
//! and `.git/info/exclude` leave in, symlinks as links and empty folders; `.git/` and files
//! over the size limit are left out, the latter noted.
//!
//! A restore brings every covered path back to its state in the checkpoint, removes what
//! came since, and never writes through a link: a folder that became a link is put back as
//! a folder, and anything in the way of a restored path is moved aside into the store (never
//! deleted), so nothing is lost.

mod access;
mod aside;
mod cache;
pub mod db;
mod extension;
mod keep;
pub mod listing;
mod modes;
mod pack;
pub mod preview;
mod private;
mod restore;
mod root;
mod snapshot;
mod walk;

pub use extension::{CheckpointExtension, MIGRATIONS, limits_for, shared, store_dir};
pub use modes::{Kind as ModeKind, Modes};
pub use restore::{RestoreOptions, Restored};
pub use root::Root;
pub use snapshot::{Skipped, Snapshot};

use gix_hash::ObjectId;
use gix_object::Find as _;
use gix_object::tree::EntryKind;
use private::{private_dir, write_private};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The deepest folder a checkpoint goes into (deeper ones are left out), and the deepest
/// tree one may hold.
pub const MAX_DEPTH: usize = 256;

/// What went wrong, naming the path or the object.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The store is missing an object or holds one that does not decode: it was changed or
    /// deleted outside Waymark.
    #[error("the checkpoint store at {store} is damaged: {message}")]
    Corrupt { store: String, message: String },
    #[error("{0}")]
    Invalid(String),
    /// The workspace holds more to keep than the limits allow: nothing was stored.
    #[error("{0}")]
    TooBig(String),
}

pub type Result<T> = std::result::Result<T, CheckpointError>;

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// What a checkpoint takes: files up to a size, and no folder of `skip`.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Files larger than this are left out (and noted).
    pub max_file_bytes: u64,
    /// More entries to keep than this (files, links, folders) and no checkpoint is taken.
    pub max_entries: usize,
    /// More bytes of files to keep than this and no checkpoint is taken.
    pub max_total_bytes: u64,
    /// Folders never taken wherever they appear in the workspace (Waymark's own data
    /// folder, when a workspace holds it: its store and database are not the project's).
    pub skip: Vec<PathBuf>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_file_bytes: 10 * 1024 * 1024,
            max_entries: 100_000,
            max_total_bytes: 2048 * 1024 * 1024,
            skip: Vec::new(),
        }
    }
}

/// One path of a checkpoint: what it is and the object holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    pub id: ObjectId,
}

/// A checkpoint as a restore reads it: its tree, and its mode record (`None` for a
/// checkpoint taken before modes were recorded: its files get the user's umask).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub tree: ObjectId,
    pub modes: Option<ObjectId>,
}

/// How a path differs between two checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    Added(String),
    Modified(String),
    Deleted(String),
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Added(p) | Change::Modified(p) | Change::Deleted(p) => p,
        }
    }
}

/// A private object store of checkpoints.
pub struct Store {
    dir: PathBuf,
    /// Where single objects are written.
    objects: gix_odb::loose::Store,
    /// Where objects are read and looked up: loose ones and packs alike.
    odb: std::sync::Mutex<std::sync::Arc<gix_odb::Store>>,
    /// The pack new objects go to while one is open (see `pack`).
    batch: std::sync::Mutex<Option<pack::PackWriter>>,
    /// What the last checkpoint learnt of the files (loaded on the first one).
    cache: std::sync::Mutex<Option<cache::Cache>>,
    /// The objects folder the cache was learnt against (device, inode): a store deleted
    /// and made again under it holds none of what the cache knows.
    objects_id: std::sync::Mutex<Option<(u64, u64)>>,
}

impl Store {
    /// Opens the store in `dir`, creating it (0700) if it is not there.
    pub fn open(dir: &Path) -> Result<Store> {
        let objects = dir.join("objects");
        // Private whatever it was (a store an older version made with the umask's bits).
        if std::fs::symlink_metadata(&objects).is_ok_and(|m| m.is_dir()) {
            private_dir(dir).map_err(io(dir))?;
            private_dir(&objects).map_err(io(&objects))?;
            // Its fan-out folders and packs' folder too (at most 257 of them).
            for e in std::fs::read_dir(&objects).map_err(io(&objects))?.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    private_dir(&e.path()).map_err(io(&e.path()))?;
                }
            }
        }
        match std::fs::symlink_metadata(&objects) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(CheckpointError::Corrupt {
                    store: dir.display().to_string(),
                    message: "`objects` is not a folder".into(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                private_dir(&objects).map_err(io(&objects))?;
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(io(dir))?;
            }
            Err(e) => return Err(io(&objects)(e)),
        }
        Ok(Store {
            dir: dir.to_path_buf(),
            odb: std::sync::Mutex::new(odb_at(&objects)?),
            batch: Default::default(),
            objects: gix_odb::loose::Store::at(objects, gix_hash::Kind::Sha1),
            cache: Default::default(),
            objects_id: Default::default(),
        })
    }

    /// Makes sure the objects folder is there (deleted outside Waymark, it is made again),
    /// and drops the cache when it is not the folder the cache was learnt against.
    pub(crate) fn check_objects(&self, cache: &mut Option<cache::Cache>) -> Result<()> {
        use std::os::unix::fs::MetadataExt as _;
        let objects = self.dir.join("objects");
        let meta = match std::fs::symlink_metadata(&objects) {
            Ok(m) if m.is_dir() => m,
            Ok(_) => return Err(self.corrupt("`objects` is not a folder".into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                private_dir(&objects).map_err(io(&objects))?;
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(io(&self.dir))?;
                std::fs::symlink_metadata(&objects).map_err(io(&objects))?
            }
            Err(e) => return Err(io(&objects)(e)),
        };
        let id = (meta.dev(), meta.ino());
        let mut known = self.objects_id.lock().unwrap_or_else(|p| p.into_inner());
        // The first time in this process, the folder the saved cache was learnt against.
        let mark = self.dir.join("objects-id");
        let stamp = format!("{} {}\n", id.0, id.1);
        let same = match *known {
            Some(k) => k == id,
            None => std::fs::read_to_string(&mark).is_ok_and(|t| t == stamp),
        };
        if !same {
            *cache = None;
            let _ = std::fs::remove_file(self.dir.join("stat-cache"));
            write_private(&mark, stamp.as_bytes()).map_err(io(&mark))?;
            self.reopen()?;
        }
        *known = Some(id);
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn corrupt(&self, message: String) -> CheckpointError {
        CheckpointError::Corrupt {
            store: self.dir.display().to_string(),
            message,
        }
    }

    /// A handle on the objects for this thread.
    fn handle(&self) -> gix_odb::store::Handle<std::sync::Arc<gix_odb::Store>> {
        self.odb
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .to_handle_arc()
    }

    /// Reads the objects folder afresh (after packs were added or removed, or the folder
    /// was made again).
    fn reopen(&self) -> Result<()> {
        let odb = odb_at(&self.dir.join("objects"))?;
        *self.odb.lock().unwrap_or_else(|p| p.into_inner()) = odb;
        Ok(())
    }

    /// Stores an object unless the store has it already (a file per object costs an inode
    /// and a rename on most file systems: an object known is only looked up). While a pack
    /// is open, new objects go into it.
    pub(crate) fn write(&self, kind: gix_object::Kind, data: &[u8]) -> Result<ObjectId> {
        let id = gix_object::compute_hash(gix_hash::Kind::Sha1, kind, data)
            .map_err(|e| CheckpointError::Invalid(format!("an object could not be hashed: {e}")))?;
        let packing = {
            let batch = self.batch.lock().unwrap_or_else(|p| p.into_inner());
            match batch.as_ref() {
                Some(b) if b.has(&id) => return Ok(id),
                Some(_) => true,
                None => false,
            }
        };
        // One already there is read back first: a loose object whose content was changed in
        // place would otherwise stand for this content in every checkpoint from now on (and
        // a rewind to one of them would fail midway). A damaged one is written again.
        if self.handle().exists_without_refresh(&id) {
            if self.read(&id, kind).is_ok() {
                return Ok(id);
            }
            let hex = id.to_hex().to_string();
            let loose = self.dir.join("objects").join(&hex[..2]).join(&hex[2..]);
            match std::fs::remove_file(&loose) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(self.corrupt(format!(
                        "object {id} is damaged in a pack and cannot be written again"
                    )));
                }
                Err(e) => return Err(io(&loose)(e)),
            }
        }
        let failed = |e: &dyn std::fmt::Display| {
            self.corrupt(format!("an object could not be written: {e}"))
        };
        if packing {
            // Deflated on this thread; only the append is one at a time.
            let entry = pack::entry(kind, data).map_err(|e| failed(&e))?;
            let mut batch = self.batch.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(b) = batch.as_mut() {
                b.add(id, &entry).map_err(|e| failed(&e))?;
                return Ok(id);
            }
        }
        // Its fan-out folder private before git's writer makes it with the umask's bits; the
        // object itself (read-only, as git leaves it) readable by the user alone.
        let hex = id.to_hex().to_string();
        let fan = self.dir.join("objects").join(&hex[..2]);
        private_dir(&fan).map_err(|e| failed(&e))?;
        let id = gix_object::Write::write_buf_with_known_id(&self.objects, kind, data, id)
            .map_err(|e| failed(&e))?;
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(fan.join(&hex[2..]), std::fs::Permissions::from_mode(0o400))
            .map_err(|e| failed(&e))?;
        Ok(id)
    }

    /// From here until [`Store::end_pack`], new objects go into one pack.
    pub(crate) fn begin_pack(&self) -> Result<()> {
        let objects = self.dir.join("objects");
        let w = pack::PackWriter::start(&objects)
            .map_err(|e| self.corrupt(format!("a pack could not be started: {e}")))?;
        *self.batch.lock().unwrap_or_else(|p| p.into_inner()) = Some(w);
        Ok(())
    }

    /// Ends the pack begun: written out when `keep`, else dropped with what it held.
    pub(crate) fn end_pack(&self, keep: bool) -> Result<()> {
        let w = self.batch.lock().unwrap_or_else(|p| p.into_inner()).take();
        match w {
            Some(w) if keep => {
                w.finish()
                    .map_err(|e| self.corrupt(format!("a pack could not be written: {e}")))?;
                self.reopen()
            }
            _ => Ok(()),
        }
    }

    /// The files as the newest checkpoint of this store listed them (none when this
    /// process has not taken one).
    pub(crate) fn listed(&self) -> cache::Cache {
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(cache::Cache::listing)
            .unwrap_or_default()
    }

    /// That blob `id` is in the store (its header read, its content not).
    pub(crate) fn check_blob(&self, id: &ObjectId) -> Result<()> {
        use gix_object::FindHeader as _;
        match self.handle().try_header(id) {
            Ok(Some(h)) if h.kind == gix_object::Kind::Blob => Ok(()),
            Ok(Some(h)) => Err(self.corrupt(format!("object {id} is a {}, not a blob", h.kind))),
            Ok(None) => Err(self.corrupt(format!("object {id} is missing"))),
            Err(e) => Err(self.corrupt(format!("object {id} cannot be read: {e}"))),
        }
    }

    /// The mode record of a checkpoint (blob `id`).
    pub fn modes(&self, id: &ObjectId) -> Result<Modes> {
        let data = self.read(id, gix_object::Kind::Blob)?;
        Modes::decode(&data)
            .ok_or_else(|| self.corrupt(format!("object {id} is not a record of file modes")))
    }

    /// The bytes of object `id`, which must be of `kind`.
    pub(crate) fn read(&self, id: &ObjectId, kind: gix_object::Kind) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        let found = self
            .handle()
            .try_find(id, &mut buf)
            .map_err(|e| self.corrupt(format!("object {id} cannot be read: {e}")))?;
        match found {
            // What the store holds must be what its name says: an object rewritten in place
            // (a mode record opened up, a file's content changed) is damage, not a checkpoint.
            Some(d)
                if d.kind == kind
                    && gix_object::compute_hash(gix_hash::Kind::Sha1, kind, d.data)
                        .is_ok_and(|h| h == *id) =>
            {
                Ok(d.data.to_vec())
            }
            Some(d) if d.kind == kind => Err(self.corrupt(format!(
                "object {id} does not hold what its name says (changed outside Waymark)"
            ))),
            Some(d) => Err(self.corrupt(format!("object {id} is a {}, not a {kind}", d.kind))),
            None => Err(self.corrupt(format!("object {id} is missing"))),
        }
    }

    /// Every path of checkpoint `tree` (folders only when empty), with what it holds.
    pub fn files(&self, tree: &ObjectId) -> Result<BTreeMap<String, Entry>> {
        let mut out = BTreeMap::new();
        self.flatten(tree, "", &mut out, 0)?;
        Ok(out)
    }

    fn flatten(
        &self,
        tree: &ObjectId,
        prefix: &str,
        out: &mut BTreeMap<String, Entry>,
        depth: usize,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(self.corrupt(format!("tree {tree} nests deeper than {MAX_DEPTH} folders")));
        }
        let data = self.read(tree, gix_object::Kind::Tree)?;
        let decoded = gix_object::TreeRef::from_bytes(&data, gix_hash::Kind::Sha1)
            .map_err(|e| self.corrupt(format!("tree {tree} does not decode: {e}")))?;
        if decoded.entries.is_empty() && !prefix.is_empty() {
            out.insert(
                prefix.trim_end_matches('/').to_string(),
                Entry {
                    kind: EntryKind::Tree,
                    id: *tree,
                },
            );
        }
        for e in &decoded.entries {
            let name = std::str::from_utf8(e.filename)
                .map_err(|_| self.corrupt(format!("tree {tree} has a name that is not UTF-8")))?;
            if name.is_empty()
                || name == "."
                || name == ".."
                || name.contains('/')
                || name.eq_ignore_ascii_case(".git")
            {
                return Err(self.corrupt(format!("tree {tree} has the name {name:?}")));
            }
            let path = format!("{prefix}{name}");
            match e.mode.kind() {
                EntryKind::Tree => {
                    self.flatten(&e.oid.to_owned(), &format!("{path}/"), out, depth + 1)?
                }
                EntryKind::Commit => {}
                kind => {
                    out.insert(
                        path,
                        Entry {
                            kind,
                            id: e.oid.to_owned(),
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// What changed from checkpoint `from` (none: an empty workspace) to `to`, by path,
    /// sorted. Folders whose tree is the same on both sides are not read.
    pub fn changes(&self, from: Option<&ObjectId>, to: &ObjectId) -> Result<Vec<Change>> {
        let mut out = Vec::new();
        match from {
            Some(f) => self.diff_trees(f, to, "", &mut out, 0)?,
            None => out = diff(&BTreeMap::new(), &self.files(to)?),
        }
        out.sort_by(|a, b| a.path().cmp(b.path()));
        Ok(out)
    }

    /// The entries of tree `id` by name.
    fn entries(&self, id: &ObjectId) -> Result<BTreeMap<String, (EntryKind, ObjectId)>> {
        let data = self.read(id, gix_object::Kind::Tree)?;
        let decoded = gix_object::TreeRef::from_bytes(&data, gix_hash::Kind::Sha1)
            .map_err(|e| self.corrupt(format!("tree {id} does not decode: {e}")))?;
        let mut out = BTreeMap::new();
        for e in &decoded.entries {
            let name = std::str::from_utf8(e.filename)
                .map_err(|_| self.corrupt(format!("tree {id} has a name that is not UTF-8")))?;
            out.insert(name.to_string(), (e.mode.kind(), e.oid.to_owned()));
        }
        Ok(out)
    }

    /// What is at `path` as a flat map (an empty folder as one entry), from its entry.
    fn flat_at(
        &self,
        entry: Option<&(EntryKind, ObjectId)>,
        path: &str,
        depth: usize,
    ) -> Result<BTreeMap<String, Entry>> {
        let mut out = BTreeMap::new();
        match entry {
            None | Some((EntryKind::Commit, _)) => {}
            Some((EntryKind::Tree, id)) => {
                self.flatten(id, &format!("{path}/"), &mut out, depth)?
            }
            Some((kind, id)) => {
                out.insert(
                    path.to_string(),
                    Entry {
                        kind: *kind,
                        id: *id,
                    },
                );
            }
        }
        Ok(out)
    }

    fn diff_trees(
        &self,
        a: &ObjectId,
        b: &ObjectId,
        prefix: &str,
        out: &mut Vec<Change>,
        depth: usize,
    ) -> Result<()> {
        if a == b {
            return Ok(());
        }
        if depth > MAX_DEPTH {
            return Err(self.corrupt(format!("tree {b} nests deeper than {MAX_DEPTH} folders")));
        }
        let (ea, eb) = (self.entries(a)?, self.entries(b)?);
        let names: std::collections::BTreeSet<&String> = ea.keys().chain(eb.keys()).collect();
        let empty = ObjectId::empty_tree(gix_hash::Kind::Sha1);
        for name in names {
            let (x, y) = (ea.get(name), eb.get(name));
            if x == y {
                continue;
            }
            let path = format!("{prefix}{name}");
            match (x, y) {
                (Some((EntryKind::Tree, ta)), Some((EntryKind::Tree, tb)))
                    if *ta != empty && *tb != empty =>
                {
                    self.diff_trees(ta, tb, &format!("{path}/"), out, depth + 1)?
                }
                _ => {
                    let (mut fa, mut fb) = (
                        self.flat_at(x, &path, depth + 1)?,
                        self.flat_at(y, &path, depth + 1)?,
                    );
                    // A folder on both sides, empty on one: the folder itself stays, only
                    // what is in it changes.
                    if let (Some((EntryKind::Tree, _)), Some((EntryKind::Tree, _))) = (x, y) {
                        fa.remove(&path);
                        fb.remove(&path);
                    }
                    out.extend(diff(&fa, &fb))
                }
            }
        }
        Ok(())
    }

    /// Deletes every object no tree of `keep` reaches, and every blob but those of
    /// `keep_blobs` (the kept checkpoints' mode records), after old checkpoints were dropped;
    /// forgets what the stat cache knew. Returns how many objects went.
    pub fn prune(&self, keep: &[ObjectId], keep_blobs: &[ObjectId]) -> Result<u64> {
        let mut held = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let mut live: std::collections::HashSet<ObjectId> = keep_blobs.iter().copied().collect();
        let mut done = std::collections::HashSet::new();
        let mut todo: Vec<ObjectId> = keep.to_vec();
        while let Some(t) = todo.pop() {
            if !done.insert(t) {
                continue;
            }
            live.insert(t);
            for (_, (kind, id)) in self.entries(&t)? {
                match kind {
                    EntryKind::Tree => todo.push(id),
                    EntryKind::Commit => {}
                    _ => {
                        live.insert(id);
                    }
                }
            }
        }
        let objects = self.dir.join("objects");
        let mut removed = 0;
        for fan in std::fs::read_dir(&objects).map_err(io(&objects))?.flatten() {
            let fan_name = fan.file_name();
            let Some(prefix) = fan_name.to_str().filter(|n| n.len() == 2) else {
                continue;
            };
            let Ok(files) = std::fs::read_dir(fan.path()) else {
                continue;
            };
            for f in files.flatten() {
                let name = f.file_name();
                let Some(rest) = name.to_str() else { continue };
                let Ok(id) = ObjectId::from_hex(format!("{prefix}{rest}").as_bytes()) else {
                    continue;
                };
                if !live.contains(&id) && std::fs::remove_file(f.path()).is_ok() {
                    removed += 1;
                }
            }
        }
        // A pack none of whose objects is still needed goes whole (a pack partly needed
        // stays: it is the base most checkpoints share).
        let packs = objects.join("pack");
        let mut packs_gone = false;
        for e in std::fs::read_dir(&packs).into_iter().flatten().flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "idx") {
                continue;
            }
            let Some(ids) = pack::ids_of_index(&path) else {
                continue;
            };
            if ids.iter().any(|id| live.contains(id)) {
                continue;
            }
            if std::fs::remove_file(path.with_extension("pack")).is_ok()
                && std::fs::remove_file(&path).is_ok()
            {
                removed += ids.len() as u64;
                packs_gone = true;
            }
        }
        if packs_gone {
            self.reopen()?;
        }
        // The cache may name objects that are gone now: start it again.
        *held = None;
        let _ = std::fs::remove_file(self.dir.join("stat-cache"));
        Ok(removed)
    }
}

/// The object database of an `objects` folder: loose objects and packs.
fn odb_at(objects: &Path) -> Result<std::sync::Arc<gix_odb::Store>> {
    gix_odb::Store::at_opts(
        objects.to_path_buf(),
        gix_hash::Kind::Sha1,
        &mut std::iter::empty(),
        Default::default(),
    )
    .map(std::sync::Arc::new)
    .map_err(io(objects))
}

/// The changes from `before` to `after`, sorted by path.
pub(crate) fn diff(
    before: &BTreeMap<String, Entry>,
    after: &BTreeMap<String, Entry>,
) -> Vec<Change> {
    let mut out = Vec::new();
    for (p, e) in after {
        match before.get(p) {
            None => out.push(Change::Added(p.clone())),
            Some(b) if b != e => out.push(Change::Modified(p.clone())),
            Some(_) => {}
        }
    }
    for p in before.keys() {
        if !after.contains_key(p) {
            out.push(Change::Deleted(p.clone()));
        }
    }
    out.sort_by(|a, b| a.path().cmp(b.path()));
    out
}

#[cfg(test)]
mod tests;

//! What the last checkpoint learnt of each file (its stat and blob), so the next one reads
//! and hashes only files that changed, as git's index does; and the trees already stored,
//! so an unchanged folder is not written again. Kept in the store as `stat-cache`; a cache
//! that is missing or does not parse is simply rebuilt.

use gix_hash::ObjectId;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// A file's stat as the cache compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    mtime_ns: i128,
    ctime_ns: i128,
    size: u64,
    ino: u64,
    mode: u32,
}

impl Stat {
    pub(crate) fn of(m: &rustix::fs::Stat) -> Stat {
        Stat {
            mtime_ns: i128::from(m.st_mtime) * 1_000_000_000 + i128::from(m.st_mtime_nsec),
            ctime_ns: i128::from(m.st_ctime) * 1_000_000_000 + i128::from(m.st_ctime_nsec),
            size: m.st_size as u64,
            ino: m.st_ino,
            mode: m.st_mode,
        }
    }
}

#[derive(Default)]
pub(crate) struct Cache {
    files: HashMap<String, (Stat, ObjectId)>,
    trees: HashSet<ObjectId>,
    /// When the cache was last saved (ns since the epoch): a file changed shortly before it
    /// could look unchanged, so such a file is read again ("racy git").
    saved_ns: i128,
    /// The device whose files a stat may vouch for: the workspace's, unless its file system
    /// never writes pages back (tmpfs, ramfs, an overlay that may sit on one), where a file
    /// can change with no stat change at all. A file on another device (a file system mounted
    /// inside the workspace, of whatever kind) is always read.
    trusted: Option<u64>,
}

/// How close to the save a change must be to be read again whatever its stat says. Not the
/// clock's step alone: a process writing a file through a shared memory map changes its
/// content with no new time once the page is dirty, until the kernel writes the page back
/// (within about 35 s with the kernel's default settings), after which the next write
/// stamps the time again. A file changed within this long of the save is read again.
pub(crate) const RACY_NS: i128 = 60_000_000_000;

impl Cache {
    pub(crate) fn load(path: &Path) -> Cache {
        let Ok(text) = std::fs::read_to_string(path) else {
            return Cache::default();
        };
        let Some(text) = text.strip_suffix("end\n") else {
            return Cache::default();
        };
        let mut lines = text.lines();
        let Some(saved_ns) = lines
            .next()
            .and_then(|l| l.strip_prefix("waymark-stat-cache 1 "))
            .and_then(|v| v.parse().ok())
        else {
            return Cache::default();
        };
        let mut cache = Cache {
            saved_ns,
            ..Cache::default()
        };
        for line in lines {
            let mut f = line.split('\0');
            match (f.next(), f.next()) {
                (Some("t"), Some(id)) => {
                    if let Ok(id) = ObjectId::from_hex(id.as_bytes()) {
                        cache.trees.insert(id);
                    }
                }
                (Some("f"), Some(path)) => {
                    let nums: Vec<&str> = f.by_ref().take(5).collect();
                    let (Some(id), [m, c, s, i, mo]) = (f.next(), nums.as_slice()) else {
                        return Cache::default();
                    };
                    let (Ok(mtime_ns), Ok(ctime_ns), Ok(size), Ok(ino), Ok(mode), Ok(id)) = (
                        m.parse(),
                        c.parse(),
                        s.parse(),
                        i.parse(),
                        mo.parse(),
                        ObjectId::from_hex(id.as_bytes()),
                    ) else {
                        return Cache::default();
                    };
                    cache.files.insert(
                        path.to_string(),
                        (
                            Stat {
                                mtime_ns,
                                ctime_ns,
                                size,
                                ino,
                                mode,
                            },
                            id,
                        ),
                    );
                }
                _ => return Cache::default(),
            }
        }
        cache
    }

    /// The blob of `path` if its stat is the one cached (and not too close to the save, nor
    /// on a volatile file system).
    pub(crate) fn blob(&self, path: &str, stat: &Stat, dev: u64) -> Option<ObjectId> {
        let (s, id) = self.files.get(path)?;
        (s == stat && self.vouches(stat, dev)).then_some(*id)
    }

    /// Whether a file whose stat is `stat`, on device `dev`, can be taken as unchanged by its
    /// stat alone.
    pub(crate) fn vouches(&self, stat: &Stat, dev: u64) -> bool {
        let racy =
            stat.mtime_ns >= self.saved_ns - RACY_NS || stat.ctime_ns >= self.saved_ns - RACY_NS;
        !racy && self.trusted == Some(dev)
    }

    /// Sets the device whose stats vouch (see [`Cache::trusted`]); `None`: no stat does.
    pub(crate) fn set_trusted(&mut self, dev: Option<u64>) {
        self.trusted = dev;
    }

    /// The files as the last checkpoint listed them (no trees), to tell later which
    /// changed since.
    pub(crate) fn listing(&self) -> Cache {
        Cache {
            files: self.files.clone(),
            trees: HashSet::new(),
            saved_ns: self.saved_ns,
            trusted: self.trusted,
        }
    }

    /// Whether the file at `path`, whose stat is now `stat`, is the one listed: the same
    /// stat, and where the stat cannot vouch for it, the same content (`read` reads it).
    pub(crate) fn unchanged(
        &self,
        path: &str,
        stat: &Stat,
        dev: u64,
        read: impl FnOnce() -> Option<Vec<u8>>,
    ) -> bool {
        let Some((s, id)) = self.files.get(path) else {
            return false;
        };
        if s != stat {
            return false;
        }
        if self.vouches(stat, dev) {
            return true;
        }
        read()
            .and_then(|d| {
                gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Blob, &d).ok()
            })
            .is_some_and(|now| now == *id)
    }

    /// How many files it knows.
    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }

    pub(crate) fn has_tree(&self, id: &ObjectId) -> bool {
        self.trees.contains(id)
    }

    /// Whether it already holds exactly these files and every one of these trees.
    pub(crate) fn knows(
        &self,
        files: &HashMap<String, (Stat, ObjectId)>,
        trees: &[ObjectId],
    ) -> bool {
        self.files == *files && trees.iter().all(|t| self.trees.contains(t))
    }

    /// The cache for the next checkpoint: these files, and every tree known.
    pub(crate) fn next(
        &self,
        files: HashMap<String, (Stat, ObjectId)>,
        trees: &[ObjectId],
    ) -> Cache {
        let mut known = self.trees.clone();
        known.extend(trees.iter().copied());
        Cache {
            files,
            trees: known,
            saved_ns: 0,
            trusted: self.trusted,
        }
    }

    /// Saves it to `path`, in place (a new file each time costs an inode allocation, which
    /// is slow on ext4). A save cut short leaves a cache that does not parse, which the next
    /// load throws away: the cache only saves work, it never decides what a checkpoint holds.
    pub(crate) fn save(&mut self, path: &Path) -> std::io::Result<()> {
        self.saved_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        use std::fmt::Write as _;
        let mut out = String::with_capacity(64 + self.trees.len() * 44 + self.files.len() * 120);
        let _ = writeln!(out, "waymark-stat-cache 1 {}", self.saved_ns);
        for id in &self.trees {
            let _ = writeln!(out, "t\0{id}");
        }
        for (p, (s, id)) in &self.files {
            if p.contains('\n') || p.contains('\0') {
                continue;
            }
            let _ = writeln!(
                out,
                "f\0{p}\0{}\0{}\0{}\0{}\0{}\0{id}",
                s.mtime_ns, s.ctime_ns, s.size, s.ino, s.mode
            );
        }
        out.push_str("end\n");
        crate::private::write_private(path, out.as_bytes())
    }
}

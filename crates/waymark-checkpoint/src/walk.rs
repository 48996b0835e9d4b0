//! Listing a workspace for a checkpoint: every path the ignore files leave in (`.git/`
//! never), with its own stat (links not followed). Each folder is opened without following
//! a link and read through its descriptor, and each entry is looked at relative to it, so
//! no path is walked from the root again (what makes `git status` fast makes this fast).
//! Ignore files are read from the opened folder, only when they are small regular files: a
//! pipe or a link there leaves its folder out, noted, and can never hang the walk.

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// A folder opened for reading its entries: never through a link.
const DIR: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

/// The largest ignore file read.
const MAX_IGNORE_FILE: u64 = 1024 * 1024;
/// The most ignore-file bytes one walk reads, all folders together: past it the walk stops.
pub(crate) const MAX_IGNORE_BYTES: u64 = 16 * 1024 * 1024;
/// A folder whose path is longer than this (bytes) is not entered, noted.
const MAX_PATH: usize = 4096;
/// Entries looked at, ignored ones included, as a multiple of the entries one walk may keep.
pub(crate) const LOOKED_AT_FACTOR: usize = 10;

/// Which limit stopped a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// More entries to keep than allowed.
    Kept,
    /// More entries looked at, ignored ones included, than [`LOOKED_AT_FACTOR`] times that.
    LookedAt,
    /// More than [`MAX_IGNORE_BYTES`] of ignore files.
    IgnoreFiles,
}

/// What one walk may take before it stops, shared by its threads: entries kept (found, or
/// noted as left out), entries looked at (ignored ones too), and ignore-file bytes read.
struct Budget {
    max: usize,
    kept: AtomicUsize,
    looked_at: AtomicUsize,
    ignore_bytes: AtomicU64,
    /// 0 while within the limits, else the [`Over`] that stopped the walk, plus one.
    over: AtomicU8,
}

impl Budget {
    fn new(max: usize) -> Budget {
        Budget {
            max,
            kept: AtomicUsize::new(0),
            looked_at: AtomicUsize::new(0),
            ignore_bytes: AtomicU64::new(0),
            over: AtomicU8::new(0),
        }
    }

    /// Stops the walk for `why` (the first reason stays); always false.
    fn stop(&self, why: Over) -> bool {
        let code = match why {
            Over::Kept => 1,
            Over::LookedAt => 2,
            Over::IgnoreFiles => 3,
        };
        let _ = self
            .over
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
        false
    }

    /// Counts one entry the folder listing gave; false once over the limits.
    fn look(&self) -> bool {
        let looked = self.looked_at.fetch_add(1, Ordering::Relaxed) + 1;
        looked <= self.max.saturating_mul(LOOKED_AT_FACTOR) || self.stop(Over::LookedAt)
    }

    /// Counts one entry kept or noted; false once over the limits.
    fn keep(&self) -> bool {
        self.kept.fetch_add(1, Ordering::Relaxed) < self.max || self.stop(Over::Kept)
    }

    fn over(&self) -> Option<Over> {
        match self.over.load(Ordering::Relaxed) {
            0 => None,
            1 => Some(Over::Kept),
            2 => Some(Over::LookedAt),
            _ => Some(Over::IgnoreFiles),
        }
    }

    /// Counts `n` ignore-file bytes read; false once past [`MAX_IGNORE_BYTES`].
    fn ignore_text(&self, n: usize) -> bool {
        self.ignore_bytes.fetch_add(n as u64, Ordering::Relaxed) + n as u64 <= MAX_IGNORE_BYTES
            || self.stop(Over::IgnoreFiles)
    }
}

/// One path found: relative to the workspace, `/`-separated.
pub(crate) struct Found {
    pub rel: String,
    pub stat: rustix::fs::Stat,
}

impl Found {
    pub(crate) fn kind(&self) -> FileType {
        FileType::from_raw_mode(self.stat.st_mode)
    }
}

/// The ignore rules in force in a folder: its own `.gitignore` last (it wins), each with
/// the workspace-relative folder it applies from.
pub(crate) type Rules = Vec<(String, Arc<Gitignore>)>;

/// Folders never taken, by (device, inode).
type Skip = Vec<(u64, u64)>;

/// A folder still to read: opened only when its turn comes (a folder of thousands of
/// folders would otherwise hold a descriptor for each at once).
struct Todo {
    place: Place,
    rel: String,
    depth: usize,
    rules: Arc<Rules>,
}

enum Place {
    Open(OwnedFd),
    /// `name` in the open folder.
    In(Arc<OwnedFd>, String),
}

/// What the walk gathered: the paths, and notes on what it left out (the folder each is
/// about, workspace-relative, `""` for the whole workspace; the reason).
#[derive(Default)]
pub(crate) struct Listing {
    pub found: Vec<Found>,
    pub notes: Vec<(String, String)>,
    /// Paths left out for a name that is not UTF-8.
    pub not_utf8: Vec<String>,
    /// The walk stopped early, and which limit stopped it.
    pub over: Option<Over>,
}

/// Why an ignore file (or the `.git` entry leading to one) cannot be used; the listing notes
/// it and leaves out what it would have ruled.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unusable {
    #[error("{} is not a plain file", .0.display())]
    NotPlain(PathBuf),
    #[error("{} is over 1 MiB", .0.display())]
    TooBig(PathBuf),
    #[error("{} cannot be read: {}", .0.display(), .1)]
    Unreadable(PathBuf, std::io::Error),
    #[error("{} is not a folder or a plain file", .0.display())]
    OddGit(PathBuf),
}

/// Reads the ignore file `name` of the open folder `dir` (whose path is `path`): `Ok(None)`
/// when there is none, `Err` saying why it cannot be used (not a regular file, too big).
fn ignore_file(dir: impl AsFd, name: &str, path: &Path) -> Result<Option<Vec<u8>>, Unusable> {
    use std::io::Read as _;
    let shown = path.join(name);
    let fd = match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(Unusable::NotPlain(shown)),
        Err(e) => return Err(Unusable::Unreadable(shown, e.into())),
    };
    let st = match rustix::fs::fstat(&fd) {
        Ok(st) => st,
        Err(e) => return Err(Unusable::Unreadable(shown, e.into())),
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(Unusable::NotPlain(shown));
    }
    if st.st_size as u64 > MAX_IGNORE_FILE {
        return Err(Unusable::TooBig(shown));
    }
    let mut data = Vec::new();
    if let Err(e) = std::fs::File::from(fd)
        .take(MAX_IGNORE_FILE + 1)
        .read_to_end(&mut data)
    {
        return Err(Unusable::Unreadable(shown, e));
    }
    if data.len() as u64 > MAX_IGNORE_FILE {
        return Err(Unusable::TooBig(shown));
    }
    Ok(Some(data))
}

/// The rules of an ignore file's text, applying from `root`.
pub(crate) fn rules_of(root: &Path, text: &[u8]) -> Option<Arc<Gitignore>> {
    let mut b = GitignoreBuilder::new(root);
    for line in String::from_utf8_lossy(text).lines() {
        // A line the parser refuses is skipped, as git skips it.
        let _ = b.add_line(None, line);
    }
    b.build().ok().filter(|g| !g.is_empty()).map(Arc::new)
}

/// The repository's own exclude file for a workspace at `root`: `.git/info/exclude`, or,
/// for a worktree (`.git` a file naming its folder), the main repository's.
fn exclude_file(root_fd: &OwnedFd, root: &Path) -> Result<Option<Vec<u8>>, Unusable> {
    let git = match rustix::fs::statat(root_fd, ".git", AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => FileType::from_raw_mode(st.st_mode),
        Err(_) => return Ok(None),
    };
    let info = match git {
        FileType::Directory => root.join(".git"),
        FileType::RegularFile => {
            let Some(text) = ignore_file(root_fd, ".git", root)? else {
                return Ok(None);
            };
            let text = String::from_utf8_lossy(&text);
            let Some(dir) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else {
                return Ok(None);
            };
            let dir = root.join(dir.trim());
            // A worktree keeps its excludes in the repository it belongs to. Read as every
            // ignore file is: never through a link, never waiting on a pipe, bounded.
            let common = rustix::fs::openat(rustix::fs::CWD, &dir, DIR, Mode::empty())
                .ok()
                .and_then(|fd| ignore_file(&fd, "commondir", &dir).ok().flatten())
                .filter(|c| c.len() < 4096);
            match common {
                Some(c) => dir.join(String::from_utf8_lossy(&c).trim()),
                None => dir,
            }
        }
        _ => return Err(Unusable::OddGit(root.join(".git"))),
    };
    let info_dir = info.join("info");
    let Ok(fd) = rustix::fs::openat(rustix::fs::CWD, &info_dir, DIR, Mode::empty()) else {
        return Ok(None);
    };
    ignore_file(&fd, "exclude", &info_dir)
}

/// Whether `rel` (a `dir` if `is_dir`) is ignored: the deepest rule that speaks decides.
pub(crate) fn ignored(rules: &Rules, rel: &str, is_dir: bool) -> bool {
    for (from, g) in rules.iter().rev() {
        let inside = if from.is_empty() {
            rel
        } else {
            match rel
                .strip_prefix(from.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                Some(r) => r,
                None => continue,
            }
        };
        match g.matched(inside, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// A folder whose listing fails outright (tests only).
#[cfg(test)]
pub(crate) static FAIL_LISTING: Mutex<Option<String>> = Mutex::new(None);

/// Reads one folder: its entries into `out`, its folders into `more`; it stops partway once
/// the walk is over its `budget`.
fn read_dir(
    root: &Path,
    skip: &Skip,
    budget: &Budget,
    todo: Todo,
    out: &mut Listing,
    more: &mut Vec<Todo>,
) {
    #[cfg(test)]
    if FAIL_LISTING
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_deref()
        == Some(todo.rel.as_str())
    {
        panic!("listing {} failed (test)", todo.rel);
    }
    let here = root.join(&todo.rel);
    let fd = match todo.place {
        Place::Open(fd) => fd,
        Place::In(parent, name) => {
            match rustix::fs::openat(&*parent, name.as_str(), DIR, Mode::empty()) {
                Ok(fd) => fd,
                // Swapped for something else since it was looked at: not there.
                Err(
                    rustix::io::Errno::NOENT | rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR,
                ) => return,
                Err(e) => {
                    out.notes.push((
                        todo.rel.clone(),
                        format!("{} cannot be listed: {e}", here.display()),
                    ));
                    return;
                }
            }
        }
    };
    let fd = Arc::new(fd);
    let mut rules = todo.rules;
    let read = ignore_file(&*fd, ".gitignore", &here);
    if let Ok(Some(t)) = &read
        && !budget.ignore_text(t.len())
    {
        return;
    }
    match read {
        Ok(None) => {}
        Ok(Some(text)) => {
            if let Some(g) = rules_of(&here, &text) {
                let mut r = (*rules).clone();
                r.push((todo.rel.clone(), g));
                rules = Arc::new(r);
            }
        }
        Err(why) if todo.rel.is_empty() => {
            out.notes.push((
                String::new(),
                format!("the workspace's ignore files are not used: {why}"),
            ));
        }
        Err(why) => {
            out.notes.push((
                todo.rel.clone(),
                format!("{} is left out: {why}", here.display()),
            ));
            return;
        }
    }
    let dir = match rustix::fs::Dir::read_from(&*fd) {
        Ok(d) => d,
        Err(e) => {
            out.notes.push((
                todo.rel.clone(),
                format!("{} cannot be listed: {e}", here.display()),
            ));
            return;
        }
    };
    for entry in dir {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.notes.push((
                    todo.rel.clone(),
                    format!("{} cannot be listed: {e}", here.display()),
                ));
                break;
            }
        };
        // Every entry the listing gives counts, whatever becomes of it.
        if budget.over().is_some() || !budget.look() {
            return;
        }
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." || name.eq_ignore_ascii_case(b".git") {
            continue;
        }
        let Ok(name) = std::str::from_utf8(name) else {
            if !budget.keep() {
                return;
            }
            out.not_utf8.push(
                here.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name))
                    .display()
                    .to_string(),
            );
            continue;
        };
        let rel = if todo.rel.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", todo.rel)
        };
        let stat = match rustix::fs::statat(&*fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            // Gone between the listing and the look: not there to keep.
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => {
                if !budget.keep() {
                    return;
                }
                out.notes.push((
                    rel.clone(),
                    format!("{} cannot be looked at: {e}", here.join(name).display()),
                ));
                continue;
            }
        };
        let is_dir = FileType::from_raw_mode(stat.st_mode) == FileType::Directory;
        if ignored(&rules, &rel, is_dir) {
            continue;
        }
        if !budget.keep() {
            return;
        }
        if is_dir && skip.contains(&(stat.st_dev, stat.st_ino)) {
            out.notes.push((
                rel,
                "Waymark's own data folder is not the project's: left out".into(),
            ));
            continue;
        }
        if is_dir {
            if rel.len() > MAX_PATH {
                // A path too long to name: noted, so a rewind leaves what is below it alone.
                out.notes.push((
                    rel.clone(),
                    format!(
                        "a folder whose path is longer than {MAX_PATH} bytes ({}…): left out",
                        here.join(name)
                            .display()
                            .to_string()
                            .chars()
                            .take(200)
                            .collect::<String>()
                    ),
                ));
                continue;
            }
            if todo.depth < crate::MAX_DEPTH {
                more.push(Todo {
                    place: Place::In(fd.clone(), name.to_string()),
                    rel: rel.clone(),
                    depth: todo.depth + 1,
                    rules: rules.clone(),
                });
            } else {
                // Too deep to go on: noted, so a rewind leaves what is below it alone.
                out.notes.push((
                    rel.clone(),
                    format!(
                        "{} is deeper than {} folders: left out",
                        here.join(name).display(),
                        crate::MAX_DEPTH
                    ),
                ));
                continue;
            }
        }
        out.found.push(Found { rel, stat });
    }
}

/// Lists the workspace at `root` (opened as `root_fd`), on `threads` threads, leaving out
/// the folders of `skip`. Past `max` entries found it stops, and says so (`over`).
pub(crate) fn list(
    root: &Path,
    root_fd: OwnedFd,
    threads: usize,
    skip: &[PathBuf],
    max: usize,
) -> Listing {
    let skip: Skip = skip
        .iter()
        .filter_map(|p| rustix::fs::stat(p).ok())
        .map(|st| (st.st_dev, st.st_ino))
        .collect();
    let skip = &skip;
    let mut out = Listing::default();
    let mut base: Rules = Vec::new();
    match exclude_file(&root_fd, root) {
        Ok(Some(text)) => {
            if let Some(g) = rules_of(root, &text) {
                base.push((String::new(), g));
            }
        }
        Ok(None) => {}
        Err(why) => out.notes.push((
            String::new(),
            format!("the repository's exclude file is not used: {why}"),
        )),
    }
    let first = Todo {
        place: Place::Open(root_fd),
        rel: String::new(),
        depth: 0,
        rules: Arc::new(base),
    };
    let budget = &Budget::new(max);
    if threads <= 1 {
        let mut todo = vec![first];
        while let Some(t) = todo.pop() {
            read_dir(root, skip, budget, t, &mut out, &mut todo);
            if budget.over().is_some() {
                break;
            }
        }
        out.over = budget.over();
        return out;
    }
    // A shared stack of folders; a worker waits while others may still add to it.
    struct Work {
        todo: Vec<Todo>,
        busy: usize,
    }
    let work = Mutex::new(Work {
        todo: vec![first],
        busy: 0,
    });
    let woken = Condvar::new();
    let parts: Vec<Listing> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Listing::default();
                    let mut more = Vec::new();
                    loop {
                        let next = {
                            let mut w = work.lock().unwrap_or_else(|p| p.into_inner());
                            loop {
                                if budget.over().is_some() {
                                    break None;
                                }
                                if let Some(t) = w.todo.pop() {
                                    w.busy += 1;
                                    break Some(t);
                                }
                                if w.busy == 0 {
                                    break None;
                                }
                                w = woken.wait(w).unwrap_or_else(|p| p.into_inner());
                            }
                        };
                        let Some(t) = next else {
                            woken.notify_all();
                            return mine;
                        };
                        // A folder whose listing fails outright is left out, noted (a rewind
                        // leaves it alone), and the other threads are never left waiting.
                        let rel = t.rel.clone();
                        let listed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            read_dir(root, skip, budget, t, &mut mine, &mut more)
                        }));
                        if listed.is_err() {
                            mine.notes.push((
                                rel.clone(),
                                format!(
                                    "{} could not be listed: the listing failed",
                                    root.join(&rel).display()
                                ),
                            ));
                        }
                        let mut w = work.lock().unwrap_or_else(|p| p.into_inner());
                        w.todo.append(&mut more);
                        w.busy -= 1;
                        if budget.over().is_some() {
                            w.todo.clear();
                        }
                        drop(w);
                        woken.notify_all();
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Listing {
                    // A thread that failed leaves its part out, said.
                    notes: vec![(
                        String::new(),
                        "a thread listing the workspace failed; part of it may be left out".into(),
                    )],
                    ..Listing::default()
                })
            })
            .collect()
    });
    out.over = budget.over();
    for p in parts {
        out.found.extend(p.found);
        out.notes.extend(p.notes);
        out.not_utf8.extend(p.not_utf8);
    }
    out
}

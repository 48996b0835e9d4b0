//! `.worktreeinclude`: files a fresh worktree needs that git does not carry (`.env`, local
//! settings). The file sits at the repository's root and uses gitignore syntax; the files
//! of the main checkout that git does not track and that it names are copied into the new
//! worktree, links as links. It is read only when it is a small regular file. Every copy is
//! made relative to folders opened without following a link, so a folder that the worktree
//! has as a link (HEAD commits it as one) sends nothing outside the worktree.

use crate::error::io;
use crate::{Result, WorktreeError, git};
use ignore::gitignore::GitignoreBuilder;
use rustix::fs::{Mode, OFlags};
use std::os::fd::OwnedFd;
use std::path::Path;

/// The largest `.worktreeinclude` read.
const MAX_FILE: u64 = 256 * 1024;

/// Copies into `to` the untracked files of `repo` that its `.worktreeinclude` names; the
/// paths copied.
pub(crate) fn copy(repo: &Path, to: &Path) -> Result<Vec<String>> {
    let file = repo.join(".worktreeinclude");
    let text = match std::fs::symlink_metadata(&file) {
        Err(_) => return Ok(Vec::new()),
        Ok(m) if m.is_file() && m.len() <= MAX_FILE => {
            std::fs::read_to_string(&file).map_err(io(&file))?
        }
        Ok(_) => {
            return Err(WorktreeError::Io {
                path: file.display().to_string(),
                source: std::io::Error::other(format!(
                    "not a regular file of at most {} KiB",
                    MAX_FILE / 1024
                )),
            });
        }
    };
    let mut rules = GitignoreBuilder::new(repo);
    for line in text.lines() {
        // A line git would not take is skipped, as git skips it.
        let _ = rules.add_line(None, line);
    }
    let rules = rules.build().map_err(|e| WorktreeError::Io {
        path: file.display().to_string(),
        source: std::io::Error::other(e.to_string()),
    })?;
    if rules.is_empty() {
        return Ok(Vec::new());
    }
    // Untracked files, ignored ones included: what a fresh checkout lacks.
    let listed = git::run(repo, &["ls-files", "-z", "--others"])?;
    let mut copied = Vec::new();
    for rel in git::paths(&listed) {
        if rel
            .split('/')
            .any(|p| p == ".." || p.eq_ignore_ascii_case(".git"))
        {
            continue;
        }
        if !rules.matched_path_or_any_parents(&rel, false).is_ignore() {
            continue;
        }
        let from = repo.join(&rel);
        let Ok(meta) = std::fs::symlink_metadata(&from) else {
            continue;
        };
        if !(meta.file_type().is_symlink() || meta.is_file()) {
            continue;
        }
        match place(to, &rel, &from, &meta) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                // A path the worktree does not let through (a folder that HEAD commits as a
                // link) is left out, never followed.
                tracing::warn!("{rel} is not copied into the worktree: {e}");
                continue;
            }
        }
        copied.push(rel);
    }
    copied.sort();
    Ok(copied)
}

/// A folder opened for what goes below it: never through a link.
const DIR: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

/// Puts a copy of `from` (a file or a link, `meta` its metadata) at `rel` in the worktree
/// `to`: each folder on the way opened without following a link (made when missing), the
/// file created new there (never over what the worktree has: a tracked file, a link). `false`
/// when something is already there.
fn place(to: &Path, rel: &str, from: &Path, meta: &std::fs::Metadata) -> std::io::Result<bool> {
    let mut parts: Vec<&str> = rel.split('/').collect();
    let Some(name) = parts.pop().filter(|n| !n.is_empty()) else {
        return Ok(false);
    };
    let mut dir: OwnedFd = rustix::fs::openat(rustix::fs::CWD, to, DIR, Mode::empty())?;
    for p in parts {
        match rustix::fs::mkdirat(&dir, p, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        // A link here (or a file) fails: ELOOP, ENOTDIR.
        dir = rustix::fs::openat(&dir, p, DIR, Mode::empty())?;
    }
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(from)?;
        return match rustix::fs::symlinkat(&target, &dir, name) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::EXIST) => Ok(false),
            Err(e) => Err(e.into()),
        };
    }
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let source = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)?;
    // The copy is no wider than the file: a private `.env` stays private.
    let mode = Mode::from_raw_mode(meta.permissions().mode() & 0o777);
    let fd = match rustix::fs::openat(
        &dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::EXIST) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let mut out = std::fs::File::from(fd);
    std::io::copy(&mut std::io::BufReader::new(source), &mut out)?;
    out.flush()?;
    rustix::fs::fchmod(&out, mode)?;
    Ok(true)
}

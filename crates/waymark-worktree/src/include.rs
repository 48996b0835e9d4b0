//! `.worktreeinclude`: files a fresh worktree needs that git does not carry (`.env`, local
//! settings). The file sits at the repository's root and uses gitignore syntax; the files
//! of the main checkout that git does not track and that it names are copied into the new
//! worktree, links as links. It is read only when it is a small regular file.

use crate::{Result, WorktreeError, git, io};
use ignore::gitignore::GitignoreBuilder;
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
        let (from, dest) = (repo.join(&rel), to.join(&rel));
        let Ok(meta) = std::fs::symlink_metadata(&from) else {
            continue;
        };
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        // Never over what the worktree has (a tracked file, or a link that would lead the
        // copy elsewhere).
        if std::fs::symlink_metadata(&dest).is_ok() {
            continue;
        }
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&from).map_err(io(&from))?;
            std::os::unix::fs::symlink(&target, &dest).map_err(io(&dest))?;
        } else if meta.is_file() {
            std::fs::copy(&from, &dest).map_err(io(&from))?;
        } else {
            continue;
        }
        copied.push(rel);
    }
    copied.sort();
    Ok(copied)
}

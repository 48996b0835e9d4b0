//! Moving and deleting a branch the way git's files backend does (compare, lock, write,
//! rename; the reflog appended), but through [`crate::at`]: never through a link.
//!
//! `git update-ref` appends to a reflog through a link at its path (`.git/logs/HEAD` made a
//! link to `~/.bashrc`), with the committer's name from the project's settings, which the
//! agent writes; `git branch -D` removes a reflog through a linked folder; and both follow a
//! linked folder on the way to the ref. A repository keeping its references in a reftable
//! (no files to link) is left to git.

use crate::at::Dir;
use crate::{Result, WorktreeError, db, git};
use std::path::Path;

/// Longest loose ref read; `packed-refs` and a reflog may be larger (past those, a branch is
/// not deleted, and a reflog gets no line).
const REF_MAX: u64 = 4096;
#[cfg(not(test))]
const PACKED_MAX: u64 = 256 * 1024 * 1024;
#[cfg(test)]
const PACKED_MAX: u64 = 1024 * 1024;
const LOG_MAX: u64 = 64 * 1024 * 1024;

/// Where a repository keeps its references.
fn reftable(repo: &Path) -> bool {
    git::run(repo, &["rev-parse", "--show-ref-format"]).is_ok_and(|f| f.trim() == "reftable")
}

/// The branch's name split into its folder under `refs/heads/` and its last part.
fn split(branch: &str) -> (&str, &str) {
    branch.rsplit_once('/').unwrap_or(("", branch))
}

/// The commit `refs/heads/<branch>` names in the project whose common git folder is
/// `common`: the loose ref, else `packed-refs`; `None` when there is no such branch.
fn current(common: &Dir, branch: &str) -> Result<Option<String>> {
    let (folder, leaf) = split(branch);
    let loose = match common.walk(&format!("refs/heads/{folder}"), false) {
        Ok(d) => d.read(leaf, REF_MAX)?,
        Err(_) => None,
    };
    if let Some(text) = loose {
        let text = String::from_utf8_lossy(&text).trim().to_string();
        if text.starts_with("ref:") {
            return Err(WorktreeError::Git {
                command: "refs".into(),
                dir: common.path_of("refs/heads").display().to_string(),
                message: format!(
                    "the branch {branch} is a symbolic reference ({text}); Waymark moves no branch through one"
                ),
            });
        }
        return Ok(Some(text));
    }
    let wanted = format!("refs/heads/{branch}");
    let packed = common.read("packed-refs", PACKED_MAX)?.unwrap_or_default();
    Ok(String::from_utf8_lossy(&packed).lines().find_map(|l| {
        let (id, name) = l.split_once(' ')?;
        (name == wanted && !l.starts_with(['#', '^'])).then(|| id.to_string())
    }))
}

/// One branch move: `refs/heads/<branch>` from `old` to `new`, said in its reflog as
/// `message` by `who`; `heads` are the git folders whose HEAD is on the branch (their
/// `logs/HEAD` gets the line too).
pub(crate) struct BranchMove<'a> {
    pub branch: &'a str,
    pub old: &'a str,
    pub new: &'a str,
    pub who: &'a Option<db::Identity>,
    pub message: &'a str,
    pub heads: &'a [&'a Path],
}

/// Makes move `m` in the project checked out at `repo`, whose common git folder is
/// `common`: only if the branch is still at `old`, under git's lock for it; the reflogs get
/// a line where they exist as files.
pub(crate) fn move_branch(repo: &Path, common: &Path, m: &BranchMove) -> Result<()> {
    let BranchMove {
        branch,
        old,
        new,
        who,
        message,
        heads,
    } = *m;
    let moved_by_git = || {
        let r = format!("refs/heads/{branch}");
        git::run(
            repo,
            &["update-ref", "--no-deref", "-m", message, &r, new, old],
        )
        .map(|_| ())
    };
    if reftable(repo) {
        return moved_by_git();
    }
    let root = Dir::open(common)?;
    let (folder, leaf) = split(branch);
    let dir = root.walk(&format!("refs/heads/{folder}"), true)?;
    let lock = format!("{leaf}.lock");
    if !dir.create(&lock, format!("{new}\n").as_bytes())? {
        return Err(busy(branch, &dir.path_of(&lock)));
    }
    // Under the lock, the branch read again: it must be where the merge found it.
    let now = current(&root, branch);
    let done = match now {
        Ok(Some(at)) if at == old => dir.rename(&lock, leaf),
        Ok(at) => Err(WorktreeError::Git {
            command: "refs".into(),
            dir: repo.display().to_string(),
            message: format!(
                "the branch {branch} moved (to {}) while the merge ran. Nothing was changed.",
                at.as_deref().unwrap_or("nothing")
            ),
        }),
        Err(e) => Err(e),
    };
    if done.is_err() {
        let _ = dir.remove(&lock);
        return done;
    }
    let line = log_line(old, new, who, message);
    if let Ok(logs) = root.walk(&format!("logs/refs/heads/{folder}"), false) {
        logs.append(leaf, line.as_bytes(), LOG_MAX)?;
    }
    for head in heads {
        // A git folder inside the common one is reached from it, never through a link.
        let logs = match head.strip_prefix(common) {
            Ok(rel) => root.walk(&format!("{}/logs", rel.to_string_lossy()), false),
            Err(_) => Dir::open(head).and_then(|d| d.walk("logs", false)),
        };
        if let Ok(logs) = logs {
            logs.append("HEAD", line.as_bytes(), LOG_MAX)?;
        }
    }
    Ok(())
}

/// Deletes `refs/heads/<branch>` (loose, packed, and its reflog), whatever it points at.
pub(crate) fn delete_branch(repo: &Path, common: &Path, branch: &str) -> Result<()> {
    if reftable(repo) {
        let out = git::run_env(repo, &["branch", "-D", branch], &[])?;
        // A branch deleted by hand already is gone all the same.
        if !out.status.success() && !git::said(&out).contains("not found") {
            return git::ok(repo, &["branch", "-D", branch], out).map(|_| ());
        }
        return Ok(());
    }
    let root = Dir::open(common)?;
    let (folder, leaf) = split(branch);
    let wanted = format!("refs/heads/{branch}");
    // Out of `packed-refs` first: git's lock for it taken, then the file read (a `git
    // pack-refs` running meanwhile is waited for by neither, and refused by the lock), and a
    // file too big to read whole is left alone rather than cut.
    if !root.create("packed-refs.lock", b"")? {
        return Err(busy(branch, &root.path_of("packed-refs.lock")));
    }
    let rewritten = (|| {
        let Some(text) = root.read("packed-refs", PACKED_MAX + 1)? else {
            return Ok(());
        };
        if text.len() as u64 > PACKED_MAX {
            return Err(WorktreeError::Git {
                command: "refs".into(),
                dir: root.path_of("packed-refs").display().to_string(),
                message: format!(
                    "packed-refs is over {} MiB: Waymark does not rewrite it. Delete the branch {branch} by hand (git branch -D {branch}).",
                    PACKED_MAX / (1024 * 1024)
                ),
            });
        }
        let text = String::from_utf8_lossy(&text).into_owned();
        let mut kept = String::with_capacity(text.len());
        let mut found = false;
        let mut dropping = false;
        for l in text.lines() {
            // A peeled line (`^…`) belongs to the ref before it.
            if l.starts_with('^') && dropping {
                continue;
            }
            dropping = l.split_once(' ').is_some_and(|(_, n)| n == wanted) && !l.starts_with('#');
            found |= dropping;
            if !dropping {
                kept.push_str(l);
                kept.push('\n');
            }
        }
        if !found {
            return Ok(());
        }
        let temp = format!("packed-refs.waymark-{:016x}", fastrand::u64(..));
        if !root.create(&temp, kept.as_bytes())? {
            return Err(busy(branch, &root.path_of(&temp)));
        }
        let placed = root.rename(&temp, "packed-refs");
        if placed.is_err() {
            let _ = root.remove(&temp);
        }
        placed
    })();
    let _ = root.remove("packed-refs.lock");
    rewritten?;
    // Something else standing at the ref's or the reflog's place (a folder) is not the
    // branch: left, said in the log, and the discard goes on.
    if let Ok(dir) = root.walk(&format!("refs/heads/{folder}"), false)
        && let Err(e) = dir.remove(leaf)
    {
        tracing::warn!("the branch {branch} is not a file: {e}");
    }
    if let Ok(logs) = root.walk(&format!("logs/refs/heads/{folder}"), false)
        && let Err(e) = logs.remove(leaf)
    {
        tracing::warn!("the reflog of {branch} is not a file: {e}");
    }
    Ok(())
}

/// A reflog line as git writes one: old, new, who, when, and the message.
fn log_line(old: &str, new: &str, who: &Option<db::Identity>, message: &str) -> String {
    let clean = |s: &str| s.replace(['<', '>', '\n', '\r'], "");
    let (name, email) = who
        .as_ref()
        .map_or(("Waymark".to_string(), String::new()), |w| {
            (clean(&w.name), clean(&w.email))
        });
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!(
        "{old} {new} {name} <{email}> {secs} +0000\t{}\n",
        clean(message)
    )
}

fn busy(branch: &str, lock: &Path) -> WorktreeError {
    WorktreeError::Git {
        command: "refs".into(),
        dir: lock.display().to_string(),
        message: format!(
            "the branch {branch} is locked ({} exists: another git command is moving it, or one stopped without cleaning up). Try again when it is done, or remove the file if none runs. Nothing was changed.",
            lock.display()
        ),
    }
}

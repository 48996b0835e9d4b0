//! Sessions in their own git worktree (G-34): a worktree of the project's `HEAD` on a new
//! branch `waymark/<name>`, in Waymark's data folder, with the files `.worktreeinclude`
//! names copied in (`.env`, local settings); then reviewed (`status`, `diff`), merged back
//! into the branch it came from with the user's own git identity, or discarded. Every git
//! operation is the real `git`. A merge first checks, without changing anything, that the
//! target checkout has no uncommitted change to the same files and that nothing conflicts;
//! when something does, it says what to do and leaves everything as it was.

mod at;
mod checkout;
pub mod db;
mod error;
mod extension;
mod git;
mod include;
mod index;
mod objects;
mod refs;
mod run;

pub use error::{Result, WorktreeError};
pub use extension::{MIGRATIONS, WorktreeExtension};

use checkout::{Checkout, overlaps};
use error::io;
use std::path::{Path, PathBuf};
use waymark_protocol::checkpoint::{PathChange, PathChangeKind};
use waymark_protocol::worktree::{
    MergeOutcome, MergeStyle, WorktreeDiff, WorktreeReview, WorktreeState,
};

/// A worktree made for a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made {
    pub name: String,
    pub branch: String,
    /// The worktree's root.
    pub path: PathBuf,
    /// The session's workspace in it (the same folder of the project the session was asked
    /// for, which may be below the repository's root).
    pub workspace: PathBuf,
    pub repo: PathBuf,
    pub base_branch: String,
    pub base_commit: String,
    pub included: Vec<String>,
    /// The user's git identity when the worktree was made, before the agent ran: its
    /// commits carry this one, whatever the project's settings say by the time of the merge
    /// (the agent writes them).
    pub author: Option<db::Identity>,
}

impl Made {
    /// The row that records this worktree for session `session_id`, made at `now`.
    pub fn row(&self, session_id: &str, now: i64) -> db::WorktreeRow {
        db::WorktreeRow {
            session_id: session_id.to_string(),
            name: self.name.clone(),
            branch: self.branch.clone(),
            path: self.path.display().to_string(),
            repo: self.repo.display().to_string(),
            base_branch: self.base_branch.clone(),
            base_commit: self.base_commit.clone(),
            state: WorktreeState::Active,
            included: self.included.clone(),
            author: self.author.clone(),
            created_at: now,
        }
    }
}

/// The longest worktree name.
const MAX_NAME: usize = 48;

/// Checks a name given for a worktree (the branch is `waymark/<name>`).
pub fn check_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(WorktreeError::BadName {
            name: name.to_string(),
            why: why.to_string(),
        })
    };
    if name.is_empty() || name.len() > MAX_NAME {
        return bad(&format!("use 1 to {MAX_NAME} characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
    {
        return bad("use lowercase letters, digits, `-`, `_` and `.`");
    }
    if name.starts_with(['-', '.'])
        || name.ends_with('.')
        || name.contains("..")
        || name.ends_with(".lock")
    {
        return bad("it may not start with `-` or `.`, end with `.` or `.lock`, or hold `..`");
    }
    Ok(())
}

/// A name from `hint` (the goal's objective, the first words of the prompt): its first
/// words as a slug, and a short random tail so two goals never share one.
pub fn derive_name(hint: &str) -> String {
    let mut slug = String::new();
    for word in hint
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty() && *w != "goal")
        .take(5)
    {
        if slug.len() + word.len() + 1 > 32 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word.to_ascii_lowercase());
    }
    if slug.is_empty() {
        slug.push_str("session");
    }
    let tail: String = (0..4)
        .map(|_| {
            let n = fastrand::u8(0..36);
            char::from(if n < 10 { b'0' + n } else { b'a' + n - 10 })
        })
        .collect();
    format!("{slug}-{tail}")
}

/// Makes a worktree of the repository `workspace` lies in, at its current commit, on the
/// new branch `waymark/<name>`, under `root` (Waymark's folder for worktrees), and copies in
/// what `.worktreeinclude` names.
pub fn create(workspace: &Path, root: &Path, name: &str) -> Result<Made> {
    check_name(name)?;
    let top = match git::run_env(workspace, &["rev-parse", "--show-toplevel"], &[]) {
        Ok(out) if out.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
        Ok(_) => return Err(WorktreeError::NotARepo(workspace.display().to_string())),
        Err(e) => return Err(e),
    };
    let repo = top.canonicalize().map_err(io(&top))?;
    let inside = workspace
        .canonicalize()
        .map_err(io(workspace))?
        .strip_prefix(&repo)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let shown = repo.display().to_string();
    let base_commit = match git::run_env(&repo, &["rev-parse", "--verify", "-q", "HEAD"], &[])? {
        out if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => return Err(WorktreeError::NoCommit(shown)),
    };
    let Some(base_branch) = branch_of(&repo)? else {
        return Err(WorktreeError::Detached(shown));
    };
    let branch = format!("waymark/{name}");
    let check = git::run_env(&repo, &["check-ref-format", "--branch", &branch], &[])?;
    if !check.status.success() {
        return Err(WorktreeError::BadName {
            name: name.to_string(),
            why: git::said(&check),
        });
    }
    let exists = git::run_env(
        &repo,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ],
        &[],
    )?;
    if exists.status.success() {
        return Err(WorktreeError::Exists(format!("the branch {branch}")));
    }
    let folder = repo
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repo".into());
    let path = root.join(format!("{folder}-{name}"));
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(WorktreeError::Exists(path.display().to_string()));
    }
    waymark_extension::paths::private_dir(root).map_err(io(root))?;
    refuse_links(&repo, name)?;
    let path_s = path.display().to_string();
    // No checkout by `git worktree add`: it would run under the project's settings as they
    // are on the new branch in the new worktree (an `includeIf "onbranch:"` block can name a
    // filter there that no listing from the user's checkout sees). The files come in below,
    // through a sealed folder.
    git::run(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "--no-checkout",
            "-b",
            &branch,
            &path_s,
            &base_commit,
        ],
    )?;
    let path = path.canonicalize().map_err(io(&path))?;
    check_out(&repo, &path, &base_commit)?;
    // The worktree's folder is the user's alone, like everything in the data folder (what
    // is in it keeps the project's bits).
    waymark_extension::paths::private_dir(&path).map_err(io(&path))?;
    let included = include::copy(&repo, &path)?;
    let author = identity(&repo)?;
    Ok(Made {
        author,
        name: name.to_string(),
        branch,
        workspace: path.join(&inside),
        path,
        repo,
        base_branch,
        base_commit,
        included,
    })
}

/// Fills the new worktree at `path` (of the project at `repo`) with `commit`'s files and its
/// index, through a sealed folder: no setting of the project's is in force, so no filter
/// runs; the index is written as a merge writes one ([`index::IndexSwap`]).
fn check_out(repo: &Path, path: &Path, commit: &str) -> Result<()> {
    let wt = git::Worktree::of(repo, path)?;
    let sealed = git::Sealed::of(repo, path.parent().unwrap_or(repo))?;
    let common = wt.gitdir.parent().and_then(Path::parent).unwrap_or(repo);
    let admin = wt.gitdir.file_name().unwrap_or_default().to_string_lossy();
    let dir = at::Dir::open(common)?.walk(&format!("worktrees/{admin}"), false)?;
    let work = sealed.scratch(&format!("new-index-{:016x}", fastrand::u64(..)));
    let swap = index::IndexSwap::begin(dir, work, &path.display().to_string())?;
    sealed.run_in(
        Some(path),
        swap.path(),
        &["read-tree", "--reset", "-u", commit],
    )?;
    swap.finish()
}

/// Refuses a project whose git folder has a link where `git worktree add` writes (the
/// worktrees' folders, the new branch's ref and reflog): git would write through it, outside.
/// A session that ran before could have left one.
fn refuse_links(repo: &Path, name: &str) -> Result<()> {
    let common = git::run(
        repo,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?;
    let common = Path::new(common.trim());
    for rel in [
        "worktrees",
        "refs",
        "refs/heads",
        "refs/heads/waymark",
        "logs",
        "logs/refs",
        "logs/refs/heads",
        "logs/refs/heads/waymark",
    ] {
        let at = common.join(rel);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(WorktreeError::Io {
                path: at.display().to_string(),
                source: std::io::Error::other(
                    "a link stands where git keeps a folder of its own, and git would write through it: remove it (it was not made by git), then try again",
                ),
            });
        }
    }
    // The new branch has no ref and no reflog yet: anything at their place (a link, a second
    // name of a file outside) was left there, and git would append to it.
    for rel in [
        format!("refs/heads/waymark/{name}"),
        format!("logs/refs/heads/waymark/{name}"),
    ] {
        let at = common.join(rel);
        if std::fs::symlink_metadata(&at).is_ok() {
            return Err(WorktreeError::Io {
                path: at.display().to_string(),
                source: std::io::Error::other(
                    "something stands where git would make the new branch's ref or reflog (left by an earlier session?), and git would write into it: remove it, or choose another name, then try again",
                ),
            });
        }
    }
    Ok(())
}

/// The branch `repo` has checked out (its short name), `None` on a detached HEAD. The full
/// reference is read: a tag named like the branch (`git tag main`) would make the short form
/// `heads/main`.
fn branch_of(repo: &Path) -> Result<Option<String>> {
    let out = git::run_env(repo, &["symbolic-ref", "-q", "HEAD"], &[])?;
    let full = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok(out
        .status
        .success()
        .then(|| full.strip_prefix("refs/heads/").map(str::to_string))
        .flatten())
}

/// The git identity `repo`'s settings give now, if they give a whole one.
fn identity(repo: &Path) -> Result<Option<db::Identity>> {
    let get = |key: &str| -> Result<Option<String>> {
        let out = git::run_env(repo, &["config", "--get", key], &[])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|v| !v.is_empty()))
    };
    Ok(match (get("user.name")?, get("user.email")?) {
        (Some(name), Some(email)) => Some(db::Identity { name, email }),
        _ => None,
    })
}

/// The variables that give a commit the identity `who`.
fn identity_env(who: &Option<db::Identity>) -> Vec<(&'static str, String)> {
    let Some(who) = who else {
        return Vec::new();
    };
    vec![
        ("GIT_AUTHOR_NAME", who.name.clone()),
        ("GIT_AUTHOR_EMAIL", who.email.clone()),
        ("GIT_COMMITTER_NAME", who.name.clone()),
        ("GIT_COMMITTER_EMAIL", who.email.clone()),
    ]
}

/// A commit of `tree` on `parents` with `message`, by `who`: only an object, on no branch.
fn commit(
    sealed: &git::Sealed,
    who: &Option<db::Identity>,
    tree: &str,
    parents: &[&str],
    message: &str,
) -> Result<String> {
    let mut args = vec!["commit-tree", tree];
    for p in parents {
        args.extend(["-p", p]);
    }
    args.extend(["-m", message]);
    let env = identity_env(who);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = sealed.run_env(None, None, &args, &env)?;
    Ok(git::ok(Path::new("."), &args, out)?.trim().to_string())
}

/// The tree of everything the worktree holds now, committed or not (ignored files aside),
/// made through a throwaway index so the worktree's own is not touched. Attributes come from
/// `start` (the commit the worktree started at, the user's), never from what the agent
/// committed or wrote since.
fn tree_now(wt: &git::Worktree, sealed: &git::Sealed, start: &str, head: &str) -> Result<String> {
    refuse_nested(wt, sealed, head)?;
    tree_of(wt, sealed, start, head)
}

/// [`tree_now`] without the check for repositories in the worktree (which only makes the
/// refusal clear: a submodule path is never entered here anyway).
fn tree_of(wt: &git::Worktree, sealed: &git::Sealed, start: &str, head: &str) -> Result<String> {
    let index = sealed.scratch(&format!("index-{:016x}", fastrand::u64(..)));
    // Attributes from the commit the worktree started at, not the worktree's
    // `.gitattributes` nor its HEAD (both the agent's to write), where git can.
    let attrs = git::attr_source(start);
    let run = |args: &[&str]| {
        let all: Vec<&str> = attrs
            .iter()
            .map(String::as_str)
            .chain(args.iter().copied())
            .collect();
        sealed.run_in(Some(&wt.work), &index, &all)
    };
    let r = (|| {
        run(&["read-tree", head])?;
        // Submodules stay as HEAD has them: `git add` would run `git status` inside a
        // repository at their path under its own settings, and one may appear at any
        // moment while the agent works.
        let links = gitlinks(&run(&["ls-files", "-z", "--stage"])?);
        if !links.is_empty() {
            let mut args = vec!["update-index", "--skip-worktree", "--"];
            args.extend(links.iter().map(String::as_str));
            run(&args)?;
        }
        run(&["add", "-A"])?;
        let tree = run(&["write-tree"])?.trim().to_string();
        // A repository made since the check is recorded as a new submodule: refused.
        let now = gitlinks(&run(&["ls-tree", "-r", "-z", &tree])?);
        let new: Vec<&String> = now.iter().filter(|l| !links.contains(l)).collect();
        if !new.is_empty() {
            return Err(WorktreeError::NestedRepo {
                paths: list_of(&new),
            });
        }
        Ok(tree)
    })();
    let _ = std::fs::remove_file(&index);
    r
}

/// The submodule paths (mode 160000) of a `-z` listing of `ls-files --stage` or `ls-tree`.
fn gitlinks(z: &str) -> Vec<String> {
    git::paths(z)
        .into_iter()
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            meta.starts_with("160000 ").then(|| path.to_string())
        })
        .collect()
}

/// Refuses a worktree that holds another repository git would enter: one the worktree does
/// not track (`git ls-files` names it `dir/` without going in), or one at the path of a
/// submodule of HEAD or the index. There `git add` runs git inside it, under that
/// repository's own settings (`core.fsmonitor`, filters), which the agent wrote.
fn refuse_nested(wt: &git::Worktree, sealed: &git::Sealed, head: &str) -> Result<()> {
    let index = wt.index();
    let mut found: Vec<String> = git::paths(&sealed.run_in(
        Some(&wt.work),
        &index,
        &["ls-files", "-z", "--others", "--exclude-standard"],
    )?)
    .into_iter()
    .filter(|p| p.ends_with('/'))
    .collect();
    let mut links = gitlinks(&sealed.run_in(None, &index, &["ls-files", "-z", "--stage"])?);
    links.extend(gitlinks(&sealed.run(&["ls-tree", "-r", "-z", head])?));
    for l in links {
        if std::fs::symlink_metadata(wt.work.join(&l).join(".git")).is_ok() && !found.contains(&l) {
            found.push(l);
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    let found: Vec<&String> = found.iter().collect();
    Err(WorktreeError::NestedRepo {
        paths: list_of(&found),
    })
}

/// Which files differ between two trees or commits (`a` → `b`), attributes from `start`
/// (the user's commit the worktree started at).
fn changed(sealed: &git::Sealed, start: &str, a: &str, b: &str) -> Result<Vec<PathChange>> {
    let mut args: Vec<String> = git::attr_source(start);
    args.extend(
        [
            "diff",
            "--no-renames",
            "--no-ext-diff",
            "--ignore-submodules=none",
            "--name-status",
            "-z",
            a,
            b,
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sealed.run(&args)?;
    let mut parts = git::paths(&out).into_iter();
    let mut list = Vec::new();
    while let (Some(status), Some(path)) = (parts.next(), parts.next()) {
        let change = match status.chars().next() {
            Some('A') => PathChangeKind::Added,
            Some('D') => PathChangeKind::Deleted,
            _ => PathChangeKind::Modified,
        };
        list.push(PathChange { path, change });
    }
    Ok(list)
}

/// The commit the worktree's changes are reviewed and merged against: where its history
/// (`HEAD`) meets the branch it merges into, as that branch is now. A worktree that only added
/// commits of its own meets it where it started; one that synced (`git merge main` in the
/// worktree) meets it at the sync, so what the sync brought in is not shown as the agent's
/// change, and what the agent changed after it (an old file written back over a fix) is. With
/// the branch gone, the start. Refused when the histories meet nowhere or at several commits:
/// then no one diff says what a merge would do.
fn meeting_point(
    m: &db::WorktreeRow,
    sealed: &git::Sealed,
    target: Option<&str>,
    head: &str,
) -> Result<String> {
    let Some(target) = target else {
        return Ok(m.base_commit.clone());
    };
    let out = sealed.run_env(None, None, &["merge-base", "--all", target, head], &[])?;
    let text = String::from_utf8_lossy(&out.stdout);
    let bases: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match (out.status.code(), bases.as_slice()) {
        (Some(0), [one]) => Ok((*one).to_string()),
        (Some(0), many) if many.len() > 1 => Err(WorktreeError::TangledHistory {
            base: m.base_branch.clone(),
            bases: many
                .iter()
                .map(|b| b.get(..10).unwrap_or(b))
                .collect::<Vec<_>>()
                .join(", "),
            repo: m.repo.clone(),
        }),
        (Some(1), []) => Err(WorktreeError::UnrelatedHistory {
            base: m.base_branch.clone(),
            repo: m.repo.clone(),
        }),
        _ => Err(WorktreeError::Git {
            command: "git merge-base --all".into(),
            dir: m.path.clone(),
            message: git::said(&out),
        }),
    }
}

/// The commit the branch the worktree came from points at now, if it still exists.
fn branch_tip(m: &db::WorktreeRow) -> Result<Option<String>> {
    let out = git::run_env(
        Path::new(&m.repo),
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{}^{{commit}}", m.base_branch),
        ],
        &[],
    )?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()))
}

/// The tree of `commit`, as the project's store has it (the private store, once made, is
/// checked to agree).
fn tree_of_commit(sealed: &git::Sealed, commit: &str) -> Result<String> {
    Ok(sealed
        .run(&["rev-parse", "--verify", &format!("{commit}^{{tree}}")])?
        .trim()
        .to_string())
}

/// The commit the worktree's HEAD is now, read once: every step of one review or merge works
/// on this one, whatever the worktree's HEAD becomes meanwhile.
fn head_of(wt: &git::Worktree) -> Result<String> {
    Ok(wt
        .run(&["rev-parse", "--verify", "HEAD^{commit}"])?
        .trim()
        .to_string())
}

/// The worktree of row `m` and a sealed git folder for its project.
fn open(m: &db::WorktreeRow) -> Result<(git::Worktree, git::Sealed)> {
    let repo = Path::new(&m.repo);
    let wt = git::Worktree::of(repo, Path::new(&m.path))?;
    // Waymark's worktrees folder, which holds this worktree.
    let home = wt.work.parent().unwrap_or(repo);
    let sealed = git::Sealed::of(repo, home)?;
    Ok((wt, sealed))
}

/// What differs from where the worktree meets its branch now ([`meeting_point`]), committed
/// or not, and the commits made since.
pub fn status(m: &db::WorktreeRow) -> Result<(Vec<PathChange>, u32)> {
    if m.state != WorktreeState::Active {
        return Ok((Vec::new(), 0));
    }
    let (wt, sealed) = &open(m)?;
    let head = head_of(wt)?;
    let tree = tree_now(wt, sealed, &m.base_commit, &head)?;
    let base = meeting_point(m, sealed, branch_tip(m)?.as_deref(), &head)?;
    let files = changed(sealed, &m.base_commit, &base, &tree)?;
    let commits = sealed
        .run(&["rev-list", "--count", &format!("{base}..{head}")])?
        .trim()
        .parse()
        .unwrap_or(0);
    Ok((files, commits))
}

/// Most of a diff shown: past this the text is cut (at a line's end) and says so; the list
/// of files changed is always whole.
pub const DIFF_MAX: usize = 8 * 1024 * 1024;

/// The whole diff a merge would bring in now: from where the worktree meets its branch
/// ([`meeting_point`]) to what it holds (committed or not), at most [`DIFF_MAX`] bytes of it.
pub fn diff(m: &db::WorktreeRow) -> Result<WorktreeDiff> {
    let (wt, mut sealed) = open(m)?;
    let head = head_of(&wt)?;
    let tree = tree_now(&wt, &sealed, &m.base_commit, &head)?;
    let base = meeting_point(m, &sealed, branch_tip(m)?.as_deref(), &head)?;
    // What the diff shows is read from objects checked against their names.
    let base_tree = tree_of_commit(&sealed, &base)?;
    sealed.seal_objects(&objects::Needed {
        commits: &[&base],
        trees: &[&base_tree, &tree],
        changes: &[(&base_tree, &tree)],
    })?;
    let sealed = &sealed;
    // Every file as text, its attributes from where the worktree started: the worktree's
    // own `.gitattributes` (`* -diff`) must not hide a change from the review, nor settings
    // hide a submodule's new commit; the names with git's own prefixes, whatever the
    // settings say (`diff.srcPrefix` could make a file look like another).
    let mut args = git::attr_source(&m.base_commit);
    args.extend(
        [
            "diff",
            "--no-renames",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules=none",
            "--submodule=short",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--text",
            &base,
            &tree,
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (mut text, cut) = sealed.run_capped(&args, DIFF_MAX)?;
    if cut {
        // Every changed file is named, so nothing the merge brings in goes unlisted (a git
        // command to see the rest would read the project's objects and settings unchecked).
        let files = changed(sealed, &m.base_commit, &base, &tree)?;
        text.push_str(&format!(
            "\n[The diff goes on past {} MiB and is cut here. All {} file(s) it changes:]\n",
            DIFF_MAX / (1024 * 1024),
            files.len()
        ));
        for f in files {
            let sign = match f.change {
                PathChangeKind::Added => 'A',
                PathChangeKind::Deleted => 'D',
                PathChangeKind::Modified => 'M',
            };
            // Escaped: a name holding a line break cannot fake lines of the list.
            let shown = waymark_protocol::display::escape_line(&f.path);
            text.push_str(&format!("{sign} {shown}\n"));
        }
    }
    Ok(WorktreeDiff {
        base,
        tree,
        diff: text,
    })
}

/// Merges the worktree into the branch it came from, bringing in exactly the diff a review
/// shows ([`diff`]): from where the worktree's history meets that branch now to what the
/// worktree holds, applied to the branch's tip as a three-way merge. What the worktree holds is
/// committed first (one commit, `message`), then a merge commit of the result is made, both
/// with the user's git identity as it was when the worktree was made, and the user's checkout
/// fast-forwards to it.
///
/// Refused, changing nothing (no branch moves), when the target checkout has uncommitted
/// changes to the same files, is on another branch or mid-operation, the merge conflicts, or
/// git refuses the last step. With `reviewed`, refused when what it would bring in is no longer
/// the diff reviewed. What is merged is the tree checked, never the worktree read again. No
/// setting of the project's is in force for any step that reads, merges or writes files
/// ([`git::Sealed`]).
pub fn merge(
    m: &db::WorktreeRow,
    message: &str,
    reviewed: Option<&WorktreeReview>,
) -> Result<MergeOutcome> {
    merge_as(m, message, reviewed, MergeStyle::Merge)
}

/// [`merge`] in the `style` asked for: with [`MergeStyle::Squash`] the branch takes one
/// ordinary commit, `message` its message, of the same merged tree, on the branch's tip
/// alone; every check and refusal is the same.
pub fn merge_as(
    m: &db::WorktreeRow,
    message: &str,
    reviewed: Option<&WorktreeReview>,
    style: MergeStyle,
) -> Result<MergeOutcome> {
    if m.state != WorktreeState::Active {
        return Err(WorktreeError::NotActive(m.state.as_str()));
    }
    let repo = Path::new(&m.repo);
    let (wt, mut sealed) = open(m)?;
    let wt = &wt;
    let checkout = Checkout::of(repo)?;
    if let Some(what) = checkout.in_progress()? {
        return Err(WorktreeError::TargetBusy {
            repo: m.repo.clone(),
            what,
        });
    }
    let now = branch_of(repo)?;
    if now.as_deref() != Some(m.base_branch.as_str()) {
        return Err(WorktreeError::BranchMoved {
            repo: m.repo.clone(),
            now: now.unwrap_or_else(|| "a detached HEAD".into()),
            base: m.base_branch.clone(),
        });
    }
    // The target as it is now, named by its commit from here on: every step below works on
    // this one, and the last refuses if the branch moved meanwhile.
    let target = git::run(
        repo,
        &[
            "rev-parse",
            "--verify",
            &format!("refs/heads/{}^{{commit}}", m.base_branch),
        ],
    )?
    .trim()
    .to_string();
    let head = head_of(wt)?;
    let tree = tree_now(wt, &sealed, &m.base_commit, &head)?;
    let base = meeting_point(m, &sealed, Some(&target), &head)?;
    if reviewed.is_some_and(|r| r.tree != tree || r.base != base) {
        return Err(WorktreeError::ChangedSinceReview);
    }
    // Everything there is already on the branch (the review showed no change).
    let base_tree = tree_of_commit(&sealed, &base)?;
    if base_tree == tree {
        return Ok(MergeOutcome {
            committed: None,
            merged: target,
            style,
            base_branch: m.base_branch.clone(),
            files: Vec::new(),
        });
    }
    // Every step from here reads objects checked against their names, the same the review
    // read, and writes its own into a private store until the checkout moves.
    let target_tree = tree_of_commit(&sealed, &target)?;
    sealed.seal_objects(&objects::Needed {
        commits: &[&base, &target],
        trees: &[&base_tree, &tree, &target_tree],
        changes: &[(&base_tree, &tree), (&base_tree, &target_tree)],
    })?;
    let sealed = &sealed;
    // Rows from before the identity was recorded: the settings as they are now.
    let who = match &m.author {
        Some(a) => Some(a.clone()),
        None => identity(repo)?,
    };
    // What is merged: one commit of the reviewed diff, what the worktree holds on top of the
    // meeting point, made but not put on any branch, so a refusal leaves everything as it
    // was. None of the worktree's own commits comes in: their history was never reviewed (an
    // `-s ours` merge there would mark another branch merged without its changes).
    let tip = commit(sealed, &who, &tree, &[&base], message)?;
    // The three-way merge of `base` → `tip` onto the target, `base` named (git 2.40 and
    // later) though it is where `tip` and the target meet anyway: what comes in is exactly
    // the reviewed diff. Attributes come from the target, the user's.
    let mut args = git::attr_source(&target);
    args.extend(["merge-tree", "--write-tree", "--name-only", "-z"].map(String::from));
    if git::has_attr_source() {
        args.push(format!("--merge-base={base}"));
    }
    args.extend([target.clone(), tip.clone()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let check = sealed.run_env(None, None, &args, &[])?;
    let out = String::from_utf8_lossy(&check.stdout).into_owned();
    let mut listed = out
        .split("\0\0")
        .next()
        .map(git::paths)
        .unwrap_or_default()
        .into_iter();
    let merged_tree = match check.status.code() {
        Some(0) => listed.next().unwrap_or_default(),
        Some(1) => {
            // The tree, then the conflicted files, then the messages.
            let conflicted: Vec<String> = listed.skip(1).collect();
            let conflicted: Vec<&String> = conflicted.iter().collect();
            return Err(WorktreeError::Conflict {
                files: list_of(&conflicted),
                branch: m.branch.clone(),
                base: m.base_branch.clone(),
                repo: m.repo.clone(),
            });
        }
        _ => {
            return Err(WorktreeError::Git {
                command: "git merge-tree".into(),
                dir: m.repo.clone(),
                message: git::said(&check),
            });
        }
    };
    // What the checkout's update touches: the merge's result against the target.
    let files: Vec<String> = changed(sealed, &m.base_commit, &target, &merged_tree)?
        .into_iter()
        .map(|c| c.path)
        .collect();
    let mut dirty = checkout.dirty(sealed, &target)?;
    dirty.extend(checkout.edited(sealed, &target, &files)?);
    let both: Vec<&String> = files
        .iter()
        .filter(|f| dirty.iter().any(|d| overlaps(f, d)))
        .collect();
    if !both.is_empty() {
        return Err(WorktreeError::TargetDirty {
            repo: m.repo.clone(),
            files: list_of(&both),
        });
    }
    let ignored = checkout.ignored_in_the_way(sealed, &files)?;
    if !ignored.is_empty() {
        return Err(WorktreeError::TargetIgnored {
            repo: m.repo.clone(),
            files: list_of(&ignored.iter().collect::<Vec<_>>()),
        });
    }
    // The merge commit: the result checked, on the target and the worktree's commit; or,
    // squashed, on the target alone with the user's message. It is only an object until the
    // checkout moves to it.
    let merged = match style {
        MergeStyle::Merge => {
            let title = format!(
                "Merge {}: {}",
                m.branch,
                message.lines().next().unwrap_or("")
            );
            commit(sealed, &who, &merged_tree, &[&target, &tip], &title)?
        }
        MergeStyle::Squash => commit(sealed, &who, &merged_tree, &[&target], message)?,
    };
    sealed.publish_objects()?;
    checkout.fast_forward(sealed, &m.base_branch, &who, &target, &merged)?;
    // Merged: the worktree's branch takes the commit merged (if it still points where it
    // did; the ref itself, never one it names), and its index follows it; files changed
    // since stay as changes there. Nothing is written through a link.
    let moved = refs::move_branch(
        repo,
        &checkout.common,
        &refs::BranchMove {
            branch: &m.branch,
            old: &head,
            new: &tip,
            who: &who,
            message: "waymark: merge",
            heads: &[&wt.gitdir],
        },
    )
    .and_then(|()| {
        let admin = wt.gitdir.file_name().unwrap_or_default().to_string_lossy();
        let dir = at::Dir::open(&checkout.common)?.walk(&format!("worktrees/{admin}"), false)?;
        let work = sealed.scratch(&format!("worktree-index-{:016x}", fastrand::u64(..)));
        let swap = index::IndexSwap::begin(dir, work, &m.path)?;
        sealed.run_in(None, swap.path(), &["read-tree", &tip])?;
        swap.finish()
    });
    if let Err(e) = moved {
        tracing::warn!("merged, but the worktree's branch stays where it was: {e}");
    }
    Ok(MergeOutcome {
        committed: Some(tip),
        merged,
        style,
        base_branch: m.base_branch.clone(),
        files,
    })
}

/// Removes the worktree and its branch. The folder is first moved, under a name of
/// Waymark's, out of the agent's reach, then removed without following a link: a worktree
/// folder replaced by a link (before or during the discard) loses the link alone. git's
/// folder for it goes the same way, even for a worktree the agent locked, and the branch
/// with its reflog ([`refs::delete_branch`]); no git command writes there.
pub fn discard(m: &db::WorktreeRow) -> Result<()> {
    if m.state == WorktreeState::Discarded {
        return Err(WorktreeError::NotActive(m.state.as_str()));
    }
    let repo = Path::new(&m.repo);
    let path = Path::new(&m.path);
    let common = git::run(
        repo,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?;
    let common = PathBuf::from(common.trim());
    // The branch first: a step that can be refused (a lock another git holds) comes before
    // anything is removed, so a refusal changes nothing.
    refs::delete_branch(repo, &common, &m.branch)?;
    // git's folder for the worktree, found before the worktree goes (by the path recorded:
    // the folder may be a link, or gone).
    let admin = git::admin_name(&common, path).ok().flatten();
    if std::fs::symlink_metadata(path).is_ok() {
        let home = path.parent().unwrap_or(repo);
        let gone = home.join(format!(".waymark-discard-{:016x}", fastrand::u64(..)));
        std::fs::rename(path, &gone).map_err(io(path))?;
        // A rename moves a link itself; what was moved is looked at, not what it names.
        let removed = match std::fs::symlink_metadata(&gone) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&gone),
            _ => std::fs::remove_file(&gone),
        };
        removed.map_err(io(&gone))?;
    }
    // git's folder for the worktree goes the same way: moved out of `worktrees/` through
    // open folders, then removed without following a link. (`git worktree prune` would
    // remove every entry there that looks stale, through a link the agent put there.)
    // Where that cannot be done (a link in the way), git's record stays, stale, and git
    // lists the worktree as prunable: nothing of the user's is at stake.
    if let Some(admin) = admin {
        let gone = format!(".waymark-gone-{:016x}", fastrand::u64(..));
        let moved = at::Dir::open(&common)
            .and_then(|root| root.walk("worktrees", false)?.move_to(&admin, &root, &gone));
        match moved {
            Ok(()) => {
                let gone = common.join(gone);
                std::fs::remove_dir_all(&gone).map_err(io(&gone))?;
            }
            Err(e) => tracing::warn!("git's record of the worktree stays: {e}"),
        }
    }
    Ok(())
}

/// Up to ten paths, then how many more.
fn list_of(paths: &[&String]) -> String {
    let mut s: Vec<String> = paths.iter().take(10).map(|p| p.to_string()).collect();
    if paths.len() > 10 {
        s.push(format!("and {} more", paths.len() - 10));
    }
    s.join(", ")
}

#[cfg(test)]
mod tests;

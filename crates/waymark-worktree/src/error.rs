//! What goes wrong with a worktree, with a stable code for each kind, and the I/O error of a
//! path.

use std::path::Path;

/// What went wrong, in words that say what to do.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("git is not installed (or not on PATH): worktrees need it")]
    NoGit,
    #[error(
        "{0} is not in a git repository: a goal in its own worktree needs one (run `git init` and commit, or start without a worktree)"
    )]
    NotARepo(String),
    #[error(
        "{0} has no commit yet: a worktree starts from the current commit (commit once, then try again)"
    )]
    NoCommit(String),
    #[error(
        "{0} is not on a branch (detached HEAD): a worktree's work is merged back into the branch it came from, so check out a branch first"
    )]
    Detached(String),
    #[error("`{name}` cannot name a worktree: {why}")]
    BadName { name: String, why: String },
    #[error("{0} already exists: choose another name")]
    Exists(String),
    #[error("{command} failed in {dir}: {message}")]
    Git {
        command: String,
        dir: String,
        message: String,
    },
    #[error(
        "the worktree holds another git repository ({paths}): Waymark runs no git command over a repository made in the worktree, since its settings could name programs to run. Remove it from the worktree (or discard the worktree), then try again"
    )]
    NestedRepo { paths: String },
    #[error(
        "the merge is refused: it would overwrite or remove what {repo} ignores ({files}), which git would do without asking. Move those files aside there, or take them out of the worktree's changes, then merge again. Nothing was changed."
    )]
    TargetIgnored { repo: String, files: String },
    #[error(
        "the merge is refused: {repo} is in the middle of a {what}. Finish it or abort it there, then merge again. Nothing was changed."
    )]
    TargetBusy { repo: String, what: &'static str },
    #[error(
        "the merge is refused: what it would bring in changed since you reviewed it (the worktree's files, or the commit where its history meets the branch it merges into). Review the changes again, then merge. Nothing was changed."
    )]
    ChangedSinceReview,
    #[error(
        "the worktree's history shares no commit with {base} any more (its branch was moved to unrelated history), so Waymark cannot show what a merge would bring in. Merge by hand in {repo} if you mean to, or discard the worktree."
    )]
    UnrelatedHistory { base: String, repo: String },
    #[error(
        "the worktree's history meets {base} at several commits ({bases}: criss-cross merges), so no single diff shows what a merge would bring in. Merge by hand in {repo} if you mean to, or discard the worktree."
    )]
    TangledHistory {
        base: String,
        bases: String,
        repo: String,
    },
    #[error(
        "{path} is no longer a worktree that {repo} knows of (it was removed or moved by hand): discard it, then start a new one"
    )]
    Unregistered { path: String, repo: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the merge is refused: {repo} has uncommitted changes to files the worktree also changed ({files}). Commit or stash them there, then merge again. Nothing was changed."
    )]
    TargetDirty { repo: String, files: String },
    #[error(
        "the merge is refused: it conflicts in {files}. Merge {branch} by hand in {repo} (git merge {branch}), or bring {base} into the worktree and resolve it there, then merge again. Nothing was changed."
    )]
    Conflict {
        files: String,
        branch: String,
        base: String,
        repo: String,
    },
    #[error(
        "{repo} is on {now}, not on {base}, which the worktree came from: check out {base} there to merge. Nothing was changed."
    )]
    BranchMoved {
        repo: String,
        now: String,
        base: String,
    },
    #[error(
        "{0} is no longer the worktree's own folder (it was moved, and a link or something else stands at its path): Waymark reads, merges and removes nothing through it. Put the folder back, or discard the worktree"
    )]
    Replaced(String),
    #[error("the worktree is {0}: there is nothing to do with it any more")]
    NotActive(&'static str),
    #[error(
        "the project's object store ({repo}) holds objects that are missing or whose content does not match their names ({ids}): something rewrote them behind git's back, so Waymark shows and merges nothing from it. Nothing was changed. Run `git fsck` in the project to see the damage."
    )]
    DamagedObjects { repo: String, ids: String },
    #[error(
        "{repo}'s index is in use ({lock} exists: another git command is running there, or one stopped without cleaning up). Wait for it to finish, or remove the file if none runs, then merge again. Nothing was changed."
    )]
    IndexBusy { repo: String, lock: String },
}

impl WorktreeError {
    /// A stable code for front ends.
    pub fn code(&self) -> &'static str {
        match self {
            WorktreeError::NoGit => "git_missing",
            WorktreeError::NotARepo(_) => "not_a_repository",
            WorktreeError::NoCommit(_) => "no_commit",
            WorktreeError::Detached(_) => "detached_head",
            WorktreeError::BadName { .. } => "bad_worktree_name",
            WorktreeError::Exists(_) => "worktree_exists",
            WorktreeError::Git { .. } => "git_failed",
            WorktreeError::Unregistered { .. } => "worktree_unregistered",
            WorktreeError::NestedRepo { .. } => "nested_repository",
            WorktreeError::TargetIgnored { .. } => "target_ignored",
            WorktreeError::TargetBusy { .. } => "target_busy",
            WorktreeError::ChangedSinceReview => "changed_since_review",
            WorktreeError::UnrelatedHistory { .. } => "unrelated_history",
            WorktreeError::TangledHistory { .. } => "tangled_history",
            WorktreeError::Io { .. } => "io",
            WorktreeError::TargetDirty { .. } => "target_dirty",
            WorktreeError::Conflict { .. } => "merge_conflict",
            WorktreeError::BranchMoved { .. } => "branch_moved",
            WorktreeError::Replaced(_) => "worktree_replaced",
            WorktreeError::NotActive(_) => "worktree_closed",
            WorktreeError::DamagedObjects { .. } => "damaged_objects",
            WorktreeError::IndexBusy { .. } => "index_busy",
        }
    }
}

impl From<WorktreeError> for waymark_extension::Error {
    fn from(e: WorktreeError) -> Self {
        waymark_extension::Error::Worktree {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

pub type Result<T> = std::result::Result<T, WorktreeError>;

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorktreeError + '_ {
    move |source| WorktreeError::Io {
        path: path.display().to_string(),
        source,
    }
}

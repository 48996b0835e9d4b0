//! A session in its own git worktree (G-34), as front ends see it.

use serde::{Deserialize, Serialize};

/// Where a worktree stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum WorktreeState {
    /// The session works in it.
    Active,
    /// Its branch was merged into the branch it came from.
    Merged,
    /// Removed, with its branch.
    Discarded,
}

impl WorktreeState {
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }
}

/// A session's worktree and how it differs from where it came from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct WorktreeView {
    pub name: String,
    /// `waymark/<name>`.
    pub branch: String,
    /// The worktree's folder (the session's workspace).
    pub path: String,
    /// The main checkout it was made from.
    pub repo: String,
    /// The branch it came from, which a merge brings it into.
    pub base_branch: String,
    /// The commit it started at.
    pub base_commit: String,
    pub state: WorktreeState,
    /// Files a merge would change: what differs from where its history meets the branch it
    /// merges into (see [`WorktreeDiff::base`]), committed on its branch or not yet.
    pub changed: Vec<crate::checkpoint::PathChange>,
    /// Commits on its branch since that meeting point.
    pub commits: u32,
    /// Files copied into it at the start because `.worktreeinclude` named them.
    pub included: Vec<String>,
    /// Why what changed could not be read (then `changed` is empty and a merge is refused
    /// for the same reason; discarding still works).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The message a merge writes when the user gives none: the first line of the goal's
    /// objective, else of the session's title (shown in the merge box, to keep or edit).
    #[serde(default)]
    pub merge_message: String,
}

/// How a worktree's work lands on the branch it came from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum MergeStyle {
    /// A merge commit whose second parent is the commit of what the worktree held: the
    /// branch's history shows where the work came from.
    #[default]
    Merge,
    /// One ordinary commit on the branch, with the message given: the work as a single
    /// change, the branch's history kept linear.
    Squash,
}

/// What merging a worktree did.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MergeOutcome {
    /// The commit made of what the worktree held (none when everything was committed).
    pub committed: Option<String>,
    /// The merge commit on the base branch (or the commit it fast-forwarded to); for a
    /// squash, the one commit made there.
    pub merged: String,
    /// How it was merged.
    #[serde(default)]
    pub style: MergeStyle,
    pub base_branch: String,
    pub files: Vec<String>,
}

/// A worktree's changes as the user reviews them: exactly what a merge would bring in, the
/// diff from where the worktree's history meets the branch it merges into to what it holds;
/// a merge may be asked to hold to both ends.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct WorktreeDiff {
    /// The commit the diff is from: where the worktree's history meets its branch now (the
    /// commit it started at, unless it brought that branch in since, `git merge main`).
    pub base: String,
    /// The git tree of everything the worktree held when the diff was taken.
    pub tree: String,
    /// `git diff` from `base` to that tree.
    pub diff: String,
}

/// The ends of a diff the user reviewed ([`WorktreeDiff::base`], [`WorktreeDiff::tree`]): a
/// merge given them brings in exactly that diff, or is refused.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct WorktreeReview {
    pub base: String,
    pub tree: String,
}

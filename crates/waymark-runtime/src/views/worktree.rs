//! A session's git worktree (G-34): where it stands, its diff, merging it into the branch
//! it came from and discarding it. Merging and discarding need the session idle: no turn
//! open and no other process driving it.

use crate::error::{Error, Result};
use crate::runtime::{Runtime, pid_alive};
use crate::store;
use std::path::{Path, PathBuf};
use waymark_protocol::worktree::{
    MergeOutcome, MergeStyle, WorktreeDiff, WorktreeState, WorktreeView,
};
use waymark_worktree::db::{self, WorktreeRow, WorktreeWrites as _};

impl Runtime {
    /// For a workspace in one of Waymark's worktrees, the project's git folder, found from
    /// the worktree's row (never from the worktree's `.git` file, which the agent may write).
    pub(crate) fn project_git(&self, workspace: &Path) -> Vec<PathBuf> {
        let trees = self
            .store()
            .view(|c| Ok::<_, Error>(waymark_worktree::db::on_disk(c).unwrap_or_default()))
            .unwrap_or_default();
        trees
            .into_iter()
            .filter(|w| workspace.starts_with(&w.path))
            .map(|w| Path::new(&w.repo).join(".git"))
            .filter(|g| g.is_dir())
            .collect()
    }

    fn worktree_row(&self, id: &str) -> Result<WorktreeRow> {
        self.store()
            .view(|c| {
                store::sessions::get(c, id)?
                    .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
                db::get(c, id)
            })?
            .ok_or_else(|| {
                Error::refused(format!(
                    "session {id} has no worktree of its own: it works in the project's checkout"
                ))
            })
    }

    /// Session `id`'s worktree and what changed in it; `None` when it has none.
    pub fn worktree(&self, id: &str) -> Result<Option<WorktreeView>> {
        let Some(mut view) = self.worktree_brief(id)? else {
            return Ok(None);
        };
        let row = self.worktree_row(id)?;
        // A worktree whose changes cannot be read is still shown (and can be discarded).
        match waymark_worktree::status(&row) {
            // Paths shown escaped (bidi and invisible characters in a file name the agent
            // chose), as the CLI prints them.
            Ok((mut changed, commits)) => {
                for c in &mut changed {
                    c.path = waymark_protocol::display::escape_line(&c.path);
                }
                view.changed = changed;
                view.commits = commits;
            }
            Err(e) => view.problem = Some(e.to_string()),
        }
        Ok(Some(view))
    }

    /// Session `id`'s worktree as recorded, without running git (nothing changed listed):
    /// what a discard or the first line of a run needs, however the worktree's files stand.
    pub fn worktree_brief(&self, id: &str) -> Result<Option<WorktreeView>> {
        let row = match self.worktree_row(id) {
            Ok(r) => r,
            Err(Error::Refused { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some(WorktreeView {
            name: row.name,
            branch: row.branch,
            path: row.path,
            repo: row.repo,
            base_branch: row.base_branch,
            base_commit: row.base_commit,
            state: row.state,
            changed: Vec::new(),
            commits: 0,
            included: row.included,
            problem: None,
            merge_message: self.default_merge_message(id)?,
        }))
    }

    /// The merge message when the user gives none: from the goal's objective, else the
    /// session's title (see [`default_merge_message`]).
    fn default_merge_message(&self, id: &str) -> Result<String> {
        let text = match self.goal(id)? {
            Some(g) => Some(g.objective),
            None => self
                .store()
                .view(|c| store::sessions::get(c, id))?
                .and_then(|s| s.title),
        };
        Ok(default_merge_message(text.as_deref().unwrap_or(""), id))
    }

    /// The diff from the worktree's start to what it holds now (committed or not).
    pub fn worktree_diff(&self, id: &str) -> Result<WorktreeDiff> {
        let mut d = waymark_worktree::diff(&self.worktree_row(id)?)?;
        // Bidi and invisible characters shown escaped, as in every other review.
        d.diff = waymark_protocol::display::escape_block(&d.diff);
        Ok(d)
    }

    /// Refuses while a turn of session `id` is open or another process drives it.
    fn idle(&self, id: &str, what: &str) -> Result<()> {
        let now = self.options().clock.now_ms();
        let stale = self.options().lease_stale.as_millis() as i64;
        let (open, lease) = self.store().view(|c| {
            Ok::<_, Error>((
                store::turns::open_turn(c, id)?,
                store::sessions::lease(c, id)?,
            ))
        })?;
        if let Some(t) = open {
            return Err(Error::Busy(format!(
                "turn {} of session {id} is open: stop it or answer its question, then {what}",
                t.id
            )));
        }
        if let Some(l) = lease
            && l.pid != i64::from(std::process::id())
            && now - l.heartbeat < stale
            && pid_alive(l.pid)
        {
            return Err(Error::Busy(format!(
                "session {id} is driven by another process (pid {}): wait for it to finish, then {what}",
                l.pid
            )));
        }
        Ok(())
    }

    /// Merges session `id`'s worktree into the branch it came from: what it holds is
    /// committed (the message: the goal's objective, else the session's title), then
    /// merged, with the user's own git identity. Refused, changing nothing, on uncommitted
    /// changes to the same files in the target checkout or a conflict.
    ///
    /// `reviewed`: the ends of the diff the user reviewed ([`WorktreeDiff::base`] and
    /// [`WorktreeDiff::tree`]); the merge is refused when it would bring in anything else now.
    /// `style`: a merge commit, or the work squashed into one commit.
    pub fn worktree_merge(
        &self,
        id: &str,
        reviewed: Option<&waymark_protocol::worktree::WorktreeReview>,
        message: Option<&str>,
        style: MergeStyle,
    ) -> Result<MergeOutcome> {
        self.idle(id, "merge")?;
        let row = self.worktree_row(id)?;
        let message = match message {
            Some(m) => m.to_string(),
            None => self.default_merge_message(id)?,
        };
        self.merge_as(id, &row, reviewed, &merge_message(&message)?, style)
    }

    /// The merge itself, its commits saying `message`.
    fn merge_as(
        &self,
        id: &str,
        row: &WorktreeRow,
        reviewed: Option<&waymark_protocol::worktree::WorktreeReview>,
        message: &str,
        style: MergeStyle,
    ) -> Result<MergeOutcome> {
        let done = waymark_worktree::merge_as(row, message, reviewed, style)?;
        self.store().write(self.options().clock.now_ms(), |tx| {
            tx.set_worktree_state(id, WorktreeState::Merged)
        })?;
        Ok(done)
    }

    /// Removes session `id`'s worktree and its branch (the caller has asked the user).
    pub fn worktree_discard(&self, id: &str) -> Result<()> {
        self.idle(id, "discard")?;
        let row = self.worktree_row(id)?;
        waymark_worktree::discard(&row)?;
        self.store().write(self.options().clock.now_ms(), |tx| {
            tx.set_worktree_state(id, WorktreeState::Discarded)
        })?;
        Ok(())
    }
}

/// The most bytes a merge message the user wrote may hold.
const MERGE_MESSAGE_BYTES: usize = 4096;

/// A merge message the user wrote, checked: its first line is the commit's subject, so it
/// must say something, and a NUL or a huge text is refused rather than cut.
fn merge_message(text: &str) -> Result<String> {
    let t = text.trim();
    if t.lines().next().is_none_or(|l| l.trim().is_empty()) {
        return Err(Error::refused(
            "the merge message is empty: its first line names the change".into(),
        ));
    }
    if t.len() > MERGE_MESSAGE_BYTES {
        return Err(Error::refused(format!(
            "the merge message is {} bytes, more than {MERGE_MESSAGE_BYTES}",
            t.len()
        )));
    }
    if t.contains('\0') {
        return Err(Error::refused("the merge message holds a NUL byte".into()));
    }
    Ok(t.to_string())
}

/// The merge message when the user wrote none, from `text` (a goal's objective or the
/// session's title, which the agent may have written): only its first line, control
/// characters dropped and cut to 200 characters, so it cannot add lines (trailers such as
/// `Signed-off-by:`) the user never saw.
fn default_merge_message(text: &str, id: &str) -> String {
    let first: String = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    if first.trim().is_empty() {
        format!("Work of Waymark session {id}")
    } else {
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objective_the_agent_wrote_cannot_add_lines_to_the_merge() {
        let forged = "Add the feature\n\nSigned-off-by: Ada <ada@example.invalid>\n";
        assert_eq!(default_merge_message(forged, "s-1"), "Add the feature");
        assert_eq!(
            default_merge_message("\n  \nFix\u{1b}[2J it", "s-1"),
            "Fix[2J it"
        );
        assert_eq!(
            default_merge_message("", "s-1"),
            "Work of Waymark session s-1"
        );
        assert_eq!(default_merge_message(&"x".repeat(500), "s-1").len(), 200);
        assert!(merge_message(" \n ").is_err());
        assert!(merge_message("a\0b").is_err());
        assert!(merge_message(&"y".repeat(5000)).is_err());
    }
}

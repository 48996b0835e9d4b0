//! The worktree extension: its table, and `/worktree`, which says where the session's
//! worktree stands and how to finish it.

use crate::db;
use std::sync::Arc;
use waymark_extension::Extension;
use waymark_extension::commands::{CommandContext, CommandSpec, SlashCommand};
use waymark_extension::error::{Error, Result};
use waymark_protocol::display::escape_line;

/// The extension's migrations (its own `worktrees` table).
pub const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_worktrees.sql"),
    include_str!("../migrations/0002_author.sql"),
];

/// Sessions in their own git worktree.
pub struct WorktreeExtension;

impl Extension for WorktreeExtension {
    fn name(&self) -> &'static str {
        "worktree"
    }
    fn migrations(&self) -> &'static [&'static str] {
        MIGRATIONS
    }
    fn commands(&self) -> Vec<Arc<dyn SlashCommand>> {
        vec![Arc::new(WorktreeCommand)]
    }
}

/// `/worktree`: the session's worktree, what changed in it, and how to merge or discard it.
struct WorktreeCommand;

impl SlashCommand for WorktreeCommand {
    fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: "worktree",
            usage: "/worktree",
            summary: "where the session's git worktree stands, and how to merge or discard it",
            details: "",
        }
    }

    fn run(&self, cx: &mut CommandContext<'_, '_>, _args: &str) -> Result<String> {
        let Some(w) = db::get(cx.tx.conn(), cx.session_id)? else {
            return Err(Error::refused(
                "this session has no worktree of its own: it works in the project's checkout. Start one with `waymark exec --worktree \"…\"` or Run in a new worktree in the app.".into(),
            ));
        };
        // No git runs here: a command runs inside the session's transaction, and git can be
        // made to wait by what the agent left in the worktree.
        let sid = cx.session_id;
        Ok(format!(
            "Worktree {} on branch {} ({}), from {} at {} in {}.\nWhat changed: waymark worktree --session {sid} status (or diff)\nMerge into {}: waymark worktree --session {sid} merge\nDiscard: waymark worktree --session {sid} discard",
            escape_line(&w.path),
            escape_line(&w.branch),
            w.state.as_str(),
            escape_line(&w.base_branch),
            &w.base_commit[..w.base_commit.len().min(10)],
            escape_line(&w.repo),
            escape_line(&w.base_branch),
        ))
    }
}

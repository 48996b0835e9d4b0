//! `waymark goal …`: the goal, its timeline, and replying to a blocked goal.

use crate::term::outln;
use crate::{DEFAULT_WAIT_LIMIT, drive, now_ms, print_events, submit_without_running};
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
    }
    Ok(ExitCode::SUCCESS)
}

//! `waymark exec`'s exit codes, one per way a run ends, so a script can tell "done" from
//! "needs you" from "out of budget" (G-42). The table in README.md says the same.
//!
//! | code | the run ended…                                                            |
//! |------|---------------------------------------------------------------------------|
//! | 0    | done: the turn finished, and the goal (if any) is complete or still active |
//! | 1    | in an error (the model could not be reached, a tool failed…)              |
//! | 2    | before it started: the command line or the settings are wrong            |
//! | 3    | needing you: a question waits, or the goal is blocked on you              |
//! | 4    | at a usage limit that lifts later than `--wait-limit`, or never by itself |
//! | 5    | with the goal's budget used up (tokens, turns, time or cost)              |
//! | 6    | with the goal paused (no progress, a declined reply, by you)               |
//! | 7    | with the goal waiting (the agent's `wait`) past `--wait-limit`             |
//! | 129, 130, 143 | by a signal (hang-up, Ctrl-C, terminate)                         |

use std::process::ExitCode;
use waymark_protocol::{ErrorInfo, GoalReason, GoalStatus};
use waymark_runtime::Runtime;

/// A question waits, or the goal is blocked on the user.
pub(crate) const EXIT_WAITING: u8 = 3;
/// A goal stopped by a usage limit that resets later than `--wait-limit`, or that never
/// resumes by itself (a quota, the automatic resumes used up).
pub(crate) const EXIT_USAGE_LIMIT: u8 = 4;
/// The goal's budget is used up.
pub(crate) const EXIT_BUDGET_SPENT: u8 = 5;
/// The goal is paused.
pub(crate) const EXIT_PAUSED: u8 = 6;
/// The goal waits (the agent's `wait`) longer than `--wait-limit`: a later `exec` resumes it.
pub(crate) const EXIT_GOAL_WAITING: u8 = 7;

/// How a run that went idle ends: by its goal's state when it has one, else by whether a
/// turn failed. What it prints says why, with the code.
pub(crate) fn at_idle(
    runtime: &Runtime,
    id: &str,
    failure: Option<&ErrorInfo>,
) -> anyhow::Result<ExitCode> {
    let goal = runtime.goal(id)?;
    let error = |e: &ErrorInfo| {
        crate::term::errln!("error: the run ended in an error ({}); exit code 1", e.code);
        ExitCode::FAILURE
    };
    let Some(g) = goal else {
        return Ok(failure.map_or(ExitCode::SUCCESS, error));
    };
    Ok(match g.status {
        GoalStatus::Complete | GoalStatus::Active => failure.map_or(ExitCode::SUCCESS, error),
        GoalStatus::Blocked => {
            crate::term::errln!(
                "[goal blocked: it needs your answer (`waymark goal show --session {id}`); exit code {EXIT_WAITING}]"
            );
            ExitCode::from(EXIT_WAITING)
        }
        GoalStatus::BudgetLimited => {
            let key = match g.reason {
                GoalReason::MainTurns => "turns",
                GoalReason::ActiveSeconds => "time",
                GoalReason::Cost => "cost",
                _ => "tokens",
            };
            crate::term::errln!(
                "[goal stopped: {}; raise it to carry on (`waymark exec --session {id} \"/goal {key}=…\"`); exit code {EXIT_BUDGET_SPENT}]",
                g.reason.words().trim_start_matches("Stopped: ")
            );
            ExitCode::from(EXIT_BUDGET_SPENT)
        }
        // A goal the run's own error paused ends as that error.
        GoalStatus::Paused
            if matches!(g.reason, GoalReason::ProviderError | GoalReason::TurnError)
                && failure.is_some() =>
        {
            failure.map_or(ExitCode::FAILURE, error)
        }
        GoalStatus::Paused => {
            crate::term::errln!(
                "[goal paused: {}; resume it with `waymark exec --session {id} \"/goal resume\"`; exit code {EXIT_PAUSED}]",
                g.reason.words().trim_start_matches("Paused: ")
            );
            ExitCode::from(EXIT_PAUSED)
        }
        // The usage-limit wait decides before this (exit 4 or waiting on).
        GoalStatus::UsageLimited => ExitCode::from(EXIT_USAGE_LIMIT),
    })
}

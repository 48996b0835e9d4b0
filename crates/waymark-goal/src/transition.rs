//! Which goal transitions are allowed (G-3): who may move a goal from one status to another.

use crate::db::GoalRow;
use crate::report::Dimension;
use waymark_protocol::{GoalActor, GoalReason, GoalStatus};

/// A refused goal transition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the goal cannot go from {from} to {to} ({reason}): {why}")]
pub struct TransitionError {
    pub from: &'static str,
    pub to: &'static str,
    pub reason: &'static str,
    pub why: &'static str,
}

/// Checks a transition against G-3. `raised` is the dimension whose budget the user just
/// raised or cleared above usage (only that one reactivates a budget-limited goal).
pub fn check_transition(
    g: &GoalRow,
    reason: GoalReason,
    actor: GoalActor,
    raised: Option<Dimension>,
) -> Result<(), TransitionError> {
    let to = reason.status();
    let refuse = |why| {
        Err(TransitionError {
            from: g.status.as_str(),
            to: to.as_str(),
            reason: reason.as_str(),
            why,
        })
    };
    match (g.status, to) {
        (GoalStatus::Complete, _) => refuse("a complete goal is final"),
        (GoalStatus::Active, _) => Ok(()),
        (
            GoalStatus::Paused | GoalStatus::Blocked | GoalStatus::UsageLimited,
            GoalStatus::Active,
        ) => match (actor, reason) {
            (
                GoalActor::User,
                GoalReason::Resumed | GoalReason::Edited | GoalReason::BudgetRaised,
            ) => Ok(()),
            // The runtime's own resume when a rate limit resets (or the day's spending cap
            // lifts): only one it scheduled, never after a quota or billing limit.
            (GoalActor::System, GoalReason::Resumed)
                if g.status == GoalStatus::UsageLimited
                    && matches!(g.reason, GoalReason::RateLimited | GoalReason::SpendCap)
                    && g.usage_limit.is_some_and(|l| l.auto_resume) =>
            {
                Ok(())
            }
            (GoalActor::System, GoalReason::Resumed) if g.status == GoalStatus::UsageLimited => {
                refuse("no automatic resume is due for this goal")
            }
            _ => refuse("only the user resumes a goal"),
        },
        (GoalStatus::BudgetLimited, GoalStatus::Active) => {
            let limited_by = Dimension::of(g.reason);
            if actor == GoalActor::User
                && reason == GoalReason::BudgetRaised
                && raised.is_some()
                && raised == limited_by
            {
                Ok(())
            } else {
                refuse("raise or clear the budget that ran out")
            }
        }
        (
            GoalStatus::Paused
            | GoalStatus::Blocked
            | GoalStatus::UsageLimited
            | GoalStatus::BudgetLimited,
            GoalStatus::Paused
            | GoalStatus::Blocked
            | GoalStatus::Complete
            | GoalStatus::BudgetLimited
            | GoalStatus::UsageLimited,
        ) => {
            // A stopped goal only changes by being resumed; pausing one is a no-op for users.
            refuse("the goal is not active")
        }
    }
}

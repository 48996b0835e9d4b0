//! The goal budget guard (G-22): before every tool call of a goal turn the budget is
//! checked; once used up, calls are refused — first asking for a summary (`grace_steps`
//! times), then with "tools are disabled".

use super::{exhausted, runner::turn_report};
use crate::db::GoalWrites;
use waymark_extension::guard::{GuardCall, GuardDecision, ToolGuard};
use waymark_protocol::CallActor;

pub(crate) struct BudgetGuard;

const GRACE: &str = "The goal's budget is used up. Do not call more tools: reply now with a short summary of what is done and what is left.";
const DISABLED: &str =
    "Tools are disabled: the goal's budget is used up. Reply with your summary only.";

impl ToolGuard for BudgetGuard {
    fn name(&self) -> &'static str {
        "goal-budget"
    }

    fn before_tool_call(&self, call: &GuardCall<'_>) -> GuardDecision {
        let Some(api) = call.api else {
            return GuardDecision::Allow;
        };
        // Fails closed: when the goal's state cannot be read, no tool runs on its budget.
        let unchecked = |e: waymark_extension::error::Error| {
            GuardDecision::Deny(format!(
                "The goal's budget could not be checked ({e}), so no tools run until it can."
            ))
        };
        let summary = match super::turn_goal::turn_goal_of(api, call.turn_id) {
            Ok(t) => t.summary,
            Err(e) => return unchecked(e),
        };
        if summary {
            return GuardDecision::Deny(DISABLED.into());
        }
        let (mut g, report) = match turn_report(api, call.turn_id) {
            Ok(Some(r)) => r,
            Ok(None) => return GuardDecision::Allow,
            Err(e) => return unchecked(e),
        };
        if exhausted(&report).is_none() {
            return GuardDecision::Allow;
        }
        // The grace steps are the agent's, for its summary: a subagent's calls are refused
        // without using them up.
        if matches!(call.actor, CallActor::Subagent(_)) {
            return GuardDecision::Deny(DISABLED.into());
        }
        g.counters.grace_used += 1;
        let used = g.counters.grace_used;
        // Counting the denial is best effort: a failed write must not let the call through.
        let _ = api.write(|tx| tx.set_goal_counters(&g.id, &g.counters));
        if used <= api.config().goal.budget.grace_steps {
            GuardDecision::Deny(GRACE.into())
        } else {
            GuardDecision::Deny(DISABLED.into())
        }
    }
}

//! Approving a plan as a goal (PM-27): the implementation runs as a goal whose objective
//! cites the frozen revision, whose budget comes from the plan's `## Budget` (or the user's
//! edit of it), and whose verifier gives a verdict on each of the plan's steps.

use super::commands::{args_of, budgets_of, check_enabled, create};
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::goal::db::GoalWrites;
use crate::goal::db::current_goal;
use crate::store::Tx;
use waymark_protocol::{BudgetChange, GoalActor, GoalStep};

/// What an approval as a goal carries over from the plan.
pub struct PlanGoal<'a> {
    pub plan_id: &'a str,
    pub version: u32,
    pub sha256: &'a str,
    /// The first sentence of the plan's summary.
    pub title: Option<&'a str>,
    pub steps: &'a [String],
    /// The plan's `## Budget`, in the `/goal` syntax.
    pub plan_budget: Option<&'a str>,
    /// The user's budget; an empty change takes the plan's.
    pub budget: BudgetChange,
}

/// The budget a plan goal starts with: the user's change if they made one, else the plan's.
pub fn plan_goal_budget(plan_budget: Option<&str>, user: BudgetChange) -> Result<BudgetChange> {
    if !user.is_empty() {
        return Ok(user);
    }
    let Some(text) = plan_budget else {
        return Ok(BudgetChange::default());
    };
    match super::parse_command(text)? {
        waymark_protocol::GoalOp::EditBudget { budget } => Ok(budget),
        _ => Err(Error::Refused(format!(
            "the plan's budget `{text}` is not a budget"
        ))),
    }
}

/// Sets the goal that implements an approved plan; refused while another goal is unfinished.
pub(crate) fn start_plan_goal(tx: &mut Tx<'_>, api: &SessionApi, p: PlanGoal<'_>) -> Result<()> {
    check_enabled(api)?;
    if let Some(g) = current_goal(tx.conn(), api.id())?
        && !g.status.is_terminal()
    {
        return Err(Error::Refused(format!(
            "a goal is already set ({}): clear it first, or approve without pursuing the plan as a goal",
            g.status.as_str()
        )));
    }
    let change = plan_goal_budget(p.plan_budget, p.budget)?;
    let budgets = budgets_of(&args_of(&change)?);
    let short = p.sha256.get(..12).unwrap_or(p.sha256);
    let objective = format!(
        "Implement the approved plan {} revision v{} (sha256 {short}){}",
        p.plan_id,
        p.version,
        p.title.map(|t| format!(": {t}")).unwrap_or_default()
    );
    let criteria = (!p.steps.is_empty()).then(|| {
        let list: Vec<String> = p
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {s}", i + 1))
            .collect();
        format!("every step of the plan is done: {}", list.join("; "))
    });
    let g = create(
        tx,
        api,
        &objective,
        criteria.as_deref(),
        budgets,
        GoalActor::User,
    )?;
    if !p.steps.is_empty() {
        let steps: Vec<GoalStep> = p
            .steps
            .iter()
            .map(|s| GoalStep {
                text: s.clone(),
                met: None,
            })
            .collect();
        tx.set_goal_steps(&g.id, &steps)?;
    }
    Ok(())
}

/// Reads the per-step lines of a verifier's reply (`STEP 2: MET`, `STEP 3: NOT MET`) into a
/// verdict for each of `n` steps (None where the reply says nothing of a step).
pub fn parse_steps(reply: &str, n: usize) -> Vec<Option<bool>> {
    let mut met = vec![None; n];
    for line in reply.lines() {
        let l = line
            .trim()
            .trim_matches(['`', '*', '-', ' '])
            .to_ascii_uppercase();
        let Some(rest) = l.strip_prefix("STEP ") else {
            continue;
        };
        let Some((num, verdict)) = rest.split_once(':') else {
            continue;
        };
        let Ok(i) = num.trim().parse::<usize>() else {
            continue;
        };
        // Whole words only: `METRICS missing` is no verdict.
        let word = |v: &str, w: &str| {
            v.strip_prefix(w)
                .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric()))
        };
        let v = verdict.trim();
        let v = if word(v, "NOT MET") {
            false
        } else if word(v, "MET") {
            true
        } else {
            continue;
        };
        if (1..=n).contains(&i) {
            met[i - 1] = Some(v);
        }
    }
    met
}

#[cfg(test)]
mod tests {
    use super::*;
    use waymark_protocol::Limit;

    #[test]
    fn the_budget_is_the_users_else_the_plans() {
        let plan = plan_goal_budget(Some("budget=40K turns=12"), BudgetChange::default()).unwrap();
        assert_eq!(plan.tokens, Some(Limit::To(40_000)));
        assert_eq!(plan.turns, Some(Limit::To(12)));
        let user = BudgetChange {
            turns: Some(Limit::To(3)),
            ..BudgetChange::default()
        };
        assert_eq!(plan_goal_budget(Some("budget=40K"), user).unwrap(), user);
        assert!(
            plan_goal_budget(None, BudgetChange::default())
                .unwrap()
                .is_empty()
        );
        assert!(plan_goal_budget(Some("do it all"), BudgetChange::default()).is_err());
    }

    #[test]
    fn step_verdicts_are_read_line_by_line() {
        let reply = "Checked.\nSTEP 1: MET\n- STEP 2: NOT MET (no test)\n`STEP 9: MET`\nStep 3: met\nVERDICT: FAIL";
        assert_eq!(parse_steps(reply, 3), [Some(true), Some(false), Some(true)]);
        assert_eq!(parse_steps("VERDICT: PASS", 2), [None, None]);
        assert_eq!(
            parse_steps("STEP 0: MET\nSTEP x: MET\nSTEP 1 MET", 1),
            [None]
        );
        assert_eq!(parse_steps("STEP 1: METRICS missing", 1), [None]);
        assert_eq!(parse_steps("STEP 1: MET.", 1), [Some(true)]);
    }
}

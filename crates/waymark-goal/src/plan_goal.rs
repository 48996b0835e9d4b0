//! Goals started by another extension (an approved plan, PM-27): the objective and steps it
//! hands over through [`StartObjective`], a budget from what it proposes (or the user's edit
//! of it), and a verifier that gives a verdict on each step.

use super::commands::{args_of, budgets_of, create};
use super::enabled::check_enabled;
use crate::db::GoalWrites;
use crate::db::current_goal;
use waymark_extension::SessionApi;
use waymark_extension::error::{Error, Result};
use waymark_extension::services::{Objective, StartObjective};
use waymark_protocol::{BudgetChange, GoalActor, GoalStep};
use waymark_store::Tx;

/// The budget a handed-over goal starts with: the user's change if they made one, else the
/// one proposed.
pub fn proposed_budget(proposed: Option<&str>, user: BudgetChange) -> Result<BudgetChange> {
    if !user.is_empty() {
        return Ok(user);
    }
    let Some(text) = proposed else {
        return Ok(BudgetChange::default());
    };
    match super::parse_command(text)? {
        waymark_protocol::GoalOp::EditBudget { budget } => Ok(budget),
        _ => Err(Error::refused(format!(
            "the proposed budget `{text}` is not a budget"
        ))),
    }
}

/// The goal extension's [`StartObjective`]: sets the goal; refused while another goal is
/// unfinished.
pub(crate) struct StartGoal;

impl StartObjective for StartGoal {
    fn start(&self, tx: &mut Tx<'_>, api: &SessionApi, o: Objective) -> Result<()> {
        check_enabled(api)?;
        if let Some(g) = current_goal(tx.conn(), api.id())?
            && !g.status.is_terminal()
        {
            return Err(Error::refused(format!(
                "a goal is already set ({}): clear it first, or go on without pursuing this as a goal",
                g.status.as_str()
            )));
        }
        let change = proposed_budget(o.proposed_budget.as_deref(), o.budget)?;
        let budgets = budgets_of(&args_of(&change)?);
        // The folder's checks, then the plan's `## Checks` and its steps' own (G-49): a plan,
        // which the agent wrote, adds checks but never drops the user's.
        let steps: Vec<GoalStep> = o
            .steps
            .into_iter()
            .map(|text| GoalStep {
                check: step_check(&text),
                text,
                met: None,
            })
            .collect();
        let mut checks: Vec<String> = Vec::new();
        let from_plan = o
            .checks
            .into_iter()
            .chain(steps.iter().filter_map(|s| s.check.clone()));
        for c in api.config().goal.checks.iter().cloned().chain(from_plan) {
            if !checks.contains(&c) {
                checks.push(c);
            }
        }
        crate::checks::refuse_checks(&checks)?;
        crate::baseline::protected(api, &checks)?;
        let g = create(
            tx,
            api,
            &o.text,
            o.criteria.as_deref(),
            budgets,
            GoalActor::User,
        )?;
        if !steps.is_empty() {
            tx.set_goal_steps(&g.id, &steps)?;
        }
        crate::check_records::set_checks(tx, &g.id, &checks)?;
        Ok(())
    }
}

/// The check a plan step names for itself: the command in backticks after `check:`
/// (``2. Accept trailing commas (check: `cargo test -p parser commas`)``).
pub fn step_check(step: &str) -> Option<String> {
    let lower = step.to_ascii_lowercase();
    let at = lower.find("check: `").or_else(|| lower.find("check:`"))?;
    let rest = &step[at..];
    let open = rest.find('`')? + 1;
    let close = rest[open..].find('`')?;
    let cmd = rest[open..open + close].trim();
    (!cmd.is_empty()).then(|| cmd.to_string())
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
        let plan = proposed_budget(Some("budget=40K turns=12"), BudgetChange::default()).unwrap();
        assert_eq!(plan.tokens, Some(Limit::To(40_000)));
        assert_eq!(plan.turns, Some(Limit::To(12)));
        let user = BudgetChange {
            turns: Some(Limit::To(3)),
            ..BudgetChange::default()
        };
        assert_eq!(proposed_budget(Some("budget=40K"), user).unwrap(), user);
        assert!(
            proposed_budget(None, BudgetChange::default())
                .unwrap()
                .is_empty()
        );
        assert!(proposed_budget(Some("do it all"), BudgetChange::default()).is_err());
    }

    #[test]
    fn a_step_names_its_own_check_in_backticks_after_check() {
        assert_eq!(
            step_check("Accept trailing commas (check: `cargo test -p parser commas`)").as_deref(),
            Some("cargo test -p parser commas")
        );
        assert_eq!(
            step_check("Write docs; Check:`make docs`").as_deref(),
            Some("make docs")
        );
        assert_eq!(step_check("Check the parser by hand"), None);
        assert_eq!(step_check("check: `` nothing"), None);
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

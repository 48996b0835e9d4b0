//! `/goal …` (G-9): show, set (with budgets), change budgets, edit, pause, resume, clear,
//! replace, next.

use super::enabled::check_enabled;
use super::lifecycle::{
    auto_resume_at, cancel_auto_resume, continue_goal, emit_update, transition,
};
use super::prompts::Nudge;
use super::{Dimension, describe, exhausted, report, snapshot};
use crate::db::GoalWrites;
use crate::db::{Budgets, GoalRow, current_goal, queued_goal, queued_goals};
pub(crate) use waymark_config::budget::BudgetArgs;
use waymark_extension::SessionApi;
use waymark_extension::commands::{CommandContext, CommandSpec, SlashCommand};
use waymark_extension::error::{Error, Result};
use waymark_protocol::GoalUpdateKind;
use waymark_protocol::{
    BudgetChange, EventKind, GoalActor, GoalOp, GoalReason, GoalStatus, Limit, MessageSource,
    Position,
};
use waymark_store::Tx;

pub(crate) struct GoalCommand;

/// Creates the session's goal (active) with the default budgets filled in.
pub(crate) fn create(
    tx: &mut Tx<'_>,
    api: &SessionApi,
    objective: &str,
    criteria: Option<&str>,
    budgets: Budgets,
    actor: GoalActor,
) -> Result<GoalRow> {
    if objective.trim().is_empty() {
        return Err(Error::refused("the goal needs an objective".into()));
    }
    let d = &api.config().goal.budget;
    let default_ms = d
        .default_active_seconds
        .map(waymark_config::budget::seconds_to_ms)
        .transpose()
        .map_err(|e| Error::refused(e.to_string()))?;
    let budgets = Budgets {
        tokens: budgets.tokens.or(d.default_tokens),
        turns: budgets.turns.or(d.default_main_turns),
        time_ms: budgets.time_ms.or(default_ms),
        cost: budgets.cost,
    };
    check_budgets(&budgets)?;
    check_priced(api, budgets.cost)?;
    let id = api.new_id("goal");
    tx.create_goal(&id, api.id(), objective.trim(), criteria, budgets, actor)?;
    // Every goal starts with the folder's checks (G-49), whoever sets it (the model's
    // `create_goal`, the queue); a caller with checks of its own replaces them.
    let defaults = &api.config().goal.checks;
    crate::checks::refuse_checks(defaults)?;
    crate::check_records::set_checks(tx, &id, defaults)?;
    // A session started by `/goal …` has no user message to name it: the objective does,
    // redacted whole before it is cut (a cut secret would no longer be recognised).
    let redacted = tx.redact(objective.trim()).into_owned();
    let title: String = redacted
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(72)
        .collect();
    tx.set_title_if_missing(api.id(), &format!("Goal: {title}"))?;
    let g = current_goal(tx.conn(), api.id())?
        .ok_or_else(|| Error::Corrupt("the new goal vanished".into()))?;
    tx.emit(
        api.id(),
        EventKind::GoalCreate {
            goal: Box::new(snapshot(&g)),
        },
    )?;
    Ok(g)
}

/// Refuses a cost budget for a session whose model has no price (G-32): its spend could not
/// be counted, so the budget would never be reached.
pub(crate) fn check_priced(api: &SessionApi, cost: Option<u64>) -> Result<()> {
    if cost.is_some() && api.model_price().is_none() {
        return Err(Error::Unpriced(api.model_spec()));
    }
    Ok(())
}

/// Refuses budgets out of their accepted ranges (whatever set them), naming the range.
pub(crate) fn check_budgets(b: &Budgets) -> Result<()> {
    use waymark_config::budget::{Kind, MAX_SECONDS, check};
    let refuse = |e: waymark_config::budget::BudgetSyntaxError| Error::refused(e.to_string());
    if let Some(t) = b.tokens {
        check(Kind::Tokens, t).map_err(refuse)?;
    }
    if let Some(t) = b.turns {
        check(Kind::Turns, t).map_err(refuse)?;
    }
    if let Some(c) = b.cost
        && !(1..=waymark_protocol::cost::micros(waymark_protocol::cost::MAX_COST_USD)
            .unwrap_or(u64::MAX))
            .contains(&c)
    {
        return Err(Error::refused(format!(
            "the cost budget must be between $0.000001 and ${} (got {})",
            waymark_protocol::cost::MAX_COST_USD,
            waymark_protocol::cost::label(c)
        )));
    }
    if let Some(ms) = b.time_ms
        && !(1..=MAX_SECONDS * 1000).contains(&ms)
    {
        return Err(refuse(waymark_config::budget::BudgetSyntaxError::Range {
            what: "time budget in seconds",
            max: MAX_SECONDS,
            value: (ms / 1000).to_string(),
        }));
    }
    Ok(())
}

/// Applies budget changes; a raised or cleared exhausted dimension reactivates (G-3).
pub(crate) fn apply_budgets(
    tx: &mut Tx<'_>,
    g: &mut GoalRow,
    b: &BudgetArgs,
    actor: GoalActor,
) -> Result<()> {
    let new = Budgets {
        tokens: b.tokens.unwrap_or(g.token_budget),
        turns: b.turns.unwrap_or(g.turn_budget),
        time_ms: b.time_ms.unwrap_or(g.time_budget_ms),
        cost: b.cost.unwrap_or(g.cost_budget),
    };
    check_budgets(&new)?;
    tx.set_goal_budgets(&g.id, new)?;
    g.token_budget = new.tokens;
    g.turn_budget = new.turns;
    g.time_budget_ms = new.time_ms;
    g.cost_budget = new.cost;
    g.revision += 1;
    g.counters.grace_used = 0;
    if g.status == GoalStatus::BudgetLimited {
        let limited = Dimension::of(g.reason);
        let changed = match limited {
            Some(Dimension::Tokens) => b.tokens.is_some(),
            Some(Dimension::MainTurns) => b.turns.is_some(),
            Some(Dimension::ActiveSeconds) => b.time_ms.is_some(),
            Some(Dimension::Cost) => b.cost.is_some(),
            None => false,
        };
        let still = exhausted(&report(g, super::Extra::default()));
        if changed && still != limited {
            super::check_transition(g, GoalReason::BudgetRaised, actor, limited)
                .map_err(|e| Error::refused(e.to_string()))?;
            transition(
                tx,
                g,
                GoalReason::BudgetRaised,
                actor,
                GoalUpdateKind::Lifecycle,
            )?;
            g.counters.summary_due = false;
            tx.set_goal_counters(&g.id, &g.counters)?;
            continue_goal(tx, g, Nudge::Resumed)?;
            return Ok(());
        }
    }
    emit_update(tx, g, GoalUpdateKind::Lifecycle, actor)
}

/// A typed budget change as the settings it makes; out-of-range values are refused by
/// `check_budgets` when applied.
pub(crate) fn args_of(c: &BudgetChange) -> Result<BudgetArgs> {
    let limit = |l: Option<Limit>| {
        l.map(|l| match l {
            Limit::Clear => None,
            Limit::To(n) => Some(n),
        })
    };
    let time_ms = match limit(c.seconds) {
        Some(Some(s)) => Some(Some(
            waymark_config::budget::seconds_to_ms(s).map_err(|e| Error::refused(e.to_string()))?,
        )),
        other => other,
    };
    Ok(BudgetArgs {
        tokens: limit(c.tokens),
        turns: limit(c.turns),
        time_ms,
        cost: limit(c.cost),
    })
}

/// Parses the arguments of `/goal` into the op they ask for (G-9).
pub fn parse(args: &str) -> Result<GoalOp> {
    // A goal in its own worktree is a new session: the front ends start it (G-34).
    if crate::syntax::take_worktree(&format!("/goal {args}")).is_some() {
        return Err(Error::refused(
            "a goal in its own worktree runs in a new session: start it with `waymark exec --worktree \"/goal …\"`, or Run in a new worktree in the app".into(),
        ));
    }
    crate::syntax::parse(args).map_err(|e| Error::refused(e.to_string()))
}

/// Applies a user's goal op in `tx`; returns what to tell the user.
pub(crate) fn apply(tx: &mut Tx<'_>, api: &SessionApi, op: &GoalOp) -> Result<String> {
    check_enabled(api)?;
    let current = current_goal(tx.conn(), api.id())?;
    let no_goal = || Error::refused("no goal is set".into());
    Ok(match op {
        GoalOp::Show => match current {
            None => "No goal is set. Set one with /goal <objective> (optionally tokens=50K turns=20 time=2h).".to_string(),
            Some(g) => {
                let queued = queued_goals(tx.conn(), api.id())?;
                let mut s = describe(&crate::snapshot_in(tx.conn(), &g)?, tx.now());
                if !queued.is_empty() {
                    let line: Vec<&str> = queued.iter().map(|q| q.objective.as_str()).collect();
                    s.push_str(&format!("\nNext: {}", line.join(" · ")));
                }
                s
            }
        },
        GoalOp::Pause => {
            let mut g = current.ok_or_else(no_goal)?;
            if auto_resume_at(&g).is_some() {
                cancel_auto_resume(tx, g, GoalActor::User)?;
                return Ok("Automatic resume cancelled. The goal stays usage-limited until you resume it (/goal resume).".into());
            }
            if g.status != GoalStatus::Active {
                return Err(Error::refused(format!("the goal is {}, not active", g.status.as_str())));
            }
            transition(tx, &mut g, GoalReason::UserRequested, GoalActor::User, GoalUpdateKind::Lifecycle)?;
            "Goal paused.".into()
        }
        GoalOp::Resume => {
            let mut g = current.ok_or_else(no_goal)?;
            super::check_transition(&g, GoalReason::Resumed, GoalActor::User, None).map_err(|e| Error::refused(e.to_string()))?;
            transition(tx, &mut g, GoalReason::Resumed, GoalActor::User, GoalUpdateKind::Lifecycle)?;
            g.counters.repeated_replies = 0;
            g.counters.toolless_turns = 0;
            g.counters.limit_resumes = 0;
            continue_goal(tx, &mut g, Nudge::Resumed)?;
            "Goal resumed.".into()
        }
        GoalOp::Reply { text } => {
            let mut g = current.ok_or_else(no_goal)?;
            if g.status != GoalStatus::Blocked {
                return Err(Error::refused(format!(
                    "the goal is {}, not blocked: send your message as usual",
                    g.status.as_str()
                )));
            }
            let text = text.trim();
            if text.is_empty() {
                return Err(Error::refused("/goal reply needs your answer".into()));
            }
            super::check_transition(&g, GoalReason::Resumed, GoalActor::User, None).map_err(|e| Error::refused(e.to_string()))?;
            transition(tx, &mut g, GoalReason::Resumed, GoalActor::User, GoalUpdateKind::Lifecycle)?;
            g.counters.repeated_replies = 0;
            g.counters.toolless_turns = 0;
            tx.set_goal_counters(&g.id, &g.counters)?;
            // The answer is the next turn; the goal carries on after it.
            waymark_store::Tx::admit_message(tx, api.id(), MessageSource::User, text, Position::Tail, None)?;
            "Reply sent; the goal is active again.".into()
        }
        GoalOp::Clear => {
            let g = current.ok_or_else(no_goal)?;
            if let Some(gone) = tx.clear_goal(api.id())? {
                crate::checks::drop_layer(api, &gone);
            }
            tx.emit(api.id(), EventKind::GoalClear { goal_id: g.id.clone(), actor: GoalActor::User })?;
            // The next queued goal, if any, takes its place.
            if start_next_goal(tx, api)? {
                "Goal cleared; the next queued goal has started.".into()
            } else {
                "Goal cleared.".into()
            }
        }
        GoalOp::EditObjective { objective } => {
            let mut g = current.ok_or_else(no_goal)?;
            let objective = objective.trim();
            if objective.is_empty() {
                return Err(Error::refused("/goal edit needs the new objective".into()));
            }
            if g.status.is_terminal() {
                return Err(Error::refused("the goal is complete; set a new one".into()));
            }
            tx.edit_goal(&g.id, objective)?;
            // A new objective is no longer the plan whose steps were checked.
            if !g.steps.is_empty() {
                tx.set_goal_steps(&g.id, &[])?;
                g.steps.clear();
            }
            g.objective = objective.to_string();
            g.revision += 1;
            let was_active = g.status == GoalStatus::Active;
            transition(tx, &mut g, GoalReason::Edited, GoalActor::User, GoalUpdateKind::Lifecycle)?;
            if was_active || g.status == GoalStatus::Active {
                continue_goal(tx, &mut g, Nudge::Edited)?;
            }
            "Goal updated.".into()
        }
        GoalOp::Queue { objective, budget } => {
            let objective = objective.trim();
            if objective.is_empty() {
                return Err(Error::refused("/goal next needs an objective".into()));
            }
            check_objective(objective)?;
            // The budgets are checked now, not when the goal starts.
            let budgets = budgets_of(&args_of(budget)?);
            check_budgets(&budgets)?;
            check_priced(api, budgets.cost)?;
            // With no unfinished goal, it starts at once; a paused or blocked goal is the
            // user's to decide, so the queue waits behind it.
            if current.as_ref().is_none_or(|g| g.status.is_terminal()) {
                let mut g = create(tx, api, objective, None, budgets, GoalActor::User)?;
                continue_goal(tx, &mut g, Nudge::Plain)?;
                return Ok(format!("No goal was unfinished: it starts now.\n{}", describe(&snapshot(&g), tx.now())));
            }
            if queued_goals(tx.conn(), api.id())?.len() >= MAX_QUEUED {
                return Err(Error::refused(format!("the queue is full ({MAX_QUEUED} goals): start or remove one first")));
            }
            tx.enqueue_goal(api.id(), objective, &budgets)?;
            let n = queued_goals(tx.conn(), api.id())?.len();
            format!("Queued ({n} in line); it starts when the current goal completes or is cleared.")
        }
        GoalOp::Unqueue { id } => {
            if !tx.drop_queued_goal(api.id(), *id)? {
                return Err(not_queued(*id));
            }
            "Taken out of the queue.".into()
        }
        GoalOp::MoveQueued { id, to } => {
            if !tx.move_queued_goal(api.id(), *id, *to)? {
                return Err(not_queued(*id));
            }
            "Queue reordered.".into()
        }
        GoalOp::EditQueued { id, objective, budget } => {
            let (old, mut budgets) = queued_goal(tx.conn(), api.id(), *id)?.ok_or_else(|| not_queued(*id))?;
            let objective = match objective.trim() {
                "" => old,
                o => o.to_string(),
            };
            check_objective(&objective)?;
            // Checked as when it was queued: the new budgets must hold when it starts.
            let args = args_of(budget)?;
            let keep = |change: Option<Option<u64>>, was: Option<u64>| change.unwrap_or(was);
            budgets = Budgets {
                tokens: keep(args.tokens, budgets.tokens),
                turns: keep(args.turns, budgets.turns),
                time_ms: keep(args.time_ms, budgets.time_ms),
                cost: keep(args.cost, budgets.cost),
            };
            check_budgets(&budgets)?;
            check_priced(api, budgets.cost)?;
            tx.edit_queued_goal(api.id(), *id, &objective, &budgets)?;
            "Queued goal changed.".into()
        }
        GoalOp::StartQueued { id } => {
            let (objective, budgets) = queued_goal(tx.conn(), api.id(), *id)?.ok_or_else(|| not_queued(*id))?;
            // The user chose it over the goal in hand: that one is cleared, kept for the record.
            if let Some(g) = current {
                if let Some(gone) = tx.clear_goal(api.id())? {
                crate::checks::drop_layer(api, &gone);
            }
                tx.emit(api.id(), EventKind::GoalClear { goal_id: g.id, actor: GoalActor::User })?;
            }
            let mut g = create(tx, api, &objective, None, budgets, GoalActor::User)?;
            tx.drop_queued_goal(api.id(), *id)?;
            continue_goal(tx, &mut g, Nudge::Plain)?;
            format!("Started from the queue.\n{}", describe(&snapshot(&g), tx.now()))
        }
        GoalOp::WakeNow => {
            let mut g = current.ok_or_else(no_goal)?;
            if g.status != GoalStatus::Active || g.wait.is_none() {
                return Err(Error::refused("the goal is not waiting".into()));
            }
            let now = tx.now();
            super::wait::wake(tx, &mut g, now, GoalActor::User, "you woke it", true)?;
            "Woken: the goal carries on now.".into()
        }
        GoalOp::EditBudget { budget } => {
            let Some(mut g) = current else {
                return Err(Error::refused("no goal is set; give an objective".into()));
            };
            if budget.is_empty() {
                return Err(Error::refused("no budget change given (tokens=…, turns=…, time=… or cost=…)".into()));
            }
            let args = args_of(budget)?;
            // Saving the budget as it is changes nothing: no new revision, nothing logged
            // (the timeline would repeat the goal's last state as if it were news).
            let same = args.tokens.is_none_or(|t| t == g.token_budget)
                && args.turns.is_none_or(|t| t == g.turn_budget)
                && args.time_ms.is_none_or(|t| t == g.time_budget_ms)
                && args.cost.is_none_or(|c| c == g.cost_budget);
            check_priced(api, args.cost.flatten())?;
            if same {
                return Ok(format!("The budget is unchanged.\n{}", describe(&snapshot(&g), tx.now())));
            }
            apply_budgets(tx, &mut g, &args, GoalActor::User)?;
            describe(&snapshot(&g), tx.now())
        }
        GoalOp::Set { objective, budget, replace, criteria, checks } => {
            let b = args_of(budget)?;
            if *replace {
                if let Some(g) = current {
                    if let Some(gone) = tx.clear_goal(api.id())? {
                crate::checks::drop_layer(api, &gone);
            }
                    tx.emit(api.id(), EventKind::GoalClear { goal_id: g.id, actor: GoalActor::User })?;
                }
            } else if let Some(g) = &current
                && !g.status.is_terminal()
            {
                return Err(Error::refused(format!(
                    "a goal is already set ({}); use /goal replace <objective>, or /goal next <objective> to queue one",
                    g.status.as_str()
                )));
            }
            check_objective(objective.trim())?;
            let criteria = criteria.as_deref().map(str::trim).filter(|c| !c.is_empty());
            if criteria.is_some_and(|c| c.chars().count() > CRITERIA_MAX) {
                return Err(Error::refused(format!("the completion criteria are longer than {CRITERIA_MAX} characters")));
            }
            // No checks of its own: the folder's (G-49).
            let checks = if checks.is_empty() { &api.config().goal.checks } else { checks };
            crate::checks::refuse_checks(checks)?;
            // A `goal.protect` glob that does not parse is said now, not at the first write.
            crate::baseline::protected(api, checks)?;
            let mut g = create(tx, api, objective, criteria, budgets_of(&b), GoalActor::User)?;
            crate::check_records::set_checks(tx, &g.id, checks)?;
            continue_goal(tx, &mut g, Nudge::Plain)?;
            let verb = if *replace { "replaced" } else { "set" };
            format!("Goal {verb}.\n{}", describe(&crate::snapshot_in(tx.conn(), &g)?, tx.now()))
        }
    })
}

impl SlashCommand for GoalCommand {
    fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: "goal",
            usage: "/goal [<objective> [tokens=50K turns=N time=2h] | status|tokens=…|edit …|pause|resume|reply <answer>|clear|replace …|next …]",
            summary: "set or manage the session's goal (/help goal for the whole grammar)",
            details: crate::syntax::GRAMMAR,
        }
    }

    fn run(&self, cx: &mut CommandContext<'_, '_>, args: &str) -> Result<String> {
        let api = cx
            .api
            .ok_or_else(|| Error::refused("/goal needs a session".into()))?;
        check_enabled(api)?;
        apply(cx.tx, api, &parse(args)?)
    }
}

/// The longest completion criteria a goal set by the user may have.
const CRITERIA_MAX: usize = 4000;

/// How many goals may wait in one session's queue.
const MAX_QUEUED: usize = 100;

/// The longest objective a goal set or queued by the user may have (each change to the queue
/// logs the whole line).
const QUEUED_OBJECTIVE_MAX: usize = 4000;

fn check_objective(objective: &str) -> Result<()> {
    if objective.chars().count() > QUEUED_OBJECTIVE_MAX {
        return Err(Error::refused(format!(
            "the objective is longer than {QUEUED_OBJECTIVE_MAX} characters"
        )));
    }
    Ok(())
}

fn not_queued(id: i64) -> Error {
    Error::refused(format!(
        "no goal #{id} is in this session's queue (it may have started or been removed)"
    ))
}

pub(crate) fn budgets_of(b: &BudgetArgs) -> Budgets {
    Budgets {
        tokens: b.tokens.flatten(),
        turns: b.turns.flatten(),
        time_ms: b.time_ms.flatten(),
        cost: b.cost.flatten(),
    }
}

/// After a goal completes or is cleared, the next queued objective becomes the goal, with
/// the budgets it was queued with (`/goal next`, G-46). Returns whether one started.
/// A queued goal that can no longer start (its cost budget on a model that lost its price)
/// stays queued, and the session says why: the goal that ended, or the clear, stands.
pub(crate) fn start_next_goal(tx: &mut Tx<'_>, api: &SessionApi) -> Result<bool> {
    let Some((id, objective, budgets)) = tx.next_queued_goal(api.id())? else {
        return Ok(false);
    };
    match create(tx, api, &objective, None, budgets, GoalActor::User) {
        Ok(mut g) => {
            tx.drop_queued_goal(api.id(), id)?;
            continue_goal(tx, &mut g, Nudge::Plain)?;
            Ok(true)
        }
        Err(e @ (Error::Refused { .. } | Error::Unpriced(_))) => {
            tx.emit(
                api.id(),
                EventKind::CommandOutput {
                    command: "goal".into(),
                    text: format!(
                        "The next queued goal did not start: {e}. It stays queued: change it, or start it from the queue, once what stopped it is fixed."
                    ),
                },
            )?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_goal_parses_into_the_typed_ops() {
        assert_eq!(parse("").unwrap(), GoalOp::Show);
        assert_eq!(parse("pause").unwrap(), GoalOp::Pause);
        assert_eq!(
            parse("fix it budget=50K time=2h").unwrap(),
            GoalOp::Set {
                checks: Vec::new(),
                objective: "fix it".into(),
                budget: BudgetChange {
                    tokens: Some(Limit::To(50_000)),
                    turns: None,
                    seconds: Some(Limit::To(7200)),
                    cost: None,
                },
                replace: false,
                criteria: None,
            }
        );
        assert_eq!(
            parse("turns=clear").unwrap(),
            GoalOp::EditBudget {
                budget: BudgetChange {
                    turns: Some(Limit::Clear),
                    ..Default::default()
                }
            }
        );
        assert_eq!(
            parse("edit  do the other thing ").unwrap(),
            GoalOp::EditObjective {
                objective: "do the other thing".into()
            }
        );
        // Absurd typed values are refused by name, never wrapped.
        assert!(
            args_of(&BudgetChange {
                seconds: Some(Limit::To(u64::MAX)),
                ..Default::default()
            })
            .is_err()
        );
    }
}

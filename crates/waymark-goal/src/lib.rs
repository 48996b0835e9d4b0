//! Thread goals (spec G-1 … G-24): the goal object and its allowed transitions, budget
//! reports and syntax. Settlement, the budget guard, verification and continuation build on
//! these.

pub use waymark_config::budget;
mod baseline;
pub mod check_counts;
pub mod checks;
mod code_lines;
mod commands;
pub mod db;
pub mod draft;
mod during;
mod guard;
mod plan_goal;
pub mod prompts;
mod protect;
mod reminder;
mod rules;
pub(crate) mod runner;
mod runtime_shell;
pub mod settlement;
pub mod syntax;
mod test_files;
mod tools;
mod verifier;
pub mod wait;

use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use waymark_extension::commands::SlashCommand;
use waymark_extension::error::Result;
use waymark_extension::guard::ToolGuard;
use waymark_extension::reminder::ReminderSource;
use waymark_extension::{
    CallInfo, CallPrep, Dequeue, Extension, GuardStage, SessionApi, SessionTool, TurnLost,
};
use waymark_protocol::{Answer, CallActor, Op, QuestionnaireKind};
use waymark_store::{MessageRow, QuestionnaireRow, TurnRow, Tx};

use crate::db::GoalRow;
use waymark_protocol::{BudgetLine, BudgetReport, GoalActor, GoalReason, GoalSnapshot, GoalStatus};

/// Parses what follows `/goal` into the op it asks for: the one grammar for goal budgets
/// and verbs (G-8, G-9), used by the slash command and by front ends' goal forms.
pub fn parse_command(args: &str) -> Result<waymark_protocol::GoalOp> {
    commands::parse(args)
}

pub use plan_goal::{parse_steps, proposed_budget};
pub use wait::describe as wait_line;

/// Thread goals as an extension of every session.
pub struct GoalExtension;

impl Extension for GoalExtension {
    fn name(&self) -> &'static str {
        "goal"
    }
    fn migrations(&self) -> &'static [&'static str] {
        &[
            include_str!("../migrations/0001_goals.sql"),
            include_str!("../migrations/0002_question.sql"),
            include_str!("../migrations/0003_usage_limit.sql"),
            include_str!("../migrations/0004_steps.sql"),
            include_str!("../migrations/0005_own_session_state.sql"),
            include_str!("../migrations/0006_cost.sql"),
            include_str!("../migrations/0007_queue_budgets.sql"),
            include_str!("../migrations/0008_queue_order.sql"),
            include_str!("../migrations/0009_wait.sql"),
            include_str!("../migrations/0010_wait_guards.sql"),
            include_str!("../migrations/0011_checks.sql"),
            include_str!("../migrations/0012_baseline.sql"),
        ]
    }
    fn session_tools(&self) -> Vec<Arc<dyn SessionTool>> {
        vec![
            Arc::new(tools::CreateGoal),
            Arc::new(tools::GetGoal),
            Arc::new(tools::UpdateGoal),
            Arc::new(wait::WaitTool),
        ]
    }
    fn guards(&self) -> Vec<(GuardStage, Arc<dyn ToolGuard>)> {
        vec![(GuardStage::BeforePermission, Arc::new(guard::BudgetGuard))]
    }
    fn reminders(&self) -> Vec<Arc<dyn ReminderSource>> {
        vec![Arc::new(reminder::GoalReminders)]
    }
    fn provide(&self, services: &mut waymark_extension::services::Services) {
        services.offer::<dyn waymark_extension::services::StartObjective>(std::sync::Arc::new(
            plan_goal::StartGoal,
        ));
    }
    fn permission_rules(&self) -> Vec<Arc<dyn waymark_extension::rules::PermissionRule>> {
        vec![Arc::new(rules::GoalRules)]
    }
    fn commands(&self) -> Vec<Arc<dyn SlashCommand>> {
        vec![Arc::new(commands::GoalCommand)]
    }
    fn answers(&self) -> &'static [QuestionnaireKind] {
        &[QuestionnaireKind::GoalApproval]
    }
    fn on_open(&self, tx: &mut Tx<'_>, session_id: &str, crashed: bool) -> Result<()> {
        // An automatic resume belongs to the process that scheduled it.
        runner::cancel_schedule(tx, session_id)?;
        // A waiting goal counts its time from now: the time closed is not counted.
        if let Some(mut g) = db::current_goal(tx.conn(), session_id)? {
            wait::on_open(tx, &mut g)?;
        }
        // The previous process died holding the session: an active goal stays paused until
        // the user resumes it (G-24).
        if crashed {
            runner::pause_for_close(tx, session_id)?;
        }
        Ok(())
    }
    fn on_late_charge(
        &self,
        tx: &mut Tx<'_>,
        turn_id: i64,
        spend: waymark_protocol::cost::Spend,
    ) -> Result<()> {
        // A reviewer's call cut off by a stopped process counts toward the goal it checked.
        if let Some(goal_id) = db::turn_goal(tx.conn(), turn_id)?.goal_id {
            db::GoalWrites::add_goal_cost(tx, &goal_id, spend)?;
        }
        Ok(())
    }
    fn handle_op(&self, api: &SessionApi, op: &Op) -> Option<Result<Option<String>>> {
        match op {
            Op::Goal { op } => Some(api.write(|tx| commands::apply(tx, api, op)).map(Some)),
            _ => None,
        }
    }
    fn recheck(&self, api: &SessionApi, message: &MessageRow) -> Result<Dequeue> {
        runner::recheck(api, message)
    }
    fn on_turn_start(
        &self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        turn_id: i64,
        message: &MessageRow,
    ) -> Result<()> {
        runner::on_turn_start(tx, api, turn_id, message)
    }
    fn offers_tools(&self, api: &SessionApi, turn_id: i64) -> Result<bool> {
        runner::tools_offered(api, turn_id)
    }
    fn may_call_model(&self, api: &SessionApi, turn_id: i64, _steps: u32) -> Result<bool> {
        // A goal whose budget is spent gets no further model call in this turn; the summary
        // turn that follows is the one call made over budget (G-22).
        Ok(!runner::budget_spent(api, turn_id)?)
    }
    fn cost_left(&self, api: &SessionApi, turn_id: Option<i64>) -> Result<Option<u64>> {
        runner::cost_left(api, turn_id)
    }
    fn before_tool(
        &self,
        api: &SessionApi,
        call: &CallInfo<'_>,
        prep: &mut CallPrep,
    ) -> Result<()> {
        // Under a time budget no command outlives the goal's time left (plus the grace).
        // A goal that cannot be read leaves no time: the budget guard then refuses the call
        // with the reason, and anything it still allows gets only the grace.
        if let Some(left) = runner::time_left(api, call.turn_id).unwrap_or(Some(Duration::ZERO)) {
            prep.cap(left);
        }
        // The reviewer builds and runs the tests in the goal's scratch layer, the one its
        // checks use (G-50).
        if call.actor == CallActor::Verifier
            && api.config().sandbox.scratch_shell
            && let Some(goal_id) = runner::turn_goal_of(api, call.turn_id)?.goal_id
        {
            prep.scratch(checks::scratch_owner(&goal_id));
        }
        Ok(())
    }
    fn before_turn<'a>(
        &'a self,
        api: &'a SessionApi,
        _turn_id: i64,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<()>> {
        // A goal with checks takes its baseline before its first turn (G-51).
        Box::pin(baseline::before_turn(api, cancel))
    }
    fn before_run<'a>(
        &'a self,
        api: &'a SessionApi,
        _turn_id: i64,
        call: &'a waymark_protocol::ToolCallRecord,
        _writes: bool,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { baseline::before_write(api, call) })
    }
    fn after_tool(
        &self,
        api: &SessionApi,
        _turn_id: i64,
        call: &waymark_protocol::ToolCallRecord,
        status: waymark_protocol::ToolStatus,
    ) -> Result<()> {
        baseline::after_write(api, call, status == waymark_protocol::ToolStatus::Ok)
    }
    fn on_turn_closed(&self, tx: &mut Tx<'_>, turn: &TurnRow, recovered: bool) -> Result<()> {
        runner::add_turn_usage(tx, turn, recovered)
    }
    fn settle<'a>(
        &'a self,
        api: &'a SessionApi,
        turn_id: i64,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(runner::settle(api, turn_id, cancel))
    }
    fn on_rewound(
        &self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        _rewound: &waymark_extension::rewind::Rewound,
    ) -> Result<()> {
        runner::pause_for_rewind(tx, api.id())
    }
    fn on_turn_lost(&self, tx: &mut Tx<'_>, session_id: &str, why: TurnLost) -> Result<()> {
        match why {
            TurnLost::Stopped => runner::stop_for_user(tx, session_id),
            // So the goal does not continue into the same failure.
            TurnLost::Failed => runner::stop_after_turn_error(tx, session_id),
        }
    }
    fn on_answer(
        &self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        q: &QuestionnaireRow,
        answer: &Answer,
    ) -> Result<()> {
        tools::on_answer(tx, api, q, answer)
    }
    fn next_work(&self, api: &SessionApi) -> Result<bool> {
        runner::ensure_continuation(api)
    }
    fn wake_at(&self, api: &SessionApi) -> Result<Option<i64>> {
        runner::wake_at(api)
    }
    fn withheld_tools(&self, api: &SessionApi, turn_id: i64) -> Result<&'static [&'static str]> {
        // `wait` is for a turn working on an active goal only.
        Ok(if runner::turn_goal_of(api, turn_id)?.goal_id.is_some() {
            &[]
        } else {
            &["wait"]
        })
    }
    fn on_close(&self, tx: &mut Tx<'_>, session_id: &str, waiting: bool) -> Result<()> {
        wait::stop_checks(session_id);
        runner::cancel_schedule(tx, session_id)?;
        // Waiting for the user is a pause in itself: the goal resumes with the answer (G-15
        // stage 5); anything else closing pauses it (G-24).
        if waiting {
            return Ok(());
        }
        runner::pause_for_close(tx, session_id)
    }
    fn changed(&self, api: &SessionApi) {
        runner::push_snapshot(api);
    }
}

/// Which budget dimension a `budget_limited` goal ran out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    Tokens,
    MainTurns,
    ActiveSeconds,
    /// Micro-dollars (G-32).
    Cost,
}

impl Dimension {
    /// The dimension a `budget_limited` reason names.
    pub fn of(reason: GoalReason) -> Option<Dimension> {
        match reason {
            GoalReason::Tokens => Some(Dimension::Tokens),
            GoalReason::MainTurns => Some(Dimension::MainTurns),
            GoalReason::ActiveSeconds => Some(Dimension::ActiveSeconds),
            GoalReason::Cost => Some(Dimension::Cost),
            GoalReason::Created
            | GoalReason::Resumed
            | GoalReason::BudgetRaised
            | GoalReason::Edited
            | GoalReason::VerifierMet
            | GoalReason::WorkerProposal
            | GoalReason::WorkerReported
            | GoalReason::UserRequested
            | GoalReason::NoProgress
            | GoalReason::NoProgressAfterCompletionClaim
            | GoalReason::VerifierPartial
            | GoalReason::VerifierError
            | GoalReason::TurnError
            | GoalReason::ProviderError
            | GoalReason::ProviderRefusal
            | GoalReason::AppClosed
            | GoalReason::RateLimited
            | GoalReason::QuotaExhausted
            | GoalReason::SpendCap
            | GoalReason::Waiting
            | GoalReason::Woke
            | GoalReason::WaitExpired
            | GoalReason::ChecksPassed
            | GoalReason::ChecksWeakened => None,
        }
    }

    pub fn reason(self) -> GoalReason {
        match self {
            Dimension::Tokens => GoalReason::Tokens,
            Dimension::MainTurns => GoalReason::MainTurns,
            Dimension::ActiveSeconds => GoalReason::ActiveSeconds,
            Dimension::Cost => GoalReason::Cost,
        }
    }
}

/// What a running turn has spent that its goal has not counted yet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extra {
    pub tokens: u64,
    pub turns: u64,
    pub ms: u64,
    pub cost: waymark_protocol::cost::Spend,
}

/// The budget report of a goal (G-7); `extra` adds usage not yet stored (the running turn).
pub fn report(g: &GoalRow, extra: Extra) -> BudgetReport {
    BudgetReport {
        tokens: BudgetLine::new(g.token_budget, g.tokens_used.saturating_add(extra.tokens)),
        main_turns: BudgetLine::new(g.turn_budget, g.turns_used.saturating_add(extra.turns)),
        active_seconds: BudgetLine::new(
            g.time_budget_ms.map(|ms| ms / 1000),
            g.active_ms.saturating_add(extra.ms) / 1000,
        ),
        cost: BudgetLine::new(
            g.cost_budget,
            g.cost.micros.saturating_add(extra.cost.micros),
        ),
        cost_unpriced_calls: g
            .cost
            .unpriced_calls
            .saturating_add(extra.cost.unpriced_calls),
    }
}

/// The first exhausted dimension, if any.
pub fn exhausted(r: &BudgetReport) -> Option<Dimension> {
    if r.tokens.reached {
        Some(Dimension::Tokens)
    } else if r.main_turns.reached {
        Some(Dimension::MainTurns)
    } else if r.active_seconds.reached {
        Some(Dimension::ActiveSeconds)
    } else if r.cost.reached {
        Some(Dimension::Cost)
    } else {
        None
    }
}

/// The snapshot front ends show, with the goal's checks and what weakened them.
pub fn snapshot_in(conn: &rusqlite::Connection, g: &GoalRow) -> Result<GoalSnapshot> {
    Ok(GoalSnapshot {
        checks: baseline::states(conn, &g.id)?,
        weakened: if g.reason == GoalReason::ChecksWeakened {
            baseline::findings(conn, &g.id)?
        } else {
            Vec::new()
        },
        ..snapshot(g)
    })
}

/// The snapshot of the goal row alone (no checks).
pub fn snapshot(g: &GoalRow) -> GoalSnapshot {
    let budget = report(g, Extra::default());
    GoalSnapshot {
        goal_id: g.id.clone(),
        objective: g.objective.clone(),
        criteria: g.criteria.clone(),
        status: g.status,
        reason: g.reason,
        actor: g.actor,
        revision: g.revision,
        question: g.question.clone(),
        usage_limit: g.usage_limit,
        steps: g.steps.clone(),
        wait: g.wait.clone(),
        over_budget: exhausted(&budget).is_some(),
        budget,
        checks: Vec::new(),
        weakened: Vec::new(),
    }
}

/// What a usage-limited goal waits for, as people read it at `now_ms`: when the limit
/// resets (with a countdown) and whether the goal resumes by itself then.
pub fn limit_line(s: &GoalSnapshot, now_ms: i64) -> Option<String> {
    use waymark_extension::clock::{span_label, utc_label};
    if s.status != GoalStatus::UsageLimited {
        return None;
    }
    let when = |l: &waymark_protocol::UsageLimit| {
        let left = l.resets_at.saturating_sub(now_ms);
        let source = if l.from_provider {
            "as the provider said"
        } else {
            "the provider named no time: backoff"
        };
        if left > 0 {
            format!(
                "resets at {} (in {}; {source})",
                utc_label(l.resets_at),
                span_label(left as u64)
            )
        } else {
            format!("reset at {} ({source})", utc_label(l.resets_at))
        }
    };
    Some(match (s.reason, s.usage_limit) {
        (GoalReason::QuotaExhausted, l) => format!(
            "Usage limit: the provider's quota or billing limit{}. It never resumes by itself: resume with /goal resume once the quota allows.",
            l.map(|l| format!(", which {}", when(&l)))
                .unwrap_or_default()
        ),
        (_, Some(l)) if l.auto_resume => format!(
            "Usage limit: {}. The goal resumes by itself then (automatic resume {} of {}). /goal resume resumes now; /goal pause cancels the automatic resume.",
            when(&l),
            l.auto_resumes_used + 1,
            l.auto_resumes_max
        ),
        (_, Some(l)) => {
            let why = if l.auto_resumes_used >= l.auto_resumes_max {
                format!(
                    "no automatic resumes left: {} in a row allowed",
                    l.auto_resumes_max
                )
            } else {
                "the automatic resume was cancelled".to_string()
            };
            format!(
                "Usage limit: {}. The goal does not resume by itself ({why}): resume it with /goal resume.",
                when(&l)
            )
        }
        (_, None) => {
            "Usage limit: the goal does not resume by itself: resume it with /goal resume.".into()
        }
    })
}

/// A passing count as people read it: `38/40 tests passing`, or the exit code alone.
fn check_result(r: &waymark_protocol::CheckResult) -> String {
    match (r.passed, r.failed) {
        (Some(p), Some(f)) => format!("{p}/{} tests passing", p.saturating_add(f)),
        _ => match r.exit_code {
            Some(0) => "passes".into(),
            Some(c) => format!("fails (exit {c})"),
            None => "did not finish".into(),
        },
    }
}

/// The goal's checks with their newest and first results, and what weakened them.
fn checks_lines(s: &GoalSnapshot) -> String {
    let mut out = String::new();
    for c in &s.checks {
        let state = match (c.runs.last(), &c.baseline) {
            (Some(l), Some(b)) => {
                format!("{} (at the start: {})", check_result(l), check_result(b))
            }
            (Some(l), None) => check_result(l),
            (None, Some(b)) => format!("{} at the start", check_result(b)),
            (None, None) => "not run yet".into(),
        };
        out.push_str(&format!("\nCheck: {} — {state}", c.command));
    }
    if !s.weakened.is_empty() {
        out.push_str("\nWeakened since the goal started:");
        for w in &s.weakened {
            out.push_str(&format!("\n  - {w}"));
        }
    }
    out
}

/// The goal as people read it at `now_ms`: objective, criteria, status, one line per budget,
/// and what a usage limit waits for.
pub fn describe(s: &GoalSnapshot, now_ms: i64) -> String {
    let line = |name: &str, l: BudgetLine| match l.limit {
        Some(limit) => format!(
            "  {name:<8} {} / {limit} ({} left){}",
            l.used,
            l.remaining.unwrap_or(0),
            if l.reached { " — reached" } else { "" }
        ),
        None => format!("  {name:<8} {} (no limit)", l.used),
    };
    let criteria = s
        .criteria
        .as_ref()
        .map(|c| format!("Criteria: {c}\n"))
        .unwrap_or_default();
    let question = s
        .question
        .as_ref()
        .map(|q| {
            format!(
                "\nThe agent asks: {q}\nAnswer with /goal reply <answer> (or `waymark goal reply`)."
            )
        })
        .unwrap_or_default();
    let mut limit = limit_line(s, now_ms)
        .map(|l| format!("\n{l}"))
        .unwrap_or_default();
    if let Some(w) = &s.wait {
        limit.push_str(&format!("\n{}", wait::describe(w, now_ms)));
        if let Some(c) = &w.last_check {
            limit.push_str(&format!(
                "\nLast check: {} — {}",
                if c.passed { "passed" } else { "not yet" },
                c.line
            ));
        }
        limit.push_str("\nWake it now with /goal wake.");
    }
    limit.push_str(&checks_lines(s));
    format!(
        "Goal: {}\n{criteria}Status: {} ({}, by {})\n{}\n{}\n{}\n{}{question}{limit}",
        s.objective,
        s.status.as_str(),
        s.reason.as_str(),
        s.actor.as_str(),
        line("tokens", s.budget.tokens),
        line("turns", s.budget.main_turns),
        line("seconds", s.budget.active_seconds),
        cost_line(&s.budget)
    )
}

/// The cost line of `goal show` (G-32): spent, the budget and what is left, in dollars;
/// unknown when the goal's model had no price.
pub fn cost_line(b: &BudgetReport) -> String {
    use waymark_protocol::cost::{Spend, label};
    let spent = Spend {
        micros: b.cost.used,
        unpriced_calls: b.cost_unpriced_calls,
    }
    .label();
    match b.cost.limit {
        Some(limit) => format!(
            "  {:<8} {spent} / {} ({} left){}",
            "cost",
            label(limit),
            label(b.cost.remaining.unwrap_or(0)),
            if b.cost.reached { " — reached" } else { "" }
        ),
        None => format!("  {:<8} {spent} (no limit)", "cost"),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::GoalCounters;

    fn goal(status: GoalStatus, reason: GoalReason) -> GoalRow {
        GoalRow {
            id: "g".into(),
            session_id: "s".into(),
            objective: "o".into(),
            criteria: None,
            status,
            reason,
            actor: GoalActor::Runtime,
            revision: 1,
            token_budget: Some(1000),
            turn_budget: Some(5),
            time_budget_ms: Some(60_000),
            tokens_used: 1000,
            turns_used: 2,
            active_ms: 30_500,
            counters: GoalCounters::default(),
            question: None,
            usage_limit: None,
            steps: Vec::new(),
            wait: None,
            wait_command: None,
            cost_budget: None,
            cost: Default::default(),
        }
    }

    #[test]
    fn describe_shows_criteria_status_and_each_budget() {
        let mut g = goal(GoalStatus::BudgetLimited, GoalReason::Tokens);
        g.criteria = Some("tests pass".into());
        g.time_budget_ms = None;
        g.cost_budget = Some(5_000_000);
        g.cost.micros = 1_234_567;
        assert_eq!(
            describe(&snapshot(&g), 0),
            "Goal: o\nCriteria: tests pass\nStatus: budget_limited (tokens, by runtime)\n  \
             tokens   1000 / 1000 (0 left) — reached\n  turns    2 / 5 (3 left)\n  \
             seconds  30 (no limit)\n  cost     $1.23 / $5.00 ($3.77 left)"
        );
        // A model with no price: the cost is unknown, never $0.
        g.cost = waymark_protocol::cost::Spend {
            micros: 0,
            unpriced_calls: 3,
        };
        g.cost_budget = None;
        assert!(
            describe(&snapshot(&g), 0)
                .ends_with("cost     unknown (no price for the model) (no limit)"),
            "{}",
            describe(&snapshot(&g), 0)
        );
    }

    #[test]
    fn g_7_report_per_dimension_and_over_budget() {
        let g = goal(GoalStatus::Active, GoalReason::Created);
        let s = snapshot(&g);
        assert!(s.budget.tokens.reached && s.over_budget);
        assert_eq!(s.budget.main_turns.remaining, Some(3));
        assert_eq!(s.budget.active_seconds.used, 30);
        assert_eq!(exhausted(&s.budget), Some(Dimension::Tokens));
        let r = report(
            &g,
            Extra {
                turns: 3,
                ..Extra::default()
            },
        );
        assert!(r.main_turns.reached);
    }

    #[test]
    fn g_2_g_3_statuses_and_allowed_moves() {
        let active = goal(GoalStatus::Active, GoalReason::Created);
        for r in GoalReason::ALL {
            assert!(
                check_transition(&active, r, GoalActor::Runtime, None).is_ok(),
                "active → {r:?}"
            );
        }
        let paused = goal(GoalStatus::Paused, GoalReason::NoProgress);
        assert!(check_transition(&paused, GoalReason::Resumed, GoalActor::User, None).is_ok());
        assert!(check_transition(&paused, GoalReason::Resumed, GoalActor::Model, None).is_err());
        let complete = goal(GoalStatus::Complete, GoalReason::VerifierMet);
        assert!(check_transition(&complete, GoalReason::Resumed, GoalActor::User, None).is_err());
        let limited = goal(GoalStatus::BudgetLimited, GoalReason::MainTurns);
        assert!(
            check_transition(
                &limited,
                GoalReason::BudgetRaised,
                GoalActor::User,
                Some(Dimension::MainTurns)
            )
            .is_ok()
        );
        let e = check_transition(
            &limited,
            GoalReason::BudgetRaised,
            GoalActor::User,
            Some(Dimension::Tokens),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("raise or clear the budget that ran out"),
            "{e}"
        );
        assert!(check_transition(&limited, GoalReason::Resumed, GoalActor::User, None).is_err());
    }

    #[test]
    fn g_3_the_system_resumes_only_a_rate_limit_it_scheduled() {
        let scheduled = |auto_resume| waymark_protocol::UsageLimit {
            resets_at: 0,
            from_provider: false,
            auto_resume,
            auto_resumes_used: 0,
            auto_resumes_max: 3,
        };
        let system =
            |g: &GoalRow| check_transition(g, GoalReason::Resumed, GoalActor::System, None);
        let mut rate = goal(GoalStatus::UsageLimited, GoalReason::RateLimited);
        rate.usage_limit = Some(scheduled(true));
        assert!(system(&rate).is_ok());
        rate.usage_limit = Some(scheduled(false));
        assert!(system(&rate).is_err(), "cancelled or used up");
        let mut quota = goal(GoalStatus::UsageLimited, GoalReason::QuotaExhausted);
        quota.usage_limit = Some(scheduled(true));
        assert!(system(&quota).is_err(), "a quota never resumes by itself");
        let mut paused = goal(GoalStatus::Paused, GoalReason::AppClosed);
        paused.usage_limit = Some(scheduled(true));
        assert!(system(&paused).is_err());
        // Nobody else gets the system's way back.
        rate.usage_limit = Some(scheduled(true));
        assert!(check_transition(&rate, GoalReason::Resumed, GoalActor::Model, None).is_err());
        assert!(check_transition(&rate, GoalReason::Resumed, GoalActor::Runtime, None).is_err());
    }

    #[test]
    fn the_limit_line_counts_down_and_says_what_happens_next() {
        let mut g = goal(GoalStatus::UsageLimited, GoalReason::RateLimited);
        g.usage_limit = Some(waymark_protocol::UsageLimit {
            resets_at: 1_796_137_445_000,
            from_provider: true,
            auto_resume: true,
            auto_resumes_used: 1,
            auto_resumes_max: 3,
        });
        let s = snapshot(&g);
        let line = limit_line(&s, 1_796_137_445_000 - 245_000).unwrap();
        assert_eq!(
            line,
            "Usage limit: resets at 2026-12-01 15:04:05 UTC (in 4m 05s; as the provider said). \
             The goal resumes by itself then (automatic resume 2 of 3). /goal resume resumes now; \
             /goal pause cancels the automatic resume."
        );
        assert!(
            limit_line(&s, 1_796_137_445_000 + 1)
                .unwrap()
                .contains("reset at 2026-12-01 15:04:05 UTC")
        );
        assert_eq!(
            limit_line(
                &snapshot(&goal(GoalStatus::Paused, GoalReason::AppClosed)),
                0
            ),
            None
        );
    }
}

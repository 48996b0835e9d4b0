//! Thread goals (spec G-1 … G-24): the goal object and its allowed transitions, budget
//! reports and syntax. Settlement, the budget guard, verification and continuation build on
//! these.

pub use waymark_config::budget;
mod baseline;
pub mod check_counts;
mod check_records;
pub mod checks;
mod code_lines;
mod commands;
pub mod db;
pub mod draft;
mod during;
mod enabled;
mod guard;
mod lifecycle;
mod plan_goal;
pub mod prompts;
mod protect;
mod reminder;
mod report;
mod rules;
pub(crate) mod runner;
mod runtime_shell;
pub mod settlement;
pub mod syntax;
mod test_files;
mod tools;
mod transition;
mod turn_goal;
mod verifier;
pub mod wait;
pub mod wait_terms;

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

pub use commands::parse as parse_command;
pub use plan_goal::{parse_steps, proposed_budget};
pub use report::{
    Dimension, Extra, cost_line, describe, exhausted, limit_line, report, snapshot, snapshot_in,
};
pub use transition::{TransitionError, check_transition};
pub use wait_terms::describe as wait_line;

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
            && let Some(goal_id) = turn_goal::turn_goal_of(api, call.turn_id)?.goal_id
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
        Ok(
            if turn_goal::turn_goal_of(api, turn_id)?.goal_id.is_some() {
                &[]
            } else {
                &["wait"]
            },
        )
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
        lifecycle::push_snapshot(api);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::GoalCounters;
    use crate::db::GoalRow;
    use waymark_protocol::{GoalActor, GoalReason, GoalStatus};

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

//! Plan mode (spec PM-1 … PM-22, PM-24): the session investigates read-only, writes one plan
//! file, and only an approved, frozen snapshot of it gets implemented. An extension built on
//! the extension API alone: it plugs into admission (intents), questionnaire answers,
//! reminders, the guard chain and the permission rules, and owns the plan document's
//! lifecycle and its tables.

use crate::db::PlanWrites;
use waymark_protocol::{PlanModeReason, PlanStatus};

mod allowlist;
mod answer;
mod commands;
pub mod db;
mod document;
mod export;
mod guard;
pub mod hidden;
mod mode;
mod reminder;
pub mod render;
pub mod review;
mod rules;
mod shown;
mod tools;

pub use document::{
    LivePlan, PlanFileError, PlanRead, SNAPSHOT_LIMIT, check_plan_text, live_plan, read_plan_file,
    read_user_plan, snapshot, snapshot_of,
};
pub use mode::{BACKUP_FILE, PLAN_FILE, PLAN_FILE_CAP, PLAN_SCOPE, SCRATCH_OWNER, plan_path};
pub(crate) use mode::{edit_by_user, enter, freeze_revision, in_plan_mode, leave, prepare_draft};

use std::sync::Arc;
use waymark_extension::commands::SlashCommand;
use waymark_extension::error::Result;
use waymark_extension::guard::ToolGuard;
use waymark_extension::reminder::ReminderSource;
use waymark_extension::{CallInfo, CallPrep, Extension, GuardStage, SessionApi, SessionTool};
use waymark_protocol::{Answer, Intent, InteractionMode, MessageSource, Op, QuestionnaireKind};
use waymark_store::{MessageRow, QuestionnaireRow, SessionRow, Tx};

/// Guidance added to the system prompt when `EnterPlanMode` is offered (PM-7).
const PLAN_ENTRY_GUIDANCE: &str = "Planning first: for a software task whose implementation should be agreed before any change (several files, a design choice, a risky change), or when the user asks for a plan to approve, call EnterPlanMode instead of starting to edit. Do not use it for small, clear changes or questions.";

/// Plan mode as an extension of every session.
pub struct PlanExtension;

impl Extension for PlanExtension {
    fn name(&self) -> &'static str {
        "plan"
    }
    fn migrations(&self) -> &'static [&'static str] {
        &[
            include_str!("../migrations/0001_plans.sql"),
            include_str!("../migrations/0002_comments.sql"),
            include_str!("../migrations/0003_grant_scope.sql"),
            include_str!("../migrations/0004_own_session_state.sql"),
        ]
    }
    fn session_tools(&self) -> Vec<Arc<dyn SessionTool>> {
        vec![
            Arc::new(tools::EnterPlanMode),
            Arc::new(tools::ExitPlanMode),
        ]
    }
    fn guards(&self) -> Vec<(GuardStage, Arc<dyn ToolGuard>)> {
        vec![(GuardStage::BeforePermission, Arc::new(guard::PlanGuard))]
    }
    fn reminders(&self) -> Vec<Arc<dyn ReminderSource>> {
        vec![Arc::new(reminder::PlanReminders)]
    }
    fn permission_rules(&self) -> Vec<Arc<dyn waymark_extension::rules::PermissionRule>> {
        vec![Arc::new(rules::PlanRules)]
    }
    fn commands(&self) -> Vec<Arc<dyn SlashCommand>> {
        vec![Arc::new(commands::PlanCommand)]
    }
    fn system_prompt(&self, api: &SessionApi, session: &SessionRow) -> Option<String> {
        waymark_tools::Tool::offered(
            &tools::EnterPlanMode,
            session.interaction_mode,
            &api.config(),
        )
        .then(|| PLAN_ENTRY_GUIDANCE.to_string())
    }
    fn answers(&self) -> &'static [QuestionnaireKind] {
        &[
            QuestionnaireKind::PlanEntry,
            QuestionnaireKind::PlanApproval,
        ]
    }
    fn on_intent(&self, tx: &mut Tx<'_>, api: &SessionApi, intent: Intent) -> Result<bool> {
        match intent {
            Intent::PlanEntry => enter(tx, api, PlanModeReason::Intent).map(|_| true),
            Intent::PlanExit => {
                leave(tx, api, PlanStatus::Left, PlanModeReason::Intent).map(|_| true)
            }
        }
    }
    fn on_admit(
        &self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        message: &MessageRow,
        intent: Option<Intent>,
        created: bool,
    ) -> Result<()> {
        if intent == Some(Intent::PlanEntry) {
            // Files last: if admission failed before this, no plan file was moved.
            return prepare_draft(tx, api.artifacts());
        }
        // The user interjected while planning: the next plan turn gets the full reminder.
        if created
            && message.source == MessageSource::User
            && in_plan_mode(tx, api.id())?
            && let Some(p) = crate::db::current_plan(tx.conn(), api.id())?
        {
            tx.plan_full_reminder_due(&p.id)?;
        }
        Ok(())
    }
    fn handle_op(&self, api: &SessionApi, op: &Op) -> Option<Result<Option<String>>> {
        match op {
            Op::EditPlan { text } => Some(edit_by_user(api, text).map(|_| None)),
            Op::ReviewPlanAgain => Some(answer::review_again(api).map(|_| None)),
            Op::AdoptPlan {
                from_session,
                questionnaire_id,
                option,
                as_goal,
            } => Some(
                answer::adopt(api, from_session, questionnaire_id, *option, *as_goal).map(|_| None),
            ),
            Op::ExportPlan {
                plan_id,
                version,
                path,
                confirm,
            } => Some(
                export::export(api, plan_id.as_deref(), *version, path.as_deref(), *confirm)
                    .map(Some),
            ),
            _ => None,
        }
    }
    fn before_tool(
        &self,
        api: &SessionApi,
        call: &CallInfo<'_>,
        prep: &mut CallPrep,
    ) -> Result<()> {
        // In plan mode the agent's shell is read-only but for the plan file (PM-14).
        // A subagent's shell is confined as its parent's is.
        if call.actor.under_session_policy()
            && call.session.interaction_mode == InteractionMode::Plan
        {
            prep.confine(vec![plan_path(api.artifacts())]);
            prep.network(api.config().plan.shell_network);
            // Builds and tests run: they write into a throwaway layer over the workspace.
            if api.config().sandbox.scratch_shell {
                prep.scratch(SCRATCH_OWNER);
            }
        }
        Ok(())
    }
    fn probes_sandbox(&self, session: &SessionRow) -> bool {
        // The plan reminder says which sandbox layers hold.
        session.interaction_mode == InteractionMode::Plan
    }
    fn on_answer(
        &self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        q: &QuestionnaireRow,
        answer: &Answer,
    ) -> Result<()> {
        answer::on_answer(tx, api, q, answer)
    }
}

#[cfg(test)]
mod entry_tests;

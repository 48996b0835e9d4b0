//! Plan mode (spec PM-1 … PM-22, PM-24): the session investigates read-only, writes one plan
//! file, and only an approved, frozen snapshot of it gets implemented. This module plugs into
//! admission (intents), questionnaire answers, the reminder extension point and the
//! `before_tool_call` chain, and owns the plan document's lifecycle.

mod answer;
mod commands;
mod document;
mod guard;
mod reminder;
pub mod render;
mod tools;

pub(crate) use answer::on_answer;
pub use document::{
    LivePlan, PlanFileError, PlanRead, SNAPSHOT_LIMIT, check_plan_text, live_plan, read_plan_file,
    snapshot, snapshot_of,
};

use crate::commands::CommandRegistry;
use crate::context::ReminderSource;
use crate::error::{Error, Result};
use crate::guard::ToolGuard;
use crate::session::SessionCore;
use crate::store::{self, Tx};
use crate::tools::ToolRegistry;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use waymark_protocol::{Answer, EventKind, InteractionMode, QuestionnaireKind};

/// File name of the canonical plan inside the session's `artifacts/`.
pub const PLAN_FILE: &str = "plan.md";
/// Where an earlier plan file is moved when a new plan starts.
pub const BACKUP_FILE: &str = ".plan.md.plan-entry-backup";

/// The canonical plan file of a session (PM-2).
pub fn plan_path(artifacts: &Path) -> PathBuf {
    artifacts.join(PLAN_FILE)
}

/// Plugs plan mode into a session's registries.
pub(crate) fn install(
    tools: &mut ToolRegistry,
    before_permission: &mut Vec<Arc<dyn ToolGuard>>,
    reminders: &mut Vec<Arc<dyn ReminderSource>>,
    commands: &mut CommandRegistry,
) {
    tools.register(Arc::new(tools::EnterPlanMode));
    tools.register(Arc::new(tools::ExitPlanMode));
    before_permission.insert(0, Arc::new(guard::PlanGuard));
    reminders.push(Arc::new(reminder::PlanReminders));
    commands.register(Arc::new(commands::PlanCommand));
}

/// Checks that a new plan may start now (PM-6, PM-9).
pub(crate) fn check_entry(tx: &Tx<'_>, core: &SessionCore) -> Result<()> {
    if !core.config().beta.desktop_plan_mode {
        return Err(Error::Refused(
            "plan mode is turned off (setting beta.desktop_plan_mode); turn it on to plan first"
                .into(),
        ));
    }
    let session = store::sessions::get(tx.conn(), &core.id)?
        .ok_or_else(|| Error::SessionNotFound(core.id.clone()))?;
    if session.interaction_mode == InteractionMode::Plan {
        return Err(Error::Refused("the session is already in plan mode".into()));
    }
    if let Some(q) = store::questionnaires::pending(tx.conn(), &core.id)? {
        return Err(Error::Refused(format!(
            "plan mode cannot start while the {} questionnaire {} waits for an answer; answer it first",
            q.kind.as_str(),
            q.id
        )));
    }
    Ok(())
}

/// Starts a new plan and switches to plan mode (database part; the caller prepares the
/// draft file with [`prepare_draft`] as the last step of the same transaction).
pub(crate) fn enter(tx: &mut Tx<'_>, core: &SessionCore, reason: &str) -> Result<String> {
    check_entry(tx, core)?;
    let plan_id = core.ids.new_id("plan");
    tx.create_plan(&plan_id, &core.id)?;
    tx.set_interaction_mode(&core.id, InteractionMode::Plan)?;
    tx.emit(
        &core.id,
        EventKind::PlanModeChanged {
            mode: InteractionMode::Plan,
            plan_id: Some(plan_id.clone()),
            reason: reason.to_string(),
        },
    )?;
    Ok(plan_id)
}

/// Leaves plan mode; `status` is the plan's ending (`approved`, `rejected`, `withdrawn`,
/// `left`). A pending approval is withdrawn: leaving never implements anything (PM-21).
pub(crate) fn leave(tx: &mut Tx<'_>, core: &SessionCore, status: &str, reason: &str) -> Result<()> {
    let session = store::sessions::get(tx.conn(), &core.id)?
        .ok_or_else(|| Error::SessionNotFound(core.id.clone()))?;
    if session.interaction_mode != InteractionMode::Plan {
        return Err(Error::Refused("the session is not in plan mode".into()));
    }
    for q in store::questionnaires::list(tx.conn(), &core.id)? {
        if q.status == "pending" && q.kind == QuestionnaireKind::PlanApproval {
            tx.withdraw_questionnaire(&q.id)?;
            tx.emit(
                &core.id,
                EventKind::QuestionnaireAnswered {
                    id: q.id.clone(),
                    kind: q.kind,
                    answer: Answer::Withdraw,
                },
            )?;
        }
    }
    let plan = store::plans::current_plan(tx.conn(), &core.id)?;
    if let Some(p) = &plan {
        tx.set_plan_status(&p.id, status)?;
    }
    tx.set_interaction_mode(&core.id, InteractionMode::Default)?;
    // What the user allowed while planning ends with planning.
    tx.drop_plan_grants(&core.id)?;
    tx.set_exit_reminder(&core.id, Some("due"))?;
    tx.emit(
        &core.id,
        EventKind::PlanModeChanged {
            mode: InteractionMode::Default,
            plan_id: plan.map(|p| p.id),
            reason: reason.to_string(),
        },
    )
}

/// Moves an existing plan file aside and creates an empty draft (PM-3). If creating the
/// draft fails, the earlier file is put back.
pub(crate) fn prepare_draft(artifacts: &Path) -> Result<()> {
    std::fs::create_dir_all(artifacts).map_err(|e| Error::io(artifacts, e))?;
    let plan = plan_path(artifacts);
    let backup = artifacts.join(BACKUP_FILE);
    let moved = std::fs::symlink_metadata(&plan).is_ok();
    if moved {
        std::fs::rename(&plan, &backup).map_err(|e| Error::io(&plan, e))?;
    }
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&plan)
        .map(|_| ());
    if let Err(e) = created {
        if moved {
            let _ = std::fs::rename(&backup, &plan);
        }
        return Err(Error::io(&plan, e));
    }
    Ok(())
}

/// The user edited the plan (PM-23): the file gets the text, a revision authored by the user
/// is frozen, and a pending review now approves this version.
pub(crate) fn edit_by_user(core: &SessionCore, text: &str) -> Result<()> {
    let path = plan_path(&core.artifacts);
    let (content, truncated) = snapshot(text);
    core.write(|tx| {
        if !in_plan_mode(tx, &core.id)? {
            return Err(Error::Refused(
                "the plan can be edited only in plan mode".into(),
            ));
        }
        let (_, rev) = freeze_revision(tx, &core.id, &content, "user", truncated)?;
        if let Some(q) = store::questionnaires::pending(tx.conn(), &core.id)?
            && q.kind == QuestionnaireKind::PlanApproval
        {
            let mut payload = q.payload.clone();
            if let Some(o) = payload.as_object_mut() {
                o.insert("version".into(), rev.version.into());
                o.insert("key".into(), rev.key.clone().into());
                o.insert("sha256".into(), rev.sha256.clone().into());
                o.insert("bytes".into(), rev.bytes.into());
                o.insert("truncated".into(), truncated.into());
            }
            tx.update_questionnaire_payload(&q.id, &payload)?;
        }
        // The file last: if recording failed, the file is untouched.
        crate::tools::fs_policy::write_atomic(&path, text.as_bytes())
            .map_err(|e| Error::Refused(e.to_string()))
    })
}

/// Freezes `content` as the next revision of the session's current plan and announces it.
pub(crate) fn freeze_revision(
    tx: &mut Tx<'_>,
    session_id: &str,
    content: &str,
    author: &str,
    truncated: bool,
) -> Result<(store::plans::PlanRow, store::plans::RevisionRow)> {
    let plan = store::plans::current_plan(tx.conn(), session_id)?
        .ok_or_else(|| Error::Corrupt("plan mode without a plan".into()))?;
    let key = |v: u32| format!("plan/{}/v{v}.md", plan.id);
    // A secret the plan quotes is stored (and implemented, and shown) redacted.
    let content = tx.redact(content).into_owned();
    let rev = tx.add_revision(&plan.id, &key, content.as_bytes(), author, truncated)?;
    tx.emit(
        session_id,
        EventKind::PlanRevision {
            plan_id: plan.id.clone(),
            version: rev.version,
            key: rev.key.clone(),
            sha256: rev.sha256.clone(),
            bytes: rev.bytes,
            author: rev.author.clone(),
            truncated,
        },
    )?;
    Ok((plan, rev))
}

/// Whether the session is in plan mode right now.
pub(crate) fn in_plan_mode(tx: &Tx<'_>, session_id: &str) -> Result<bool> {
    Ok(store::sessions::get(tx.conn(), session_id)?
        .is_some_and(|s| s.interaction_mode == InteractionMode::Plan))
}

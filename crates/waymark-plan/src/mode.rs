//! Plan mode's state: where the plan file is, entering and leaving plan mode, preparing the
//! draft, the user's own edits, and freezing a revision for review.

use crate::db::PlanWrites;
use crate::document::{SNAPSHOT_LIMIT, snapshot};
use crate::review;
use std::path::{Path, PathBuf};
use waymark_extension::SessionApi;
use waymark_extension::error::{Error, Result};
use waymark_protocol::{
    Answer, EventKind, InteractionMode, PlanModeReason, PlanStatus, RevisionAuthor,
};
use waymark_store::{self as store, Tx};

/// The scope of grants given in plan mode; cleared when plan mode ends.
pub const PLAN_SCOPE: &str = "plan";

/// The largest plan file front ends read whole.
pub const PLAN_FILE_CAP: usize = 64 * 1024 * 1024;

/// File name of the canonical plan inside the session's `artifacts/`.
pub const PLAN_FILE: &str = "plan.md";

/// The scratch layer of plan mode's shell (one per session, dropped when plan mode ends).
pub const SCRATCH_OWNER: &str = "plan";
/// Where an earlier plan file is moved when a new plan starts.
pub const BACKUP_FILE: &str = ".plan.md.plan-entry-backup";

/// The canonical plan file of a session (PM-2).
pub fn plan_path(artifacts: &Path) -> PathBuf {
    artifacts.join(PLAN_FILE)
}

/// Checks that a new plan may start now (PM-6, PM-9).
pub(crate) fn check_entry(tx: &Tx<'_>, api: &SessionApi) -> Result<()> {
    if !api.config().beta.desktop_plan_mode {
        return Err(Error::FeatureOff {
            setting: "beta.desktop_plan_mode",
            message:
                "plan mode is turned off (setting beta.desktop_plan_mode); turn it on to plan first"
                    .into(),
        });
    }
    let session = store::sessions::get(tx.conn(), api.id())?
        .ok_or_else(|| Error::SessionNotFound(api.id().to_string()))?;
    if session.interaction_mode == InteractionMode::Plan {
        return Err(Error::refused("the session is already in plan mode".into()));
    }
    if let Some(q) = store::questionnaires::pending(tx.conn(), api.id())? {
        return Err(Error::refused(format!(
            "plan mode cannot start while the {} questionnaire {} waits for an answer; answer it first",
            q.kind().as_str(),
            q.id
        )));
    }
    Ok(())
}

/// Starts a new plan and switches to plan mode (database part; the caller prepares the
/// draft file with [`prepare_draft`] as the last step of the same transaction).
pub(crate) fn enter(tx: &mut Tx<'_>, api: &SessionApi, reason: PlanModeReason) -> Result<String> {
    check_entry(tx, api)?;
    let plan_id = api.new_id("plan");
    tx.create_plan(&plan_id, api.id())?;
    tx.set_interaction_mode(api.id(), InteractionMode::Plan)?;
    tx.emit(
        api.id(),
        EventKind::PlanModeChanged {
            mode: InteractionMode::Plan,
            plan_id: Some(plan_id.clone()),
            reason,
        },
    )?;
    Ok(plan_id)
}

/// Leaves plan mode; `status` is the plan's ending (`approved`, `rejected`, `withdrawn`,
/// `left`). A pending approval is withdrawn: leaving never implements anything (PM-21).
pub(crate) fn leave(
    tx: &mut Tx<'_>,
    api: &SessionApi,
    status: PlanStatus,
    reason: PlanModeReason,
) -> Result<()> {
    let session = store::sessions::get(tx.conn(), api.id())?
        .ok_or_else(|| Error::SessionNotFound(api.id().to_string()))?;
    if session.interaction_mode != InteractionMode::Plan {
        return Err(Error::refused("the session is not in plan mode".into()));
    }
    // The review ends with plan mode, and so does a question asked under plan mode's rules
    // (a shell command the incomplete sandbox could not confine): its call is decided
    // again, under the session's own mode.
    for q in store::questionnaires::list(tx.conn(), api.id())? {
        let of_plan_mode = match &q.question {
            waymark_protocol::Question::PlanApproval(_) => true,
            waymark_protocol::Question::Permission(p) => p.scope.as_deref() == Some(PLAN_SCOPE),
            _ => false,
        };
        if q.is_pending() && of_plan_mode {
            tx.withdraw_questionnaire(&q.id)?;
            tx.emit(
                api.id(),
                EventKind::QuestionnaireAnswered {
                    id: q.id.clone(),
                    kind: q.kind(),
                    answer: Answer::Withdraw,
                },
            )?;
        }
    }
    let plan = crate::db::current_plan(tx.conn(), api.id())?;
    if let Some(p) = &plan {
        tx.set_plan_status(&p.id, status)?;
    }
    tx.set_interaction_mode(api.id(), InteractionMode::Default)?;
    // What plan mode's shell built goes with it (off this thread: a command still running
    // there holds the layer until it ends).
    let sandbox = api.sandbox().clone();
    std::thread::spawn(move || {
        if let Err(e) = sandbox.discard_scratch(SCRATCH_OWNER) {
            tracing::warn!("plan mode's scratch layer was not removed: {e}");
        }
    });
    // What the user allowed while planning ends with planning.
    tx.drop_scoped_grants(api.id(), PLAN_SCOPE)?;
    tx.set_exit_reminder(api.id(), Some(crate::db::ExitReminder::Due))?;
    Ok(tx.emit(
        api.id(),
        EventKind::PlanModeChanged {
            mode: InteractionMode::Default,
            plan_id: plan.map(|p| p.id),
            reason,
        },
    )?)
}

/// Moves an existing plan file aside and creates an empty draft (PM-3), within `tx`: if
/// creating the draft fails, or the transaction does not commit (even its COMMIT failing),
/// the earlier file is put back.
pub(crate) fn prepare_draft(tx: &mut Tx<'_>, artifacts: &Path) -> Result<()> {
    waymark_extension::paths::private_dir(artifacts).map_err(|e| Error::io(artifacts, e))?;
    let plan = plan_path(artifacts);
    let backup = artifacts.join(BACKUP_FILE);
    let moved = std::fs::symlink_metadata(&plan).is_ok();
    if moved {
        std::fs::rename(&plan, &backup).map_err(|e| Error::io(&plan, e))?;
    }
    let created = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&plan)
            .map(|_| ())
    };
    if let Err(e) = created {
        if moved {
            let _ = std::fs::rename(&backup, &plan);
        }
        return Err(Error::io(&plan, e));
    }
    tx.on_rollback(move || {
        // The new draft (empty: nothing ran in plan mode yet) goes, the earlier file returns.
        let _ = std::fs::remove_file(&plan);
        if moved {
            let _ = std::fs::rename(&backup, &plan);
        }
    });
    Ok(())
}

/// The user edited the plan (PM-23): the file gets the text, a revision authored by the user
/// is frozen, and a pending review now approves this version.
pub(crate) fn edit_by_user(api: &SessionApi, text: &str) -> Result<()> {
    if text.len() > SNAPSHOT_LIMIT {
        return Err(Error::refused(format!(
            "the edited plan is {} KiB, larger than a plan may be ({} KiB)",
            text.len().div_ceil(1024),
            SNAPSHOT_LIMIT / 1024
        )));
    }
    let path = plan_path(api.artifacts());
    let (content, truncated) = snapshot(text);
    api.write(|tx| {
        if !in_plan_mode(tx, api.id())? {
            return Err(Error::refused(
                "the plan can be edited only in plan mode".into(),
            ));
        }
        let (_, rev) = freeze_revision(tx, api.id(), &content, RevisionAuthor::User, truncated)?;
        if let Some(q) = store::questionnaires::pending(tx.conn(), api.id())?
            && let waymark_protocol::Question::PlanApproval(mut review) = q.question
        {
            // The pending review now approves the user's version.
            review.version = rev.version;
            review.key = rev.key.clone();
            review.sha256 = rev.sha256.clone();
            review.bytes = rev.bytes;
            review.truncated = truncated;
            // What a goal would take from the plan follows the user's version too.
            review.budget = review::budget(&content);
            review.steps = review::steps(&content);
            let question = waymark_protocol::Question::PlanApproval(review);
            tx.update_question(&q.id, &question)?;
            tx.emit(
                api.id(),
                EventKind::QuestionnaireUpdated {
                    id: q.id.clone(),
                    question: Box::new(question),
                },
            )?;
        }
        // The file last: if recording failed, the file is untouched.
        waymark_tools::fs_policy::write_atomic(&path, text.as_bytes())
            .map_err(|e| Error::refused(e.to_string()))
    })
}

/// Freezes `content` as the next revision of the session's current plan and announces it.
/// The same text as the newest revision by the same author is that revision again (a plan
/// submitted again unchanged, after "Not now"): no new version, so comments drafted on it
/// still apply.
pub(crate) fn freeze_revision(
    tx: &mut Tx<'_>,
    session_id: &str,
    content: &str,
    author: RevisionAuthor,
    truncated: bool,
) -> Result<(crate::db::PlanRow, crate::db::RevisionRow)> {
    let plan = crate::db::current_plan(tx.conn(), session_id)?
        .ok_or_else(|| Error::Corrupt("plan mode without a plan".into()))?;
    let key = |v: u32| format!("plan/{}/v{v}.md", plan.id);
    // A secret the plan quotes is stored (and implemented, and shown) redacted.
    let content = tx.redact(content).into_owned();
    let newest = crate::db::revisions(tx.conn(), &plan.id)?.pop();
    if let Some(same) = newest.filter(|r| {
        r.author == author
            && r.truncated == truncated
            && r.sha256 == crate::db::sha256_hex(content.as_bytes())
    }) {
        return Ok((plan, same));
    }
    let rev = tx.add_revision(&plan.id, &key, content.as_bytes(), author, truncated)?;
    tx.emit(
        session_id,
        EventKind::PlanRevision {
            plan_id: plan.id.clone(),
            version: rev.version,
            key: rev.key.clone(),
            sha256: rev.sha256.clone(),
            bytes: rev.bytes,
            author: rev.author,
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

//! How a goal's state changes and is announced: a status transition (which ends a wait and
//! counts its time), the `goal.update` event and the snapshot pushed to front ends, the
//! continuation queued for an active goal, and an automatic resume called off.

use crate::db::{GoalRow, GoalWrites, current_goal};
use crate::prompts::{self, Nudge};
use crate::report::report;
use waymark_extension::SessionApi;
use waymark_extension::error::Result;
use waymark_protocol::{
    EventKind, GoalActor, GoalReason, GoalStatus, GoalUpdateKind, MessageSource, Position,
};
use waymark_store::{MessageRow, Tx};

pub(crate) const CONTINUATION_KEY: &str = "goal-cont:";

pub(crate) const SUMMARY_KEY: &str = "goal-summary:";

/// Whether a message is the summary turn after a budget stop.
pub(crate) fn is_summary(m: &MessageRow) -> bool {
    m.source == MessageSource::Goal
        && m.idempotency_key
            .as_deref()
            .is_some_and(|k| k.starts_with(SUMMARY_KEY))
}

/// Emits `goal.update` (logged): a status change, or a change `actor` made to the goal.
pub(crate) fn emit_update(
    tx: &mut Tx<'_>,
    g: &GoalRow,
    kind: GoalUpdateKind,
    actor: GoalActor,
) -> Result<()> {
    Ok(tx.emit(
        &g.session_id,
        EventKind::GoalUpdate {
            goal_id: g.id.clone(),
            kind,
            status: g.status,
            reason: g.reason,
            actor,
            usage: Box::new(report(g, crate::Extra::default())),
            usage_limit: g.usage_limit.map(Box::new),
            findings: if g.reason == GoalReason::ChecksWeakened {
                crate::check_records::findings(tx.conn(), &g.id)?.into()
            } else {
                Box::default()
            },
        },
    )?)
}

/// Pushes the full snapshot to front ends (after commit).
pub(crate) fn push_snapshot(api: &SessionApi) {
    let snap = api.read(|c| match current_goal(c, api.id())? {
        Some(g) => Ok(Some(crate::snapshot_in(c, &g)?)),
        None => Ok(None),
    });
    if let Ok(Some(s)) = snap {
        api.transient(EventKind::GoalUpdated { goal: Box::new(s) });
    }
}

/// Changes the goal's status in `tx` and logs it. `g.usage_limit` is kept only when the new
/// status is `usage_limited` (the caller sets it first).
pub(crate) fn transition(
    tx: &mut Tx<'_>,
    g: &mut GoalRow,
    reason: GoalReason,
    actor: GoalActor,
    kind: GoalUpdateKind,
) -> Result<()> {
    g.status = reason.status();
    g.reason = reason;
    g.actor = actor;
    g.question = None;
    // A wait ends with any change but its own start: a goal that stops, or one the user
    // changed, no longer waits (and its time so far is counted).
    if g.wait.is_some() && reason != GoalReason::Waiting {
        let now = tx.now();
        end_wait(tx, g, now)?;
    }
    if g.status != GoalStatus::UsageLimited {
        g.usage_limit = None;
    }
    tx.set_goal_status(&g.id, g.status, reason, actor, g.usage_limit.as_ref())?;
    emit_update(tx, g, kind, actor)
}

/// Queues a goal continuation (or the summary turn) at the tail.
pub(crate) fn enqueue(tx: &mut Tx<'_>, g: &GoalRow, text: &str, key: &str) -> Result<()> {
    waymark_store::Tx::admit_message(
        tx,
        &g.session_id,
        MessageSource::Goal,
        text,
        Position::Tail,
        Some(key),
    )?;
    Ok(())
}

/// Queues the next continuation of an active goal: the contract first, short prompts after.
pub(crate) fn continue_goal(tx: &mut Tx<'_>, g: &mut GoalRow, nudge: Nudge) -> Result<()> {
    continue_goal_with(tx, g, &[nudge])
}

/// [`continue_goal`] with a prompt of several parts, said in order.
pub(crate) fn continue_goal_with(tx: &mut Tx<'_>, g: &mut GoalRow, parts: &[Nudge]) -> Result<()> {
    let text = if g.counters.continuations == 0 {
        prompts::contract(g)
    } else {
        prompts::continuation_of(parts)
    };
    g.counters.continuations += 1;
    let key = format!(
        "{CONTINUATION_KEY}{}:{}:{}",
        g.id, g.revision, g.counters.continuations
    );
    tx.set_goal_counters(&g.id, &g.counters)?;
    enqueue(tx, g, &text, &key)
}

/// When the runtime resumes a rate-limited goal by itself, if it is to (G-3).
pub(crate) fn auto_resume_at(g: &GoalRow) -> Option<i64> {
    g.usage_limit
        .filter(|l| {
            l.auto_resume
                && g.status == GoalStatus::UsageLimited
                && matches!(g.reason, GoalReason::RateLimited | GoalReason::SpendCap)
        })
        .map(|l| l.resets_at)
}

/// Calls off a rate-limited goal's automatic resume (it stays `usage_limited` until the user
/// resumes it); logged as a change by `actor`. Returns whether one was scheduled.
pub(crate) fn cancel_auto_resume(
    tx: &mut Tx<'_>,
    mut g: GoalRow,
    actor: GoalActor,
) -> Result<bool> {
    let Some(mut limit) = g.usage_limit.filter(|_| auto_resume_at(&g).is_some()) else {
        return Ok(false);
    };
    limit.auto_resume = false;
    tx.set_goal_usage_limit(&g.id, &limit)?;
    g.usage_limit = Some(limit);
    emit_update(tx, &g, GoalUpdateKind::Lifecycle, actor)?;
    Ok(true)
}

/// Adds the time waited since it was last counted to the goal's active time (waiting
/// counts toward the time budget while a process runs the session).
pub(crate) fn count_wait(tx: &mut Tx<'_>, g: &mut GoalRow, now: i64) -> Result<()> {
    let Some(w) = g.wait.as_mut() else {
        return Ok(());
    };
    let ms = now.saturating_sub(w.counted_to).max(0) as u64;
    w.counted_to = now.max(w.counted_to);
    g.active_ms = g.active_ms.saturating_add(ms);
    tx.add_goal_usage(&g.id, 0, 0, ms)?;
    tx.set_goal_wait(&g.id, g.wait.as_ref())
}

/// Ends the wait: its time counted, the wait gone.
pub(crate) fn end_wait(tx: &mut Tx<'_>, g: &mut GoalRow, now: i64) -> Result<()> {
    count_wait(tx, g, now)?;
    g.wait = None;
    g.wait_command = None;
    tx.set_goal_wait(&g.id, None)
}

//! Closing a turn from outside its task: a panic, a Stop the turn did not answer in time,
//! or Stop while the turn waits on a questionnaire.

use super::{SessionCore, changed};
use crate::error::Result;
use crate::extension::TurnLost;
use crate::store::{self, TurnStatus};
use crate::turn;
use std::sync::Arc;
use waymark_protocol::{Answer, EventKind, TurnEndReason};

/// A turn whose task panicked: closed as an error, and an active goal it worked for is
/// blocked (`turn_error`), so nothing re-runs the failing work by itself.
pub(super) fn close_panicked_turn(
    core: &Arc<SessionCore>,
    error: &waymark_protocol::ErrorInfo,
) -> Result<()> {
    close_open_turn(
        core,
        TurnEndReason::Error,
        Some(error),
        "not run: the turn stopped on an internal error",
        TurnLost::Failed,
    )
}

/// A running turn that did not end within [`STOP_BACKSTOP`] of Stop: closed as aborted.
pub(super) fn close_stopped_turn(core: &Arc<SessionCore>) -> Result<()> {
    close_open_turn(
        core,
        TurnEndReason::Aborted,
        None,
        "not run: the user stopped the turn",
        TurnLost::Stopped,
    )
}

/// Closes the session's open turn from outside it (its task is gone), with `note` for its
/// calls that never ran, and tells the extensions why.
fn close_open_turn(
    core: &Arc<SessionCore>,
    reason: TurnEndReason,
    error: Option<&waymark_protocol::ErrorInfo>,
    note: &str,
    why: TurnLost,
) -> Result<()> {
    let sid = core.id.clone();
    core.write(|tx| {
        let Some(t) = store::turns::open_turn(tx.conn(), &sid)? else {
            return Ok(());
        };
        turn::close_turn(
            tx,
            core.hooks(),
            &sid,
            turn::TurnEnd {
                turn_id: t.id,
                reason,
                error,
                why: note,
                recovered: false,
            },
        )?;
        core.hooks().on_turn_lost(tx, &sid, why)?;
        Ok(())
    })?;
    changed(core);
    Ok(())
}

/// Stop while a turn waits on a questionnaire: withdraw it and end the turn as aborted.
pub(super) fn abort_parked_turn(core: &SessionCore) -> Result<()> {
    let sid = core.id.clone();
    core.write(|tx| {
        let Some(t) = store::turns::open_turn(tx.conn(), &sid)? else {
            return Ok(());
        };
        if t.status != TurnStatus::Parked {
            return Ok(());
        }
        for q in store::questionnaires::for_turn(tx.conn(), t.id)? {
            if q.is_pending() {
                tx.withdraw_questionnaire(&q.id)?;
                tx.emit(
                    &sid,
                    EventKind::QuestionnaireAnswered {
                        id: q.id.clone(),
                        kind: q.kind(),
                        answer: Answer::Withdraw,
                    },
                )?;
            }
        }
        turn::close_turn(
            tx,
            core.hooks(),
            &sid,
            turn::TurnEnd {
                turn_id: t.id,
                reason: TurnEndReason::Aborted,
                error: None,
                why: "not run: the user stopped the turn",
                recovered: false,
            },
        )
    })
}

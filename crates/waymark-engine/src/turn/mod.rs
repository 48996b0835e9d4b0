//! The session's turn: started from a message or resumed from the store, run on the
//! engine's agent loop (`crate::agent`) with the turn's own recorder (`persisted.rs`) until
//! the model replies without tool calls (`completed`), a tool ends the turn (`terminated`),
//! Stop (`aborted`), the step cap (`step_capped`) or a typed error (`error`). Each of its
//! calls goes policy → guards → run → record (`process_call`). A call that needs the user
//! parks the turn; it resumes from the stored history when the answer arrives.

mod call;
mod child_ask;
mod compact;
mod images;
mod offer;
mod persisted;
mod policy;
mod process;
mod record;

pub(crate) use compact::compact_between_turns;

pub(crate) use call::{Unattended, identify_calls, run_unattended};
pub(crate) use record::{TurnEnd, TurnExit, close_turn, finish};

use crate::error::Result;
use crate::extension::SessionApi;
use crate::session::SessionCore;
use crate::store::{self, HistoryItem, MessageRow, TurnRow, TurnStatus};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use waymark_protocol::{EventKind, MessageSource, TurnEndReason};

/// How a turn run begins.
pub(crate) enum TurnStart {
    New(MessageRow),
    Resume(TurnRow),
}

/// Runs (or resumes) a turn to its end or until it parks.
pub(crate) async fn run(
    core: Arc<SessionCore>,
    start: TurnStart,
    cancel: CancellationToken,
) -> Result<TurnExit> {
    let sid = core.id.clone();
    let (turn_id, source) = match start {
        TurnStart::New(m) => {
            let id = core.write(|tx| {
                let id = tx.start_turn(&sid, m.id)?;
                tx.append_history(
                    &sid,
                    Some(id),
                    &HistoryItem::User {
                        text: m.text.clone(),
                        source: m.source,
                        images: m.images.clone(),
                    },
                )?;
                tx.emit(
                    &sid,
                    EventKind::TurnStarted {
                        turn_id: id,
                        message_id: m.id,
                        source: m.source,
                    },
                )?;
                let api = SessionApi::new(core.clone());
                core.hooks().on_turn_start(tx, &api, id, &m)?;
                Ok(id)
            })?;
            // Outside the transaction: a checkpoint of the workspace as the turn starts.
            let api = SessionApi::new(core.clone());
            core.hooks().before_turn(&api, id, &cancel).await?;
            (id, m.source)
        }
        TurnStart::Resume(t) => {
            core.write(|tx| Ok(tx.set_turn_status(t.id, TurnStatus::Running)?))?;
            let source = core
                .read(|c| Ok(store::messages::get(c, t.message_id)?))?
                .map(|m| m.source)
                .unwrap_or(MessageSource::User);
            (t.id, source)
        }
    };
    tracing::Span::current().record("turn_id", turn_id);
    let result = drive(&core, turn_id, source, &cancel).await;
    match result {
        Ok(TurnExit::Finished(reason)) => {
            let api = SessionApi::new(core.clone());
            core.hooks().settle(&api, turn_id, &cancel).await?;
            Ok(TurnExit::Finished(reason))
        }
        Ok(TurnExit::Parked) => Ok(TurnExit::Parked),
        Err(e) => {
            // Whatever failed, the turn must not stay open.
            finish(&core, turn_id, TurnEndReason::Error, Some(e.info()))?;
            Err(e)
        }
    }
}

/// Runs the turn on the agent loop, its every step stored as it happens.
async fn drive(
    core: &Arc<SessionCore>,
    turn_id: i64,
    source: MessageSource,
    cancel: &CancellationToken,
) -> Result<TurnExit> {
    let mut turn = persisted::Persisted::new(core, turn_id, source, cancel).await?;
    let api = SessionApi::new(core.clone());
    crate::agent::run_loop(core, &api, &mut turn, cancel).await
}

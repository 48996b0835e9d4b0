//! `Op::Rewind` (G-29): the files come back through the extension that keeps checkpoints, the
//! conversation here (the turns after the checkpoint leave the model's history; their rows
//! stay for the transcript and for undoing). Only while no turn is open.

use super::{SessionCore, changed};
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::extension::rewind::Rewound;
use crate::store;
use std::sync::Arc;
use waymark_protocol::EventKind;
use waymark_protocol::checkpoint::RewindScope;

/// Rewinds the session to checkpoint `to` (`running`: a turn's task is running now).
pub(super) async fn rewind(
    core: &Arc<SessionCore>,
    running: bool,
    to: &str,
    scope: RewindScope,
) -> Result<()> {
    let sid = core.id.clone();
    if running {
        return Err(Error::Busy(
            "a turn is running: stop it (Stop in the app, Ctrl-C in the terminal) or let it finish, then rewind".into(),
        ));
    }
    if let Some(t) = core.read(|c| Ok(store::turns::open_turn(c, &sid)?))? {
        return Err(Error::Busy(format!(
            "turn {} waits on a question: answer it or stop the turn, then rewind",
            t.id
        )));
    }
    let api = SessionApi::new(core.clone());
    let plan = {
        match core.hooks().rewind(&api, to, scope) {
            Some(f) => f.await?,
            None => {
                return Err(Error::FeatureOff {
                    setting: "checkpoints.enabled",
                    message: "this session keeps no checkpoints to rewind to".into(),
                });
            }
        }
    };
    let rewound = core.write(|tx| {
        let rewound_turns = if scope.conversation() {
            let turns = store::turns::ids(tx.conn(), &sid)?;
            let set = plan.conversation.rewound(&turns);
            tx.set_rewound(&sid, &set)?;
            set
        } else {
            store::turns::rewound(tx.conn(), &sid)?
        };
        tx.emit(
            &sid,
            EventKind::SessionRewound {
                checkpoint_id: to.to_string(),
                undo_checkpoint_id: plan.undo_checkpoint.clone(),
                scope,
                rewound_turns: rewound_turns.clone(),
                files: plan.files.clone(),
                moved_aside: plan.moved_aside.clone(),
            },
        )?;
        let rewound = Rewound {
            checkpoint: to.to_string(),
            undo_checkpoint: plan.undo_checkpoint.clone(),
            scope,
            rewound_turns,
        };
        core.hooks().on_rewound(tx, &api, &rewound)?;
        Ok(rewound)
    })?;
    tracing::info!(
        checkpoint = %rewound.checkpoint,
        scope = scope.as_str(),
        turns = rewound.rewound_turns.len(),
        "session rewound"
    );
    // The model's history is read again from the store, without the rewound turns.
    core.reset_history();
    changed(core);
    Ok(())
}

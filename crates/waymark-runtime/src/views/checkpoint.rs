//! Checkpoints as front ends read them, and the preview of a rewind (no lease needed).

use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::{paths, store};
use waymark_checkpoint::db;
use waymark_protocol::checkpoint::{CheckpointView, RewindPreview};

impl Runtime {
    /// The session's checkpoints, oldest first.
    pub fn checkpoints(&self, id: &str) -> Result<Vec<CheckpointView>> {
        self.store().view(|c| {
            store::sessions::get(c, id)?.ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            Ok(db::list(c, id)?
                .iter()
                .map(db::CheckpointRow::view)
                .collect())
        })
    }

    /// The newest failure to take a checkpoint in session `id`: when, and what it said.
    pub fn checkpoint_failure(&self, id: &str) -> Result<Option<(i64, String)>> {
        self.store()
            .view(|c| waymark_checkpoint::listing::last_failure(c, id))
    }

    /// The checkpoint taken as turn `turn` of session `id` started ("rewind to here").
    pub fn checkpoint_of_turn(&self, id: &str, turn: i64) -> Result<CheckpointView> {
        self.store()
            .view(|c| db::at_turn_start(c, id, turn))?
            .map(|r| r.view())
            .ok_or_else(|| {
                Error::CheckpointNotFound(format!(
                    "(the start of turn {turn}; checkpoints were off or failed then)"
                ))
            })
    }

    /// What rewinding session `id` to `checkpoint` would change now: each file with its diff,
    /// and the turns that would leave the model's history. Reads the workspace (blocking).
    pub fn rewind_preview(&self, id: &str, checkpoint: &str) -> Result<RewindPreview> {
        let (row, turns, rewound, ws) = self.store().view(|c| {
            let s = store::sessions::get(c, id)?
                .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            let row = db::get(c, id, checkpoint)?
                .ok_or_else(|| Error::CheckpointNotFound(checkpoint.to_string()))?;
            Ok::<_, Error>((
                row,
                store::turns::ids(c, id)?,
                store::turns::rewound(c, id)?,
                s.workspace,
            ))
        })?;
        let sd = paths::session_dir(&self.options().data_dir, id);
        let checkpoints = waymark_checkpoint::shared(&waymark_checkpoint::store_dir(&sd))
            .map_err(|e| Error::Checkpoint(e.to_string()))?;
        let limits = waymark_checkpoint::limits_for(&self.config().checkpoints, &sd);
        let files = waymark_checkpoint::preview::files(
            &checkpoints,
            std::path::Path::new(&ws),
            &row,
            &limits,
        )
        .map_err(|e| Error::Checkpoint(e.to_string()))?;
        let turns = row
            .conversation
            .rewound(&turns)
            .into_iter()
            .filter(|t| !rewound.contains(t))
            .collect();
        Ok(RewindPreview {
            checkpoint: row.view(),
            files,
            turns,
        })
    }
}

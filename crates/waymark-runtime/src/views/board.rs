//! The goal board (G-35): every session with a goal, across projects, with what it spent and
//! when it last did something.

use crate::error::Result;
use crate::runtime::Runtime;
use crate::store;
use waymark_protocol::BoardRow;

impl Runtime {
    /// Every session that has a goal, those that need the user first, then the newest.
    /// `open_here`: the ids of the sessions this process drives.
    pub fn goal_board(&self, open_here: &[String]) -> Result<Vec<BoardRow>> {
        let sessions = self.list_sessions()?;
        let mut rows = self.store().view(|c| {
            let mut rows = Vec::new();
            for s in sessions {
                let Some(g) = crate::goal::db::current_goal(c, &s.id)? else {
                    continue;
                };
                let spend = store::spend::session(c, &s.id)?;
                let last_activity = store::events::last_ts(c, &s.id)?.unwrap_or(s.updated_at);
                rows.push(BoardRow {
                    open_here: open_here.contains(&s.id),
                    goal: crate::goal::snapshot_in(c, &g)?,
                    queue: crate::goal::db::queued_goals(c, &s.id)?,
                    session: s,
                    spend,
                    last_activity,
                });
            }
            Ok::<_, crate::Error>(rows)
        })?;
        rows.sort_by(|a, b| {
            b.session
                .needs_you
                .is_some()
                .cmp(&a.session.needs_you.is_some())
                .then(b.last_activity.cmp(&a.last_activity))
        });
        Ok(rows)
    }
}

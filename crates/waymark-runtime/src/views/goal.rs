//! The goal as front ends read it (no lease needed).

use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::store;

impl Runtime {
    /// The session's current goal as front ends show it.
    pub fn goal(&self, id: &str) -> Result<Option<waymark_protocol::GoalSnapshot>> {
        self.store().view(|c| {
            store::sessions::get(c, id)?.ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            match crate::goal::db::current_goal(c, id)? {
                Some(g) => Ok(Some(crate::goal::snapshot_in(c, &g)?)),
                None => Ok(None),
            }
        })
    }

    /// The goals queued behind the session's goal, in line order (G-46).
    pub fn goal_queue(&self, id: &str) -> Result<Vec<waymark_protocol::QueuedGoal>> {
        self.store().view(|c| {
            store::sessions::get(c, id)?.ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            crate::goal::db::queued_goals(c, id)
        })
    }

    /// The Goal tab: the goal, and its timeline (goal events, its checks' runs, and the turns
    /// finished since the newest goal was set, oldest first).
    pub fn goal_view(&self, id: &str) -> Result<waymark_protocol::GoalView> {
        const RECENT: u64 = 2_000;
        let goal = self.goal(id)?;
        let mut timeline = Vec::new();
        for t in ["goal.create", "goal.update", "goal.clear", "goal.check"] {
            timeline.extend(self.recent_events_of_type(id, t, RECENT)?);
        }
        let since = timeline
            .iter()
            .filter(|e| matches!(e.kind, waymark_protocol::EventKind::GoalCreate { .. }))
            .map(|e| e.seq)
            .max();
        if let Some(since) = since {
            let turns = self.recent_events_of_type(id, "turn.finished", RECENT)?;
            timeline.extend(turns.into_iter().filter(|e| e.seq > since));
        }
        timeline.sort_by_key(|e| e.seq);
        Ok(waymark_protocol::GoalView { goal, timeline })
    }
}

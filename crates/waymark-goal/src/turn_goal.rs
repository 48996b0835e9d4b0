//! Which goal the running turn serves, remembered in the session so per-call checks need no
//! query.

use crate::db::{TurnGoal, turn_goal};
use waymark_extension::SessionApi;
use waymark_extension::error::Result;

/// The session's memory of what its running turn does for a goal, so per-call checks need
/// no query.
#[derive(Default)]
pub(crate) struct TurnGoalSlot(std::sync::Mutex<Option<(i64, TurnGoal)>>);

/// What a turn does for a goal: from memory for the running turn, else from the store.
pub(crate) fn turn_goal_of(api: &SessionApi, turn_id: i64) -> Result<TurnGoal> {
    let slot = api.state::<TurnGoalSlot>();
    let mut cache = slot.0.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((id, tg)) = cache.as_ref()
        && *id == turn_id
    {
        return Ok(tg.clone());
    }
    let tg = api.read(|c| turn_goal(c, turn_id))?;
    *cache = Some((turn_id, tg.clone()));
    Ok(tg)
}

/// Forgets the remembered goal facts of a turn (its proposal changed).
pub(crate) fn forget_turn_goal(api: &SessionApi) {
    *api.state::<TurnGoalSlot>()
        .0
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = None;
}

/// Remembers what the turn starting now does for a goal.
pub(crate) fn remember_turn_goal(api: &SessionApi, turn_id: i64, tg: TurnGoal) {
    *api.state::<TurnGoalSlot>()
        .0
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = Some((turn_id, tg));
}

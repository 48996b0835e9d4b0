//! How deep subagent runs nest: a run started by a call runs one level below that call's
//! (the session's agent is level 0), and none nests deeper than [`MAX_SUBAGENT_DEPTH`],
//! whatever its model keeps asking for. Runs side by side (several `task` calls of one reply)
//! are at the same level: the depth goes down the chain of callers, never across siblings.
//! Each run's level is a task-local around its own future, so siblings polled together each
//! see theirs, and no caller can say what its level is.

use crate::error::{Error, Result};

tokio::task_local! {
    /// The level of the run whose future is being polled (unset: the session's agent).
    static LEVEL: u8;
}

/// The level of the run polling now: 0 for the session's agent.
pub(crate) fn current_level() -> u8 {
    LEVEL.try_with(|l| *l).unwrap_or(0)
}

/// Runs `fut` as a run at `level`: what it starts is counted from there.
pub(crate) async fn at_level<F: std::future::Future>(level: u8, fut: F) -> F::Output {
    LEVEL.scope(level, fut).await
}

/// How deep subagents may nest: a subagent's tool may start another only this far.
pub(crate) const MAX_SUBAGENT_DEPTH: u8 = 3;

/// The depth of a run started by a call at depth `caller`; refused past
/// [`MAX_SUBAGENT_DEPTH`].
pub(crate) fn depth_under(caller: u8) -> Result<u8> {
    let depth = caller.saturating_add(1);
    if depth > MAX_SUBAGENT_DEPTH {
        return Err(Error::refused_as(
            "subagent_too_deep",
            format!(
                "a subagent cannot start another here: subagents nest at most {MAX_SUBAGENT_DEPTH} deep"
            ),
        ));
    }
    Ok(depth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_one_level_below_its_caller_and_none_goes_past_the_limit() {
        assert_eq!(depth_under(0).unwrap(), 1);
        assert_eq!(depth_under(2).unwrap(), 3);
        assert!(depth_under(3).is_err());
        assert!(depth_under(u8::MAX).is_err());
    }

    #[tokio::test]
    async fn siblings_polled_together_each_see_their_own_level() {
        assert_eq!(current_level(), 0);
        let sibling = |n: u8| {
            at_level(n, async move {
                tokio::task::yield_now().await;
                let mine = current_level();
                let inner = at_level(depth_under(mine).unwrap(), async { current_level() }).await;
                (mine, inner)
            })
        };
        let (a, b) = tokio::join!(sibling(1), sibling(2));
        assert_eq!((a, b), ((1, 2), (2, 3)));
        assert_eq!(current_level(), 0);
    }
}

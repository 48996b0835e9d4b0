//! How deep the session's subagent runs nest: each gets its depth, and none nests deeper
//! than [`MAX_SUBAGENT_DEPTH`], whatever its model keeps asking for.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU8, Ordering};

/// How deep subagents may nest: a subagent's tool may start another only this far.
pub(crate) const MAX_SUBAGENT_DEPTH: u8 = 3;

/// How many subagent runs are under way now, one inside another (calls run one at a time,
/// so the runs under way are one chain).
#[derive(Default)]
pub(crate) struct AgentRuns {
    nested: AtomicU8,
}

/// A subagent run under way, at its depth. Its level of nesting is given back when it is
/// dropped, however the run ended.
pub(crate) struct Entered<'a> {
    pub(crate) depth: u8,
    nested: &'a AtomicU8,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.nested.fetch_sub(1, Ordering::AcqRel);
    }
}

impl AgentRuns {
    /// Starts a subagent run one level deeper than the runs now under way; refused past
    /// [`MAX_SUBAGENT_DEPTH`].
    pub(crate) fn enter(&self) -> Result<Entered<'_>> {
        let depth = self.nested.fetch_add(1, Ordering::AcqRel).saturating_add(1);
        // Made before anything can fail, so the level is given back whatever happens.
        let entered = Entered {
            depth,
            nested: &self.nested,
        };
        if depth > MAX_SUBAGENT_DEPTH {
            return Err(Error::refused_as(
                "subagent_too_deep",
                format!(
                    "a subagent cannot start another here: subagents nest at most {MAX_SUBAGENT_DEPTH} deep"
                ),
            ));
        }
        Ok(entered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_level_is_given_back_so_a_refusal_leaves_room_for_the_next_run() {
        let runs = AgentRuns::default();
        let first = runs.enter().unwrap();
        let second = runs.enter().unwrap();
        let third = runs.enter().unwrap();
        assert_eq!((first.depth, second.depth, third.depth), (1, 2, 3));
        assert!(runs.enter().is_err());
        // The refused run took no level, and every run has a number of its own.
        assert!(runs.enter().is_err());
        drop(third);
        let again = runs.enter().unwrap();
        assert_eq!(again.depth, 3);
        drop((first, second, again));
        assert_eq!(runs.enter().unwrap().depth, 1);
    }
}

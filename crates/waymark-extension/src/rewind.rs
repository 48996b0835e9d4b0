//! What a rewind passes between the engine and the extensions. The engine owns the
//! conversation (which turns the model sees); the extension that keeps checkpoints owns the
//! files and knows where in the conversation each checkpoint was taken.

use waymark_protocol::checkpoint::{PathChange, RewindScope};

/// Where the conversation stood when a checkpoint was taken: every turn of the session
/// with an id below `before_turn`, except `hidden` (turns already rewound then). Turn ids
/// grow across sessions, so every later turn of the session has a larger id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConversationPoint {
    pub before_turn: i64,
    pub hidden: Vec<i64>,
}

impl ConversationPoint {
    /// The turns of `turns` (the session's, in order) out of the model's history at this
    /// point.
    pub fn rewound(&self, turns: &[i64]) -> Vec<i64> {
        turns
            .iter()
            .copied()
            .filter(|t| *t >= self.before_turn || self.hidden.contains(t))
            .collect()
    }
}

/// What the checkpoint keeper did for a rewind, before the engine rewinds the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindPlan {
    /// The checkpoint of the state before the rewind (rewinding to it undoes this one).
    pub undo_checkpoint: String,
    /// Where the conversation stood at the checkpoint rewound to.
    pub conversation: ConversationPoint,
    /// What changed in the workspace (empty when the files were not rewound).
    pub files: Vec<PathChange>,
    /// Where things in the way of the restore were moved, if anything was.
    pub moved_aside: Option<String>,
}

/// A rewind as recorded, for [`crate::Extension::on_rewound`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewound {
    pub checkpoint: String,
    pub undo_checkpoint: String,
    pub scope: RewindScope,
    /// Every turn of the session now out of the model's history.
    pub rewound_turns: Vec<i64>,
}

#[cfg(test)]
mod tests {
    use super::ConversationPoint;

    #[test]
    fn a_point_hides_later_turns_and_those_already_rewound() {
        let p = ConversationPoint {
            before_turn: 7,
            hidden: vec![3],
        };
        assert_eq!(p.rewound(&[1, 3, 5, 7, 9]), vec![3, 7, 9]);
        // Every turn back: a point after the newest turn, nothing hidden.
        let all = ConversationPoint {
            before_turn: 10,
            hidden: vec![],
        };
        assert!(all.rewound(&[1, 3, 5, 7, 9]).is_empty());
    }
}

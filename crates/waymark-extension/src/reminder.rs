//! Reminders: guidance extensions add to a turn's context (plan mode's, a goal's), ordered
//! by priority.

use std::path::Path;
use waymark_protocol::MessageSource;
use waymark_store::SessionRow;

/// A piece of guidance for the current turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reminder {
    /// Higher comes first.
    pub priority: i32,
    /// Who contributed it (`plan`, `goal`, …).
    pub source: &'static str,
    pub text: String,
}

/// What a reminder source knows about the turn.
pub struct ReminderContext<'a> {
    pub session: &'a SessionRow,
    pub turn_id: i64,
    pub message_source: MessageSource,
    pub session_dir: &'a Path,
    /// The session, for extensions' reminder sources.
    pub api: Option<&'a crate::SessionApi>,
}

/// A component that adds reminders to turns.
pub trait ReminderSource: Send + Sync {
    fn reminders(&self, cx: &ReminderContext<'_>) -> Vec<Reminder>;
}

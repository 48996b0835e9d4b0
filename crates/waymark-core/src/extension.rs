//! Extensions plug components into every session: tools, guards in the `before_tool_call`
//! chain, reminders for the context and slash commands. Plan mode and thread goals are
//! extensions; the runtime itself only knows the permission guard and `/help`.

use crate::commands::SlashCommand;
use crate::context::ReminderSource;
use crate::guard::ToolGuard;
use crate::tools::Tool;
use std::sync::Arc;

/// Where a guard sits in the chain relative to the permission guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardStage {
    /// Runs first (the plan-mode guard: a refusal there must not ask for permission).
    BeforePermission,
    /// Runs after the permission guard (the goal budget guard).
    AfterPermission,
}

/// A component that adds to every session.
pub trait Extension: Send + Sync {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }
    fn guards(&self) -> Vec<(GuardStage, Arc<dyn ToolGuard>)> {
        Vec::new()
    }
    fn reminders(&self) -> Vec<Arc<dyn ReminderSource>> {
        Vec::new()
    }
    fn commands(&self) -> Vec<Arc<dyn SlashCommand>> {
        Vec::new()
    }
}

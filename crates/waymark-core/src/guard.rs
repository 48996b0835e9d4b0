//! The `before_tool_call` chain: every tool call passes each guard in order (plan guard,
//! permission, goal budget); the first guard that does not allow decides. A guard may allow,
//! deny with a message for the model, or ask the user through a questionnaire.

use crate::store::SessionRow;
use crate::tools::Tool;
use serde_json::Value;
use std::path::Path;
use waymark_protocol::{Answer, QuestionnaireKind};

pub use crate::permission::PermissionGuard;
pub(crate) use crate::permission::permission_answered;

/// What a guard sees of a call.
pub struct GuardCall<'a> {
    pub tool: &'a dyn Tool,
    pub call_id: &'a str,
    pub arguments: &'a Value,
    pub session: &'a SessionRow,
    /// Canonical workspace and session artifacts folders.
    pub workspace: &'a Path,
    pub artifacts: &'a Path,
    /// Whether a shell command of this call would run in the read-only sandbox.
    pub shell_sandboxed: bool,
    /// The session's grants ("allow for session", prefix grants).
    pub grants: &'a [crate::permission::Grant],
    /// The user's answer to a questionnaire this call raised earlier, if any.
    pub answer: Option<(QuestionnaireKind, &'a Answer)>,
    /// The turn the call belongs to (for the verifier: the turn whose claim it checks).
    pub turn_id: i64,
    /// Who makes the call: the session's agent or the goal's read-only verifier.
    pub actor: waymark_protocol::CallActor,
    /// The session, for extensions' guards (the goal budget).
    pub api: Option<&'a crate::extension::SessionApi>,
    /// The private places reads ask about, and git's settings files writes ask about.
    pub protected: &'a crate::sandbox::private::Protected,
}

/// A guard's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum GuardDecision {
    Allow,
    /// Refuse; the message goes to the model as the tool result.
    Deny(String),
    /// Ask the user; the turn parks until the questionnaire is answered.
    /// Only permission questions: the answer binds to this call (its id and digest).
    Ask(Box<waymark_protocol::PermissionQuestion>),
}

/// One link of the chain.
pub trait ToolGuard: Send + Sync {
    fn name(&self) -> &'static str;
    fn before_tool_call(&self, call: &GuardCall<'_>) -> GuardDecision;
}

/// Runs the chain: the first verdict other than `Allow` wins.
pub fn run_chain(guards: &[std::sync::Arc<dyn ToolGuard>], call: &GuardCall<'_>) -> GuardDecision {
    for g in guards {
        match g.before_tool_call(call) {
            GuardDecision::Allow => continue,
            other => return other,
        }
    }
    GuardDecision::Allow
}

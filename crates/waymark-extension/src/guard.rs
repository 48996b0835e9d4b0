//! The `before_tool_call` chain: every tool call passes each guard in order (the guards of
//! extensions placed before the permission guard, the engine's permission guard, those
//! placed after). A guard may allow, deny with a message for the model, or ask the user
//! through a questionnaire. The first refusal decides; a question is asked only when no
//! guard after it refuses the call, so no one is asked about a call that could not run
//! whatever they answered.

use crate::display::{escape_block, escape_line};
use serde_json::Value;
use std::path::Path;
use waymark_protocol::{Answer, GrantOffer, PermissionQuestion, QuestionnaireKind};
use waymark_store::SessionRow;
use waymark_tools::Tool;

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
    pub grants: &'a [waymark_store::Grant],
    /// The user's answer to a questionnaire this call raised earlier, if any.
    pub answer: Option<(QuestionnaireKind, &'a Answer)>,
    /// The turn the call belongs to (for the verifier: the turn whose claim it checks).
    pub turn_id: i64,
    /// Who makes the call: the session's agent, a subagent it started (held to the session's
    /// own policy: see `CallActor::under_session_policy`) or the goal's read-only verifier.
    pub actor: waymark_protocol::CallActor,
    /// The session, for extensions' guards (the goal budget).
    pub api: Option<&'a crate::SessionApi>,
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

/// Runs the chain: the first refusal wins, else the first question, else the call runs.
/// The guards after one that asks still run, so a refusal anywhere (the goal's budget after
/// plan mode's question about an unconfined command) is never preceded by a question an
/// "Allow" would answer with "denied".
pub fn run_chain(guards: &[std::sync::Arc<dyn ToolGuard>], call: &GuardCall<'_>) -> GuardDecision {
    let mut asked = None;
    for g in guards {
        match g.before_tool_call(call) {
            GuardDecision::Allow => {}
            GuardDecision::Deny(why) => return GuardDecision::Deny(why),
            GuardDecision::Ask(q) => {
                asked.get_or_insert(q);
            }
        }
    }
    asked.map_or(GuardDecision::Allow, GuardDecision::Ask)
}

/// What the user's answer to this call's permission question decides, if it was answered:
/// allowed, or denied with their message (else "The user denied this `what`. `otherwise`").
pub fn permission_answered(
    call: &GuardCall<'_>,
    what: &str,
    otherwise: &str,
) -> Option<GuardDecision> {
    let Some((QuestionnaireKind::Permission, answer)) = call.answer else {
        return None;
    };
    Some(match answer {
        Answer::AllowOnce | Answer::AllowForSession | Answer::AllowPrefix => GuardDecision::Allow,
        Answer::Deny { message } => GuardDecision::Deny(match message {
            Some(m) if !m.trim().is_empty() => format!("The user denied this {what}: {m}"),
            _ => format!("The user denied this {what}. {otherwise}"),
        }),
        // Answers of other kinds are refused at answer time; treat as not granted.
        Answer::Approve { .. }
        | Answer::Defer
        | Answer::Revise { .. }
        | Answer::Reject
        | Answer::Withdraw
        | Answer::Accept { .. }
        | Answer::Decline
        | Answer::Cancel => GuardDecision::Deny("The permission request was not granted.".into()),
    })
}

/// The question for a shell command that no grant may cover: what it runs, escaped and
/// whole, offering no grant. The permission guard adds the grants it may offer.
pub fn shell_question(call: &GuardCall<'_>, command: &str) -> PermissionQuestion {
    let tool = call.tool.name();
    let lines = command.lines().count();
    PermissionQuestion {
        tool: tool.to_string(),
        shell: true,
        scope: None,
        arguments: call.arguments.clone(),
        summary: if lines > 1 {
            format!("run a {lines}-line `{tool}` command (shown in full below)")
        } else {
            format!("run `{}`", escape_line(command))
        },
        command: Some(escape_block(command)),
        files: Vec::new(),
        git: false,
        grants: GrantOffer::default(),
        call_id: String::new(),
        call_sha256: String::new(),
    }
}

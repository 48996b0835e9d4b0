//! Small shared DTOs: enums with closed sets of values and plain records.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Who put a message into the queue.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum MessageSource {
    User,
    Goal,
    Questionnaire,
    System,
}

impl MessageSource {
    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }

    /// The variant whose serde name is `s`.
    pub fn parse(s: &str) -> Option<Self> {
        crate::wire::parse(s)
    }
}

/// What the agent may do without asking.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Writes and shell commands ask the user.
    #[default]
    Ask,
    /// Writes are allowed, shell commands ask.
    AutoEdit,
    /// Everything is allowed.
    Auto,
    /// Writes and shell commands are refused.
    ReadOnly,
}

impl PermissionMode {
    pub const ALL: [PermissionMode; 4] = [
        PermissionMode::Ask,
        PermissionMode::AutoEdit,
        PermissionMode::Auto,
        PermissionMode::ReadOnly,
    ];

    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }

    /// The variant whose serde name is `s`.
    pub fn parse(s: &str) -> Option<Self> {
        crate::wire::parse(s)
    }
}

/// A permission mode name that is not one of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a permission mode; use ask, auto-edit, auto or read-only")]
pub struct UnknownPermissionMode(pub String);

impl std::str::FromStr for PermissionMode {
    type Err = UnknownPermissionMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| UnknownPermissionMode(s.to_string()))
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Interaction mode of a session (plan mode lives in its own issue; the column exists from
/// the start so the mode survives restarts).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum InteractionMode {
    #[default]
    Default,
    Plan,
}

impl InteractionMode {
    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }

    /// The variant whose serde name is `s`.
    pub fn parse(s: &str) -> Option<Self> {
        crate::wire::parse(s)
    }
}

/// Why a turn ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum TurnEndReason {
    /// The model replied without tool calls.
    Completed,
    /// A tool result asked to end the turn.
    Terminated,
    /// The user pressed Stop, or the process died mid-turn.
    Aborted,
    /// The turn reached `turn.max_steps` model calls.
    StepCapped,
    /// A typed error ended the turn.
    Error,
}

impl TurnEndReason {
    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }

    /// The variant whose serde name is `s`.
    pub fn parse(s: &str) -> Option<Self> {
        crate::wire::parse(s)
    }
}

/// Token usage of one model call or a sum of them.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cached_tokens: u64,
    /// Some figure is Waymark's estimate, not the provider's: it reported no usage, an
    /// empty one or null fields. For a sum, true when any part was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Usage {
    /// Input plus output tokens (saturating: usage figures come from outside).
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
        self.estimated |= other.estimated;
    }
}

/// Who makes a tool call: the session's agent, the read-only verifier that checks a goal's
/// completion claim, or a subagent an extension runs for the agent, at a depth (1 for one
/// the agent's own call started).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum CallActor {
    #[default]
    Main,
    Verifier,
    Subagent(u8),
}

impl CallActor {
    pub fn is_main(&self) -> bool {
        *self == CallActor::Main
    }

    /// Whether the call is held to the session's own policy (its mode, grants and plan
    /// rules): the agent's, and a subagent's, which never gets more than its parent. The
    /// verifier has a policy of its own.
    pub fn under_session_policy(&self) -> bool {
        matches!(self, CallActor::Main | CallActor::Subagent(_))
    }
}

/// A typed error as it crosses a boundary (IPC, CLI JSON, event log).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ErrorInfo {
    /// Stable machine-readable code (`refused`, `feature_off`, `invalid_settings`, …).
    pub code: String,
    /// What went wrong, written for the user.
    pub message: String,
    /// The settings key the error is about, if any (`beta.thread_goal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
    /// A provider's usage limit: how long after the error it resets, in milliseconds, when
    /// the provider said (its `Retry-After` or rate-limit reset headers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_in_ms: Option<u64>,
}

impl ErrorInfo {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorInfo {
            code: code.into(),
            message: message.into(),
            setting: None,
            resets_in_ms: None,
        }
    }
}

impl fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Outcome of one tool call as the model and the front ends see it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Denied,
    Error,
}

impl ToolStatus {
    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }
}

/// Kinds of pending decisions the user must answer.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum QuestionnaireKind {
    Permission,
    PlanEntry,
    PlanApproval,
    GoalApproval,
    Elicitation,
    ProjectServers,
    ProjectHooks,
}

impl QuestionnaireKind {
    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }

    /// The variant whose serde name is `s`.
    pub fn parse(s: &str) -> Option<Self> {
        crate::wire::parse(s)
    }
}

/// Whether a provider spends the user's own key or a managed (free to the user) route.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum RouteKind {
    #[default]
    OwnKey,
    Managed,
}

/// One row of a side-by-side diff between two plan revisions.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DiffRow {
    pub kind: DiffKind,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// What happened to a line between two revisions.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum DiffKind {
    Same,
    Removed,
    Added,
    /// A removed line paired with the added line that replaced it.
    Changed,
}

/// Where a queued message stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    Queued,
    Running,
    Done,
    Dropped,
}

/// Where a plan stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Drafting,
    AwaitingApproval,
    Approved,
    Rejected,
    Withdrawn,
    /// Plan mode was left without a decision.
    Left,
}

/// Who wrote a plan revision.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum RevisionAuthor {
    Model,
    User,
}

/// Why plan mode was entered or left.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum PlanModeReason {
    /// `/plan` (on or off).
    Command,
    /// An intent on a submitted message (the desktop's plan toggle).
    Intent,
    /// The user approved the agent's request to plan first.
    Agent,
    Approved,
    Rejected,
    Withdrawn,
    /// Auto permission mode: the plan went to work without a review.
    Auto,
}

macro_rules! wire_names {
    ($($t:ty),*) => {$(
        impl $t {
            /// The serde name (as in JSON and the database).
            pub fn as_str(self) -> &'static str {
                crate::wire::name(&self)
            }
            /// The variant whose serde name is `s`.
            pub fn parse(s: &str) -> Option<Self> {
                crate::wire::parse(s)
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

wire_names!(MessageStatus, PlanStatus, RevisionAuthor, PlanModeReason);

/// Why the conversation was compacted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum CompactReason {
    /// The next request would have passed the threshold of the context window.
    Threshold,
    /// The provider refused a request as too long for its window.
    ProviderLimit,
    /// The user asked (`/compact`).
    Manual,
}

//! The read views both front ends show, assembled by the runtime: the desktop returns them
//! over IPC and the CLI prints them with `--json`, so both see the same types.

use crate::{
    DiffRow, Event, GoalSnapshot, InteractionMode, MessageSource, MessageStatus, PermissionMode,
    PlanStatus, RevisionAuthor, Usage,
};
use serde::{Deserialize, Serialize};

/// An open session: its snapshot, the newest page of its log and its goal.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionView {
    pub snapshot: SessionSnapshot,
    /// The newest logged events, oldest first (the transcript is rebuilt from them). Older
    /// pages: `events(after, limit)`.
    pub events: Vec<Event>,
    /// Whether `events` starts at the beginning of the log.
    pub complete: bool,
    pub goal: Option<GoalSnapshot>,
    /// The goals queued behind it, in line order (G-46).
    pub goal_queue: Vec<crate::QueuedGoal>,
    /// The project-instruction files read when the session started, in the order the model
    /// sees them (empty for a session started before they were read).
    pub instructions: Vec<InstructionFile>,
}

/// Where an instructions file comes from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum InstructionScope {
    /// The user's own file in the config folder, for every project.
    User,
    /// `AGENTS.md` (or `CLAUDE.md`) in the workspace or a parent folder up to the git root.
    Project,
}

/// One project-instructions file as a session took it when it started.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct InstructionFile {
    pub path: String,
    pub scope: InstructionScope,
    /// The file's size in bytes.
    pub bytes: u32,
    /// How many of them the model sees (less once the 32 KiB cap is reached).
    pub included_bytes: u32,
    /// Why the file was not read (not a regular file, unreadable), if it was not.
    pub error: Option<String>,
}

/// The session's goal and its history.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GoalView {
    pub goal: Option<GoalSnapshot>,
    /// Goal events (create, update, clear) and the turns finished since the newest goal was
    /// set, oldest first: the timeline and the burn-down.
    pub timeline: Vec<Event>,
}

/// One session with a goal, as the goal board shows it (G-35).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BoardRow {
    pub session: crate::SessionSummary,
    pub goal: GoalSnapshot,
    /// The goals queued behind it, in line order (G-46).
    pub queue: Vec<crate::QueuedGoal>,
    /// What the session's model calls cost so far.
    pub spend: crate::cost::Spend,
    /// Unix ms of the session's newest logged event.
    pub last_activity: i64,
    /// Whether this process has the session open now.
    pub open_here: bool,
}

/// One frozen plan revision.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PlanRevisionInfo {
    pub plan_id: String,
    pub version: u32,
    pub sha256: String,
    pub bytes: u32,
    pub author: RevisionAuthor,
    pub truncated: bool,
    pub created_at: i64,
}

/// The plan: the live file, rendered, every revision, and the review state.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PlanView {
    pub path: String,
    pub markdown: Option<String>,
    /// Sanitized HTML rendered by the runtime (PM-24).
    pub html: String,
    pub revisions: Vec<PlanRevisionInfo>,
    /// The revision a pending review approves, when one is pending.
    pub review: Option<ReviewState>,
    /// Every plan of the session, oldest first: one per entry into plan mode (PM-26).
    #[serde(default)]
    pub plans: Vec<PlanSummary>,
    /// The comments on the current plan's revisions, oldest first (PM-25).
    #[serde(default)]
    pub comments: Vec<PlanComment>,
}

/// One plan of a session and how it ended.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PlanSummary {
    pub plan_id: String,
    /// `drafting` or `awaiting_approval` while open; then `approved`, `rejected`,
    /// `withdrawn`, or `left` (plan mode ended without a decision).
    pub status: PlanStatus,
    pub revisions: u32,
    /// The first heading of its newest revision (redacted), if it has one.
    pub title: Option<String>,
    pub created_at: i64,
    pub ended_at: Option<i64>,
    /// The session's current plan (the one at `artifacts/plan.md`).
    pub current: bool,
}

/// A revision of any plan of the session, to read: its Markdown and the sanitized HTML.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PlanRevisionText {
    pub plan_id: String,
    pub version: u32,
    pub markdown: String,
    pub html: String,
}

/// Where a comment's passage stands in the newest revision of its plan.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum CommentState {
    /// No later revision yet.
    Open,
    /// A later revision changed the passage (or removed it).
    Addressed,
    /// A later revision holds the passage word for word (perhaps at other lines).
    Unchanged,
}

/// A comment the user attached to lines of a plan revision (PM-25).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PlanComment {
    pub id: i64,
    pub plan_id: String,
    /// The revision the comment was made on, and its lines there (1-based, inclusive).
    pub version: u32,
    pub start: u32,
    pub end: u32,
    /// The commented lines as they were.
    pub quote: String,
    pub text: String,
    pub state: CommentState,
    /// Where the passage is in the newest revision when it is unchanged there.
    pub now_at: Option<(u32, u32)>,
}

/// The revision under review, and whether the file has changed since it was submitted
/// (approving implements the submitted revision, not the file).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ReviewState {
    pub plan_id: String,
    pub version: u32,
    pub file_changed: bool,
}

/// One plan revision, as a diff names it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RevisionRef {
    pub plan_id: String,
    pub version: u32,
}

/// A diff between two plan revisions: unified, and row by row.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PlanDiff {
    pub unified: String,
    pub rows: Vec<DiffRow>,
}

/// A session as listed by `waymark sessions` and the desktop session list.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionSummary {
    pub id: String,
    pub workspace: String,
    pub title: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub interaction_mode: InteractionMode,
    pub permission_mode: PermissionMode,
    pub model: Option<String>,
    pub queued: u64,
    pub pending_questionnaire: Option<String>,
    /// Why the session waits on the user, in words, when it does: a question or review is
    /// open, or its goal is blocked or paused. The lists badge it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_you: Option<String>,
    /// The branch of the git worktree the session works in (`waymark/<name>`), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// For a session in a worktree, the folder of the project's checkout it stands for (the
    /// session list groups it there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// A pending or answered questionnaire.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct QuestionnaireInfo {
    pub id: String,
    pub question: crate::Question,
    pub status: crate::QuestionnaireStatus,
    pub answer: Option<crate::Answer>,
}

/// One message in the queue or history of a session.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MessageInfo {
    pub id: i64,
    pub source: MessageSource,
    pub text: String,
    pub status: MessageStatus,
}

/// Everything `waymark show` prints.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionSnapshot {
    pub summary: SessionSummary,
    pub session_dir: String,
    pub messages: Vec<MessageInfo>,
    pub questionnaires: Vec<QuestionnaireInfo>,
    pub turns: u64,
    pub usage: Usage,
    /// What the session's model calls cost (G-31).
    #[serde(default)]
    pub spend: crate::cost::Spend,
    /// The same in USD; `None` when a call's model had no price (unknown, never $0).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    pub last_seq: u64,
}

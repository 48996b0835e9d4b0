//! Checkpoints and rewind as front ends see them: the checkpoints of a session, what a
//! rewind would change, and what one did.

use serde::{Deserialize, Serialize};

/// Why a checkpoint was taken.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum CheckpointTrigger {
    /// Before a turn starts.
    TurnStart,
    /// Before a tool call that may write runs (every write tool, every shell command, every
    /// tool of another program that is not read-only).
    BeforeTool,
    /// Before a rewind changed anything: rewinding to it undoes the rewind.
    Rewind,
}

impl CheckpointTrigger {
    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }
    pub fn parse(s: &str) -> Option<CheckpointTrigger> {
        crate::wire::parse(s)
    }
}

/// How a path changed between two checkpoints.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum PathChangeKind {
    Added,
    Modified,
    Deleted,
}

/// A path that changed, relative to the workspace (`/`-separated).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PathChange {
    pub path: String,
    pub change: PathChangeKind,
}

/// A file a checkpoint left out, and why (too big, unreadable, changed while read). An
/// empty path stands for a folder or ignore file noted as a whole in the reason.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SkippedFile {
    pub path: String,
    pub bytes: u64,
    pub reason: String,
}

/// One checkpoint of a session's workspace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CheckpointView {
    pub id: String,
    /// The turn it was taken in (or before, for `turn_start`); none for a rewind's.
    pub turn: Option<i64>,
    /// Unix time in milliseconds.
    pub time: i64,
    pub trigger: CheckpointTrigger,
    /// The tool call it was taken before (`before_tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What changed in the workspace since the previous checkpoint.
    pub changed: Vec<PathChange>,
    /// What it left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedFile>,
}

/// What a rewind brings back. Both by default.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum RewindScope {
    /// The files and the conversation.
    #[default]
    Both,
    /// The workspace's files only; the conversation goes on as it is.
    Files,
    /// The conversation only; the files stay as they are.
    Conversation,
}

impl RewindScope {
    pub fn files(self) -> bool {
        matches!(self, RewindScope::Both | RewindScope::Files)
    }
    pub fn conversation(self) -> bool {
        matches!(self, RewindScope::Both | RewindScope::Conversation)
    }
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }
}

/// What rewinding to a checkpoint would do, shown before it acts.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RewindPreview {
    pub checkpoint: CheckpointView,
    /// Each file that would change, with its diff from now to the checkpoint.
    pub files: Vec<crate::FileChange>,
    /// The turns that would leave the model's history (a conversation rewind).
    pub turns: Vec<i64>,
}

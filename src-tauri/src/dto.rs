//! What the commands return: views assembled from the runtime's read API.

use serde::{Deserialize, Serialize};
use specta::Type;
use waymark_protocol::{Event, GoalSnapshot, SessionSnapshot};

/// Facts the UI needs at start.
#[derive(Debug, Clone, Serialize, Type)]
pub struct AppInfo {
    pub version: String,
    pub data_dir: String,
    pub settings_file: String,
    /// No model is configured: the UI shows the demo banner.
    pub demo: bool,
    /// Settings could not be read; the app runs on defaults and says why.
    pub settings_error: Option<String>,
}

/// An open session as the main window shows it.
#[derive(Debug, Clone, Serialize, Type)]
pub struct SessionView {
    pub snapshot: SessionSnapshot,
    /// The newest logged events, oldest first (the transcript is rebuilt from them).
    pub events: Vec<Event>,
    /// Whether `events` starts at the beginning of the log.
    pub complete: bool,
    pub goal: Option<GoalSnapshot>,
}

/// One frozen plan revision.
#[derive(Debug, Clone, Serialize, Deserialize, Type, PartialEq, Eq)]
pub struct PlanRevisionInfo {
    pub plan_id: String,
    pub version: u32,
    pub sha256: String,
    pub bytes: u32,
    pub author: String,
    pub truncated: bool,
    pub created_at: i64,
}

/// The Plan tab.
#[derive(Debug, Clone, Serialize, Type)]
pub struct PlanView {
    pub path: String,
    pub markdown: Option<String>,
    /// Sanitized HTML rendered by the backend (PM-24).
    pub html: String,
    pub revisions: Vec<PlanRevisionInfo>,
    /// The revision a pending review approves, when one is pending.
    pub review: Option<PlanReview>,
}

/// The revision under review, and whether the file shown has changed since it was
/// submitted (approving implements the submitted revision).
#[derive(Debug, Clone, Serialize, Type)]
pub struct PlanReview {
    pub version: u32,
    pub file_changed: bool,
}

/// A diff between two plan revisions, line by line.
#[derive(Debug, Clone, Serialize, Type)]
pub struct PlanDiff {
    pub unified: String,
    pub rows: Vec<waymark_protocol::DiffRow>,
}

/// A stored API key: which variable name it answers to, never the key itself.
#[derive(Debug, Clone, Serialize, Type)]
pub struct KeyStatus {
    pub env_name: String,
    pub stored: bool,
}

/// The Settings page.
#[derive(Debug, Clone, Serialize, Type)]
pub struct SettingsView {
    pub config: waymark_protocol::config::Config,
    pub keys: Vec<KeyStatus>,
    /// Why the OS keyring cannot be used, when it cannot.
    pub keyring_error: Option<String>,
}

/// What a submitted message did.
#[derive(Debug, Clone, Serialize, Type)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Submitted {
    Admitted { message_id: i64 },
    Command { output: String },
}

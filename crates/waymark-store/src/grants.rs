//! The rows of a session's grants and instructions: what the permission guard and the
//! context read back, kept here so the store names no layer above it.

use waymark_protocol::InstructionFile;

/// How much a grant covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantKind {
    /// Every call of a file tool (outside `.git/`).
    Tool,
    /// One exact command line.
    Exact,
    /// Commands starting with a prefix.
    Prefix,
}

impl GrantKind {
    /// The serde name (as in the database).
    pub fn as_str(self) -> &'static str {
        waymark_protocol::wire::name(&self)
    }

    pub fn parse(s: &str) -> Option<GrantKind> {
        waymark_protocol::wire::parse(s)
    }
}

/// A session grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub tool: String,
    pub kind: GrantKind,
    /// The command line (exact) or prefix; empty for a tool grant.
    pub pattern: String,
}

/// The instructions a session took when it started: the files and the text the model sees
/// (empty when there is none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    pub files: Vec<InstructionFile>,
    pub text: String,
}

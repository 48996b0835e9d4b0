//! What the front ends show of the MCP servers (`waymark mcp list --json`, `/mcp`, the
//! Settings' "Tool servers"): each server's state, its tools and the tools left out.

use serde::{Deserialize, Serialize};

/// Where a server stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// Being started (or not started yet: no session has opened).
    Starting,
    Ready,
    /// It could not be started, or it exited; `reason` says why.
    Failed,
    /// `enabled: false` in the settings.
    Disabled,
}

/// One tool of a server.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpToolView {
    /// The server's name for it.
    pub name: String,
    /// The name the model calls it by (`mcp__<server>__<tool>`).
    pub model_name: String,
    /// The server's text, as it sent it: escape it before showing it.
    pub description: String,
    /// Listed in `read_only_tools`, or marked `readOnlyHint` by the server: runs in plan
    /// mode and without asking.
    pub read_only: bool,
    /// The user lists it in `read_only_tools` (else a read-only tool is so by the server's
    /// own `readOnlyHint`).
    #[serde(default)]
    pub vouched: bool,
}

/// A tool the model is not offered, and why.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpSkippedTool {
    pub name: String,
    pub reason: String,
}

/// One argument of a prompt.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpPromptArgument {
    pub name: String,
    /// The server's text: escape it before showing it.
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub required: bool,
}

/// One prompt of a server, typed as the slash command `/<command> arg=value…`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpPromptView {
    /// The server's name for it.
    pub name: String,
    /// The command, without its `/` (`mcp__<server>__<prompt>`).
    pub command: String,
    /// The server's text: escape it before showing it.
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub arguments: Vec<McpPromptArgument>,
}

impl McpPromptView {
    /// How the command is typed: `/mcp__s__p city=… [state=…]`.
    pub fn usage(&self) -> String {
        let mut out = format!("/{}", self.command);
        for a in &self.arguments {
            if a.required {
                out.push_str(&format!(" {}=…", a.name));
            } else {
                out.push_str(&format!(" [{}=…]", a.name));
            }
        }
        out
    }
}

/// One configured server.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpServerView {
    pub name: String,
    pub state: McpServerState,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The command line or the URL, as the settings give it (`${VAR}` unexpanded).
    pub target: String,
    pub tools: Vec<McpToolView>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<McpSkippedTool>,
    /// Its prompts, each a slash command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<McpPromptView>,
}

impl McpServerState {
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }
}

//! Why a server could not be used or a call failed, and durations as those messages give them.

use std::time::Duration;

/// Why a server could not be used, or a call failed; names the server.
#[derive(Debug, Clone, thiserror::Error)]
#[error("MCP server `{server}`: {message}")]
pub struct McpError {
    pub server: String,
    pub message: String,
}

impl McpError {
    pub fn new(server: &str, message: impl Into<String>) -> McpError {
        McpError {
            server: server.to_string(),
            message: message.into(),
        }
    }
}

/// `1 s`, `2.5 s`: a duration as messages give it.
pub(crate) fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

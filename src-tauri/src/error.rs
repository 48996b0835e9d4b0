//! Errors as they cross IPC: `{code, message}`, never a bare string.

use serde::Serialize;
use specta::Type;

/// An error returned to the webview.
#[derive(Debug, Clone, Serialize, Type, PartialEq, Eq)]
pub struct IpcError {
    /// Stable machine-readable code (`session_busy`, `refused`, `invalid_settings`, …).
    pub code: String,
    /// What went wrong, written for the user.
    pub message: String,
}

impl IpcError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        IpcError {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

impl From<waymark_core::Error> for IpcError {
    fn from(e: waymark_core::Error) -> Self {
        IpcError::new(e.code(), e.to_string())
    }
}

impl From<waymark_protocol::config::ConfigError> for IpcError {
    fn from(e: waymark_protocol::config::ConfigError) -> Self {
        IpcError::new("invalid_settings", e.to_string())
    }
}

pub type IpcResult<T> = std::result::Result<T, IpcError>;

//! What is wrong with a setting: the key, as a dotted path, and why.

/// An invalid settings file: the key (dotted path) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid setting `{key}`: {message}")]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl From<ConfigError> for waymark_protocol::ErrorInfo {
    fn from(e: ConfigError) -> Self {
        let mut info = waymark_protocol::ErrorInfo::new("invalid_settings", e.to_string());
        info.setting = Some(e.key);
        info
    }
}

impl ConfigError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            key: key.into(),
            message: message.into(),
        }
    }
}

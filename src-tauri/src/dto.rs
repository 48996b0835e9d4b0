//! What the commands return: views assembled from the runtime's read API.

use serde::Serialize;
use specta::Type;

/// Facts the UI needs at start.
#[derive(Debug, Clone, Serialize, Type)]
pub struct AppInfo {
    pub version: String,
    pub data_dir: String,
    pub settings_file: String,
    /// No model is configured: the UI shows the setup card.
    pub demo: bool,
    /// The settings' default model, when there is one (the model picker offers it).
    pub default_model: Option<String>,
    /// Settings could not be read; the app runs on defaults and says why.
    pub settings_error: Option<String>,
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
    pub config: waymark_config::Config,
    pub keys: Vec<KeyStatus>,
    /// Why the OS keyring cannot be used, when it cannot.
    pub keyring_error: Option<String>,
}

/// A model the setup card reached.
#[derive(Debug, Clone, Serialize, Type)]
pub struct SetupCheck {
    /// As its provider names it (`custom:m1`).
    pub model: String,
    /// How long the test call took.
    pub millis: u64,
}

/// What a submitted message did.
#[derive(Debug, Clone, Serialize, Type)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Submitted {
    Admitted { message_id: i64 },
    Command { output: String },
}

//! The settings file (shared with the CLI) persisted through tauri-plugin-store, and API keys
//! in the OS keyring. A file that does not parse is kept aside, never overwritten silently.

use crate::error::{IpcError, IpcResult};
use std::path::{Path, PathBuf};
use waymark_protocol::config::Config;

/// Keyring service name under which API keys are stored (one entry per variable name).
pub const KEYRING_SERVICE: &str = "waymark";

/// What can go wrong with the settings file or the keyring.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{path}: {source}")]
    Invalid {
        path: String,
        source: waymark_protocol::config::ConfigError,
    },
    #[error("cannot read {path}: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "the system keyring is not available ({0}); start a Secret Service (for example \
         gnome-keyring) or set the key as an environment variable instead"
    )]
    KeyringUnavailable(keyring::Error),
    #[error("keyring: {0}")]
    Keyring(keyring::Error),
}

impl From<SettingsError> for IpcError {
    fn from(e: SettingsError) -> Self {
        let code = match &e {
            SettingsError::Invalid { .. } => "invalid_settings",
            SettingsError::Unreadable { .. } => "settings_unreadable",
            SettingsError::KeyringUnavailable(_) => "keyring_unavailable",
            SettingsError::Keyring(_) => "keyring",
        };
        IpcError::new(code, e.to_string())
    }
}

/// Reads the settings file: defaults when it does not exist, an error naming the key when it
/// is invalid.
pub fn load(path: &Path) -> Result<Config, SettingsError> {
    let shown = || path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Config::from_json(&text).map_err(|source| SettingsError::Invalid {
            path: shown(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(source) => Err(SettingsError::Unreadable {
            path: shown(),
            source,
        }),
    }
}

/// Moves an unreadable settings file aside before the first save replaces it.
pub fn keep_aside(path: &Path, now_ms: i64) -> Option<PathBuf> {
    if load(path).is_ok() || !path.exists() {
        return None;
    }
    let aside = path.with_extension(format!("json.invalid-{now_ms}"));
    std::fs::rename(path, &aside).ok().map(|_| aside)
}

/// Writes the settings through the store plugin: one store key per top-level section, so the
/// file stays the plain settings JSON the CLI reads.
pub fn save<R: tauri::Runtime>(
    app: &tauri::AppHandle<R>,
    path: &Path,
    config: &Config,
) -> IpcResult<()> {
    use tauri_plugin_store::StoreExt;
    config.validate()?;
    let value = serde_json::to_value(config)
        .map_err(|e| IpcError::new("invalid_settings", e.to_string()))?;
    let store = app
        .store(path)
        .map_err(|e| IpcError::new("settings_store", e.to_string()))?;
    store.clear();
    if let serde_json::Value::Object(map) = value {
        for (k, v) in map {
            if !v.is_null() {
                store.set(k, v);
            }
        }
    }
    store
        .save()
        .map_err(|e| IpcError::new("settings_store", format!("{}: {e}", path.display())))
}

/// The variable names API keys answer to (see [`waymark_core::secrets::key_names`]).
pub fn key_names(config: &Config) -> Vec<String> {
    waymark_core::secrets::key_names(config)
}

/// API keys in the OS keyring (Secret Service on Linux).
pub struct Keyring;

impl Keyring {
    fn entry(env_name: &str) -> Result<keyring::Entry, SettingsError> {
        keyring::Entry::new(KEYRING_SERVICE, env_name).map_err(classify)
    }

    pub fn get(env_name: &str) -> Result<Option<String>, SettingsError> {
        match Self::entry(env_name)?.get_password() {
            Ok(k) => Ok(Some(k)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(classify(e)),
        }
    }

    pub fn set(env_name: &str, key: &str) -> Result<(), SettingsError> {
        Self::entry(env_name)?.set_password(key).map_err(classify)
    }

    pub fn delete(env_name: &str) -> Result<(), SettingsError> {
        match Self::entry(env_name)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(classify(e)),
        }
    }
}

fn classify(e: keyring::Error) -> SettingsError {
    match e {
        keyring::Error::PlatformFailure(_) | keyring::Error::NoStorageAccess(_) => {
            SettingsError::KeyringUnavailable(e)
        }
        other => SettingsError::Keyring(other),
    }
}

/// Checks a key name the UI sends: a plain environment-variable name.
pub fn check_env_name(name: &str) -> IpcResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(IpcError::new(
            "invalid_key_name",
            format!("`{name}` is not a variable name (use capitals, digits and _)"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_file_is_reported_and_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        assert_eq!(load(&p).unwrap(), Config::default());
        std::fs::write(&p, r#"{"beta": {"thread_goal": "yes"}}"#).unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("beta.thread_goal"), "{e}");
        let aside = keep_aside(&p, 7).unwrap();
        assert!(!p.exists());
        assert_eq!(
            std::fs::read_to_string(aside).unwrap(),
            r#"{"beta": {"thread_goal": "yes"}}"#
        );
        // A valid file is left where it is.
        std::fs::write(&p, "{}").unwrap();
        assert_eq!(keep_aside(&p, 8), None);
        assert!(p.exists());
    }

    #[test]
    fn key_names_cover_named_providers() {
        let c = Config::from_json(
            r#"{"providers": {"my-proxy": {"kind": "openai", "base_url": "http://x"},
                "lab": {"kind": "anthropic", "base_url": "http://y", "api_key_env": "LAB_KEY"}}}"#,
        )
        .unwrap();
        assert_eq!(
            key_names(&c),
            ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LAB_KEY"]
        );
        assert!(check_env_name("OPENAI_API_KEY").is_ok());
        assert!(check_env_name("rm -rf").is_err());
    }
}

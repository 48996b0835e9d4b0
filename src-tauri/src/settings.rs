//! The settings file (shared with the CLI; read and written by `waymark_runtime::settings`), and
//! API keys in the OS keyring.

use crate::error::{IpcError, IpcResult};
use std::path::Path;
use waymark_config::Config;

/// Keyring service name under which API keys are stored (one entry per variable name).
pub const KEYRING_SERVICE: &str = "waymark";

/// What can go wrong with the keyring.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
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
            SettingsError::KeyringUnavailable(_) => "keyring_unavailable",
            SettingsError::Keyring(_) => "keyring",
        };
        IpcError::new(code, e.to_string())
    }
}

/// Reads the settings file (see [`waymark_runtime::settings::load`]).
pub fn load(path: &Path) -> Result<Config, waymark_runtime::Error> {
    waymark_runtime::settings::load(path, false)
}

/// The variable names API keys answer to (see [`waymark_runtime::secrets::key_names`]).
pub fn key_names(config: &Config) -> Vec<String> {
    waymark_runtime::secrets::key_names(config)
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

    /// The app reads the settings through core: a bad value names its key.
    #[test]
    fn a_corrupt_file_is_reported_with_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        assert_eq!(load(&p).unwrap(), Config::default());
        std::fs::write(&p, r#"{"beta": {"thread_goal": "yes"}}"#).unwrap();
        let e = load(&p).unwrap_err();
        assert_eq!(e.setting(), Some("beta.thread_goal"), "{e}");
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

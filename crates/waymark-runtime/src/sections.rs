//! The settings sections extensions own (`extensions.<name>`): each is handed to the
//! extension of that name to check, and a section no extension claims is refused, so a
//! misspelt name is never silently ignored.

use crate::extension::Extension;
use std::sync::Arc;
use waymark_config::{Config, ConfigError};

/// Checks every `extensions.<name>` section of `config` with the extension of that name;
/// the first refusal names its key in full (`extensions.<name>.<key>`).
pub fn check(config: &Config, extensions: &[Arc<dyn Extension>]) -> Result<(), ConfigError> {
    for (name, section) in &config.extensions {
        let prefix = format!("extensions.{name}");
        let Some(ext) = extensions.iter().find(|e| e.name() == name) else {
            return Err(ConfigError::new(
                prefix,
                format!(
                    "no extension named `{name}` has settings; {}",
                    claimed(extensions)
                ),
            ));
        };
        match ext.check_settings(section) {
            None => {
                return Err(ConfigError::new(
                    prefix,
                    format!(
                        "the `{name}` extension has no settings; {}",
                        claimed(extensions)
                    ),
                ));
            }
            Some(Err(e)) => {
                let key = if e.key.is_empty() {
                    prefix
                } else {
                    format!("{prefix}.{}", e.key)
                };
                return Err(ConfigError::new(key, e.message));
            }
            Some(Ok(())) => {}
        }
    }
    Ok(())
}

/// Which sections may be given, in words.
fn claimed(extensions: &[Arc<dyn Extension>]) -> String {
    let names: Vec<String> = extensions
        .iter()
        .filter(|e| e.check_settings(&serde_json::Value::Null).is_some())
        .map(|e| format!("`{}`", e.name()))
        .collect();
    if names.is_empty() {
        "no extension in use has a settings section".to_string()
    } else {
        format!("the sections are {}", names.join(", "))
    }
}

//! The settings file: load (defaults when there is none, an error naming the file and the
//! key when it is invalid), validate, and save (atomically, private to the user). Both front
//! ends go through here; [`crate::Runtime::apply_settings`] puts saved settings in force.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use waymark_protocol::config::Config;

/// Reads the settings at `path`. A missing file gives the defaults unless `required`.
pub fn load(path: &Path, required: bool) -> Result<Config> {
    match std::fs::read_to_string(path) {
        Ok(text) => Config::from_json(&text).map_err(|source| Error::InvalidSettings {
            path: path.display().to_string(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(Config::default()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Moves an unreadable settings file aside (`settings.json.invalid-<ms>`) so that saving
/// does not lose what the user wrote; returns where it went.
pub fn keep_aside(path: &Path, now_ms: i64) -> Option<PathBuf> {
    if !path.exists() || load(path, false).is_ok() {
        return None;
    }
    let aside = path.with_extension(format!("json.invalid-{now_ms}"));
    std::fs::rename(path, &aside).ok().map(|_| aside)
}

/// Validates and writes the settings as plain JSON (no nulls), through a temporary file and
/// a rename, readable by the user only.
pub fn save(path: &Path, config: &Config) -> Result<()> {
    config.validate()?;
    let mut value = serde_json::to_value(config).map_err(|e| Error::Corrupt(e.to_string()))?;
    drop_nulls(&mut value);
    let mut text =
        serde_json::to_string_pretty(&value).map_err(|e| Error::Corrupt(e.to_string()))?;
    text.push('\n');
    write_private(path, text.as_bytes())
}

/// Writes `bytes` to `path` through a temporary file in the same folder, which is private to
/// the user (0600) from the moment it exists, then renamed over `path`. A folder it has to
/// create is 0700.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.as_os_str().is_empty() && !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(dir, e))?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    Ok(())
}

fn drop_nulls(v: &mut serde_json::Value) {
    if let serde_json::Value::Object(map) = v {
        map.retain(|_, x| !x.is_null());
        for x in map.values_mut() {
            drop_nulls(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_settings_load_back_and_bad_ones_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf/settings.json");
        assert_eq!(load(&path, false).unwrap(), Config::default());
        assert_eq!(load(&path, true).unwrap_err().code(), "io");
        let mut c = Config::default();
        c.turn.max_steps = 7;
        save(&path, &c).unwrap();
        assert_eq!(load(&path, true).unwrap(), c);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // An absurd value is refused before anything is written.
        let mut bad = c.clone();
        bad.turn.max_steps = 0;
        let e = save(&path, &bad).unwrap_err();
        assert_eq!(e.setting(), Some("turn.max_steps"), "{e}");
        assert_eq!(load(&path, true).unwrap(), c);
        // A hand-broken file is named with its key, and kept aside before a save.
        std::fs::write(&path, r#"{"turn": {"max_steps": "lots"}}"#).unwrap();
        let e = load(&path, true).unwrap_err();
        assert_eq!(e.code(), "invalid_settings");
        assert!(e.to_string().contains("settings.json"), "{e}");
        let aside = keep_aside(&path, 5).unwrap();
        assert!(aside.to_string_lossy().ends_with("settings.json.invalid-5"));
        assert!(!path.exists());
    }
}

//! The settings file: load (defaults when there is none, an error naming the file and the
//! key when it is invalid), validate, and save (atomically, private to the user). Every front
//! end saves through [`save_checked`]; [`crate::Runtime::save_settings`] saves and puts the
//! settings in force.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use waymark_config::Config;

/// Reads the settings at `path`. A missing file gives the defaults unless `required`.
pub fn load(path: &Path, required: bool) -> Result<Config> {
    match read_text(path) {
        // The sections of the built-in extensions are checked here too, so a front end that
        // starts whatever the file holds ([`load_guarded`]) hears of a bad one.
        Ok(text) => Config::from_json(&text)
            .and_then(|c| crate::sections::check(&c, &crate::builtin::builtin()).map(|()| c))
            .map_err(|source| Error::InvalidSettings {
                path: path.display().to_string(),
                source,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(Config::default()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Longest settings file read.
const SETTINGS_MAX: u64 = 16 * 1024 * 1024;

/// The settings file's text, read without waiting on a pipe (a FIFO put at its path would
/// hang the app at start), at most [`SETTINGS_MAX`] bytes.
fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = String::new();
    f.take(SETTINGS_MAX).read_to_string(&mut text)?;
    Ok(text)
}

/// The settings at `path` for a front end that starts whatever the file holds (the app, in
/// which the user then fixes it), and what to tell the user when it did not load. A file
/// that does not load lifts no cap: no model call goes out (the day's cap is held at $0)
/// until it is fixed, whatever part of it is wrong. (Reading the cap out of a broken file
/// was tried; a misspelt key, or one named twice, made it the wrong cap.)
pub fn load_guarded(path: &Path) -> (Config, Option<String>) {
    match load(path, false) {
        Ok(c) => (c, None),
        Err(e) => {
            let mut c = Config::default();
            c.limits.daily_cost_usd = Some(0.0);
            (
                c,
                Some(format!(
                    "{e}. No model call goes out until the file is fixed (the day's spending cap is held at $0, so a mistake in the file never lifts yours)."
                )),
            )
        }
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
    // A model the user types is checked when saved (a file written by hand loads as it is,
    // and a session says what is wrong with its model).
    if let Some(spec) = &config.model {
        config.check_model(spec)?;
    }
    let mut value = serde_json::to_value(config).map_err(|e| Error::Corrupt(e.to_string()))?;
    drop_nulls(&mut value);
    let mut text =
        serde_json::to_string_pretty(&value).map_err(|e| Error::Corrupt(e.to_string()))?;
    text.push('\n');
    sweep_temps(path, STALE_TEMP);
    write_private(path, text.as_bytes())
}

/// The one way a front end saves settings (the desktop's Settings page and setup card,
/// `waymark mcp add/remove`): checked as [`save`] checks them, with every MCP server that
/// `new` adds or changes over `current` held to what `waymark mcp add` checks (no literal
/// secret), and an unreadable file kept aside first so nothing the user wrote is lost.
/// [`crate::Runtime::save_settings`] also puts them in force.
pub fn save_checked(path: &Path, current: &Config, new: &Config, now_ms: i64) -> Result<()> {
    new.validate()?;
    crate::mcp_settings::check_changed_servers(current, new)?;
    keep_aside(path, now_ms);
    save(path, new)
}

/// How old a temporary file must be before [`sweep_temps`] takes it for a crash's leftover.
pub const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(600);

/// Writes `bytes` to `path` through a temporary file in the same folder, which is private to
/// the user (0600) from the moment it exists, then renamed over `path`, and syncs the folder
/// so the rename outlives a crash. A folder it has to create is 0700.
///
/// The temporary file has a name no one can guess (`.<name>.<pid>-<random>.tmp`) and is
/// always a file this call created: a file, link or FIFO already at a name is never opened,
/// and only what this call made is removed when it fails.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::DirBuilderExt as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(dir, e))?;
    }
    let (tmp, mut f) = create_temp(dir, &file_name(path)).map_err(|e| Error::io(dir, e))?;
    let written = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A new private file in `dir`, made by this call under a fresh random name.
fn create_temp(dir: &Path, name: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    for _ in 0..16 {
        let tmp = dir.join(format!(
            ".{name}.{}-{:016x}.tmp",
            std::process::id(),
            fastrand::u64(..)
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free name for a temporary file",
    ))
}

/// Removes the temporary files that writes of `path` left behind (a crash between writing
/// and renaming), when they are regular files older than `age`. Returns how many went.
pub fn sweep_temps(path: &Path, age: std::time::Duration) -> usize {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let prefix = format!(".{}.", file_name(path));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(&prefix) && name.ends_with(".tmp")) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|d| d >= age);
        if meta.file_type().is_file() && old && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
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

    /// Fifth and sixth red-teams: the app started with no cap when any part of the settings
    /// file was wrong, and then with the wrong one when the cap was read out of the broken
    /// file (a misspelt key, one named twice). A file that does not load holds the cap at $0.
    #[test]
    fn a_settings_file_that_does_not_load_never_lifts_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        for text in [
            r#"{"limits": {"daily_cost_usd": 5}, "modle": "typo"}"#,
            r#"{"limits": {"daily_cost_usd": -1}}"#,
            r#"{"limits": {"daily_cost_usd": "20"}, "#,
            r#"{"limit": {"daily_cost_usd": 5}}"#,
            r#"{"modle": "x", "limits": {"daily_cost_usd": 5}, "limits": {"daily_cost_usd": 500}}"#,
        ] {
            std::fs::write(&path, text).unwrap();
            let (c, said) = load_guarded(&path);
            let said = said.expect("the user is told");
            assert_eq!(c.limits.daily_cost_usd, Some(0.0), "{text}: {said}");
            assert!(said.contains("No model call goes out"), "{said}");
        }
        std::fs::write(&path, r#"{"limits": {"daily_cost_usd": 5}}"#).unwrap();
        let (c, said) = load_guarded(&path);
        assert_eq!((c.limits.daily_cost_usd, said), (Some(5.0), None));
        // No file: the defaults, no cap, nothing to say.
        std::fs::remove_file(&path).unwrap();
        let (c, said) = load_guarded(&path);
        assert_eq!((c.limits.daily_cost_usd, said), (None, None));
        // A pipe at the file's path is an error, never a wait.
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.unwrap().success());
        let (c, said) = load_guarded(&path);
        assert_eq!(c.limits.daily_cost_usd, Some(0.0));
        assert!(said.unwrap().contains("not a regular file"));
    }

    /// A section no built-in extension owns does not load (the app then starts as for any
    /// file that does not load, saying which key), and is not saved either.
    #[test]
    fn an_extension_section_no_extension_owns_is_refused_at_load_and_save() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"extensions": {"pland": {"on": true}}}"#).unwrap();
        let (c, said) = load_guarded(&path);
        let said = said.expect("the user is told");
        assert!(said.contains("`extensions.pland`"), "{said}");
        assert_eq!(c.limits.daily_cost_usd, Some(0.0));
        let rt = crate::Runtime::open(crate::RuntimeOptions::new(
            dir.path().join("data"),
            Config::default(),
        ))
        .unwrap();
        let mut bad = Config::default();
        bad.extensions
            .insert("pland".into(), serde_json::json!({"on": true}));
        let saved = dir.path().join("saved.json");
        let e = rt.save_settings(&saved, bad).unwrap_err().to_string();
        assert!(e.contains("`extensions.pland`"), "{e}");
        assert!(!saved.exists(), "nothing is written");
    }

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

    /// A file, link or FIFO planted at a temporary name is never written through: each write
    /// makes a file of its own under a name no one could plant ahead, and leaves none behind.
    #[test]
    fn a_planted_temporary_file_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ui-state.json");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        // The names the old code used, planted as links to the victim.
        for name in [
            format!(".ui-state.json.{}.tmp", std::process::id()),
            ".ui-state.json.tmp".to_string(),
        ] {
            std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
        }
        for i in 0..20 {
            write_private(&path, format!("{{\"n\":{i}}}").as_bytes()).unwrap();
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"n\":19}");
        let temps = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                let n = n.to_string_lossy().into_owned();
                n.ends_with(".tmp")
                    && !std::fs::symlink_metadata(e.as_ref().unwrap().path())
                        .unwrap()
                        .is_symlink()
            })
            .count();
        assert_eq!(temps, 0, "no temporary file of ours is left");
    }

    /// What a crash left (a temporary file never renamed) is swept once it is old; a fresh
    /// one (another writer's, mid-write), a link and other files are left alone.
    #[test]
    fn stale_temporary_files_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let stale = dir.path().join(".settings.json.1-00ab.tmp");
        let fresh = dir.path().join(".settings.json.2-00cd.tmp");
        let other = dir.path().join(".other.json.1-00ab.tmp");
        for p in [&stale, &fresh, &other] {
            std::fs::write(p, "x").unwrap();
        }
        let link = dir.path().join(".settings.json.3-00ef.tmp");
        std::os::unix::fs::symlink(&other, &link).unwrap();
        // The link itself as old as the stale file: only its kind spares it.
        let touched = std::process::Command::new("touch")
            .args(["-h", "-d", "2 hours ago"])
            .arg(&link)
            .status()
            .unwrap();
        assert!(touched.success());
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for p in [&stale, &other] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(hour_ago)
                .unwrap();
        }
        assert_eq!(sweep_temps(&path, STALE_TEMP), 1);
        assert!(!stale.exists());
        assert!(fresh.exists() && other.exists());
        assert!(std::fs::symlink_metadata(&link).is_ok());
    }
}

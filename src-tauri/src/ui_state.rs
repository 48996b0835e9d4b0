//! The window's own state (comment drafts, panel widths, the last open session, dismissed
//! banners) in one file of the store plugin. The app opens the file at start; the webview
//! then reaches it with the plugin's `get_store`, `get` and `set` only. It has no `load`, so
//! it cannot open a file of its own choosing (the plugin resolves a path it is given against
//! the app's data folder, and an absolute path or `..` would leave it). Settings are not kept
//! here: they stay in the settings file the CLI shares.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_store::StoreExt;

/// The largest window-state file read; a bigger one is set aside (the state is small).
const CAP: u64 = 4 * 1024 * 1024;

/// The store file, in the app's data folder; the UI asks for it by this name
/// (`UI_STATE_FILE` in ui/src/lib/uistate.ts).
pub const FILE: &str = "ui-state.json";

/// Opens (or creates) the file so the webview finds it loaded. When it cannot be opened the
/// window keeps its state only until it closes (said here on stderr, and in its console).
pub fn open<R: Runtime>(app: &AppHandle<R>) {
    // The plugin reads the file relative to the app's data folder.
    if let Ok(dir) = app.path().app_data_dir() {
        match prepare(&dir.join(FILE), std::process::id()) {
            Ok(Some(aside)) => eprintln!(
                "waymark: {FILE} was not a small regular file; it was moved to {} and the window starts afresh",
                aside.display()
            ),
            Ok(None) => {}
            Err(e) => eprintln!("waymark: the window's state file could not be made private: {e}"),
        }
    }
    if let Err(e) = app.store(FILE) {
        eprintln!("waymark: the window's state is not kept ({FILE}): {e}");
    }
}

/// Whether the file holds a JSON object (what the plugin reads; anything else it drops
/// silently and then writes over on the first change).
fn is_object(path: &Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v.is_object())
}

/// Readies the window-state file before the plugin touches it: only the user may read it (it
/// holds their unsent comments), and anything but a regular file within [`CAP`] (a FIFO the
/// read would wait on forever, a link, a huge file, a file cut short that is no JSON object)
/// is moved aside, so start-up never hangs and nothing the user wrote is written over.
/// Returns where such a file went.
fn prepare(path: &Path, tag: u32) -> std::io::Result<Option<PathBuf>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut aside = None;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() && m.len() <= CAP && is_object(path) => {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            return Ok(None);
        }
        Ok(_) => {
            let to = path.with_extension(format!("json.set-aside-{tag}"));
            std::fs::rename(path, &to)?;
            aside = Some(to);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(b"{}")?;
    Ok(aside)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// The file is the user's alone, whether it is new or was there (0644) before.
    #[test]
    fn the_state_file_is_private_to_the_user() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("a/ui-state.json");
        assert_eq!(prepare(&new, 1).unwrap(), None);
        assert_eq!(
            (std::fs::read_to_string(&new).unwrap().as_str(), mode(&new)),
            ("{}", 0o600)
        );
        let old = dir.path().join("ui-state.json");
        std::fs::write(&old, r#"{"last-session":"s1"}"#).unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(prepare(&old, 1).unwrap(), None);
        assert_eq!(mode(&old), 0o600);
        assert!(
            std::fs::read_to_string(&old).unwrap().contains("s1"),
            "kept as it was"
        );
    }

    /// A FIFO (which a read would wait on forever), a link and a huge file are set aside, and
    /// the window starts from an empty state instead of hanging or reading gigabytes.
    #[test]
    fn what_is_not_a_small_regular_file_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f/ui-state.json");
        std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let big = dir.path().join("b/ui-state.json");
        std::fs::create_dir_all(big.parent().unwrap()).unwrap();
        std::fs::File::create(&big)
            .unwrap()
            .set_len(CAP + 1)
            .unwrap();
        let cut = dir.path().join("c/ui-state.json");
        std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
        std::fs::write(&cut, r#"{"comment-drafts":{"p1:v1":[{"start":1,"#).unwrap();
        let link = dir.path().join("l/ui-state.json");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let target = dir.path().join("elsewhere.json");
        std::fs::write(&target, "{}").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for p in [&fifo, &big, &cut, &link] {
            let aside = prepare(p, 7).unwrap().expect("set aside");
            assert!(
                std::fs::symlink_metadata(&aside).is_ok(),
                "{}",
                aside.display()
            );
            assert_eq!(std::fs::read_to_string(p).unwrap(), "{}", "{}", p.display());
            assert_eq!(mode(p), 0o600);
        }
        assert!(
            std::fs::metadata("/etc/hostname").is_ok(),
            "the link's target is untouched"
        );
    }
}

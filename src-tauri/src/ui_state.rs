//! The window's own state (comment drafts, panel widths, the last open session, dismissed
//! banners): one store of tauri-plugin-store, in `ui-state.json` in Waymark's data folder.
//! Settings are not kept here: they stay in the settings file the CLI shares.
//!
//! The webview reaches none of the plugin's commands. It calls `ui_state_get` and
//! `ui_state_set`, which take only the four keys below, each within a size limit, so a page
//! script cannot fill the disk or open a file of its choosing. The plugin keeps the values and
//! read the file; every change is written here, atomically (a new file made private to the
//! user, synced, then renamed over the old one), never by the plugin's own save, which
//! truncates the file in place and would leave it cut short if the app were killed then.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tauri::{AppHandle, Manager, Runtime, State};
use tauri_plugin_store::{Store, StoreBuilder};

use crate::error::{IpcError, IpcResult};

/// The largest window-state file read or written; a bigger one is set aside on start.
const CAP: u64 = 4 * 1024 * 1024;
/// The most one key may hold, as JSON.
const KEY_CAP: usize = 1024 * 1024;

/// The store file, in the data folder.
pub const FILE: &str = "ui-state.json";

/// The keys the window may keep, each with what it holds. `KEYS` in ui/src/lib/uistate.ts
/// names the same ones (a test checks).
pub const KEYS: &[&str] = &[
    "comment-drafts",
    "panel-widths",
    "last-session",
    "dismissed-banners",
];

/// Where the values live: the plugin's store in the app, a map in tests.
trait Kv: Send + Sync {
    fn get(&self, key: &str) -> Option<Value>;
    fn set(&self, key: &str, value: Value);
    fn entries(&self) -> Vec<(String, Value)>;
}

impl<R: Runtime> Kv for Arc<Store<R>> {
    fn get(&self, key: &str) -> Option<Value> {
        Store::get(self, key)
    }
    fn set(&self, key: &str, value: Value) {
        Store::set(self, key, value)
    }
    fn entries(&self) -> Vec<(String, Value)> {
        Store::entries(self)
    }
}

/// The window's state as the app holds it (managed Tauri state).
pub struct UiState {
    inner: Mutex<Option<Inner>>,
}

struct Inner {
    kv: Box<dyn Kv>,
    path: PathBuf,
}

impl UiState {
    /// No store: every read finds nothing and every write says the state is not kept.
    pub fn none() -> Self {
        UiState {
            inner: Mutex::new(None),
        }
    }

    fn with_kv(kv: Box<dyn Kv>, path: PathBuf) -> Self {
        UiState {
            inner: Mutex::new(Some(Inner { kv, path })),
        }
    }

    fn get(&self, key: &str) -> IpcResult<Option<Value>> {
        known(key)?;
        let inner = self.inner.lock().map_err(|_| not_kept("a write failed"))?;
        Ok(inner.as_ref().and_then(|i| i.kv.get(key)))
    }

    fn set(&self, key: &str, value: Value) -> IpcResult<()> {
        known(key)?;
        let len = serde_json::to_vec(&value).map_or(usize::MAX, |b| b.len());
        if len > KEY_CAP {
            return Err(IpcError::new(
                "too_large",
                format!(
                    "the window's {key} is {len} bytes as JSON, more than the {KEY_CAP} it may keep; it was not saved"
                ),
            ));
        }
        let inner = self.inner.lock().map_err(|_| not_kept("a write failed"))?;
        let Some(inner) = inner.as_ref() else {
            return Err(not_kept("its file could not be opened at start"));
        };
        // The file as it would be with the new value; nothing changes if it cannot be written.
        let mut all: BTreeMap<String, Value> = inner.kv.entries().into_iter().collect();
        all.insert(key.to_string(), value.clone());
        let bytes = serde_json::to_vec(&all).map_err(|e| not_kept(&e.to_string()))?;
        if bytes.len() as u64 > CAP {
            return Err(IpcError::new(
                "too_large",
                format!("the window's state would grow past {CAP} bytes; {key} was not saved"),
            ));
        }
        write_atomically(&inner.path, &bytes)?;
        inner.kv.set(key, value);
        Ok(())
    }
}

fn known(key: &str) -> IpcResult<()> {
    if KEYS.contains(&key) {
        Ok(())
    } else {
        Err(IpcError::new(
            "refused",
            format!(
                "the window keeps no `{}`; it keeps {}",
                key.chars().take(64).collect::<String>(),
                KEYS.join(", ")
            ),
        ))
    }
}

fn not_kept(why: &str) -> IpcError {
    IpcError::new("io", format!("the window's state is not kept: {why}"))
}

/// Writes `bytes` to `path` so a reader finds either the old file or the new one, whole (the
/// settings file's way: a fresh 0600 file, synced, renamed over `path`), then syncs the folder.
fn write_atomically(path: &Path, bytes: &[u8]) -> IpcResult<()> {
    waymark_runtime::settings::write_private(path, bytes).map_err(|e| not_kept(&e.to_string()))?;
    if let Ok(d) = std::fs::File::open(path.parent().unwrap_or(Path::new("."))) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The value the page asked for, or null when none is kept.
#[tauri::command]
#[specta::specta]
pub fn ui_state_get(state: State<'_, UiState>, key: String) -> IpcResult<Option<Value>> {
    state.get(&key)
}

/// Keeps one value of the window's state, written to disk before this returns.
#[tauri::command]
#[specta::specta]
pub fn ui_state_set(state: State<'_, UiState>, key: String, value: Value) -> IpcResult<()> {
    state.set(&key, value)
}

/// Opens (or creates) the store in `data_dir` and hands it to the app as managed state. When
/// it cannot be opened the window keeps its state only until it closes (said on stderr, and
/// in its console on the first write).
pub fn open<R: Runtime>(app: &AppHandle<R>, data_dir: &Path) {
    let path = data_dir.join(FILE);
    // Where the file was kept before (the plugin's folder for this app) moves here once.
    if let Ok(old) = app.path().app_data_dir() {
        move_old(&old.join(FILE), &path);
    }
    match prepare(&path, std::process::id()) {
        Ok(Some(aside)) => eprintln!(
            "waymark: {FILE} was not a small regular file holding a JSON object; it was moved to {} and the window starts afresh",
            aside.display()
        ),
        Ok(None) => {}
        Err(e) => {
            eprintln!(
                "waymark: the window's state is not kept ({}): {e}",
                path.display()
            );
            app.manage(UiState::none());
            return;
        }
    }
    match StoreBuilder::new(app, &path).disable_auto_save().build() {
        Ok(store) => {
            // Out of the plugin's table, so its save on exit (an in-place write) never
            // touches the file; this module has written every change already.
            store.close_resource();
            app.manage(UiState::with_kv(Box::new(store), path));
        }
        Err(e) => {
            eprintln!(
                "waymark: the window's state is not kept ({}): {e}",
                path.display()
            );
            app.manage(UiState::none());
        }
    }
}

/// Moves the file from where an earlier build kept it, when there is none at `to` yet.
fn move_old(from: &Path, to: &Path) {
    if from == to || std::fs::symlink_metadata(to).is_ok() {
        return;
    }
    if std::fs::symlink_metadata(from).is_ok_and(|m| m.file_type().is_file()) {
        if let Some(dir) = to.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if std::fs::rename(from, to).is_err() {
            // Another file system: copy, then keep the old one out of the way.
            if std::fs::copy(from, to).is_ok() {
                let _ = std::fs::remove_file(from);
            }
        }
    }
}

/// Whether the file holds a JSON object (what the plugin reads; anything else it drops
/// silently).
fn is_object(path: &Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|v| v.is_object())
}

/// Readies the window-state file before the plugin reads it: only the user may read it (it
/// holds their unsent comments), and anything but a regular file within [`CAP`] holding a
/// JSON object (a FIFO the read would wait on forever, a link, a huge file, a file cut short)
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
    use serde_json::json;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[derive(Default)]
    struct Map(Mutex<BTreeMap<String, Value>>);
    impl Kv for Arc<Map> {
        fn get(&self, key: &str) -> Option<Value> {
            self.0.lock().unwrap().get(key).cloned()
        }
        fn set(&self, key: &str, value: Value) {
            self.0.lock().unwrap().insert(key.into(), value);
        }
        fn entries(&self) -> Vec<(String, Value)> {
            self.0.lock().unwrap().clone().into_iter().collect()
        }
    }

    fn state(dir: &Path) -> (UiState, Arc<Map>, PathBuf) {
        let path = dir.join(FILE);
        prepare(&path, 1).unwrap();
        let map = Arc::new(Map::default());
        (
            UiState::with_kv(Box::new(map.clone()), path.clone()),
            map,
            path,
        )
    }

    /// A value set is on disk, whole and private, when the call returns, beside the others.
    #[test]
    fn a_value_is_written_to_disk_before_the_call_returns() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _, path) = state(dir.path());
        s.set("panel-widths", json!({"left": 200, "right": 400}))
            .unwrap();
        s.set("last-session", json!("s1")).unwrap();
        let on_disk: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(
            on_disk,
            json!({"panel-widths": {"left": 200, "right": 400}, "last-session": "s1"})
        );
        assert_eq!(mode(&path), 0o600);
        assert_eq!(s.get("last-session").unwrap(), Some(json!("s1")));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    /// A page script cannot keep keys of its own choosing, nor fill the disk: an unknown key
    /// and a value past the limit are refused, and the file keeps what it held.
    #[test]
    fn a_hostile_page_cannot_keep_other_keys_or_huge_values() {
        let dir = tempfile::tempdir().unwrap();
        let (s, map, path) = state(dir.path());
        s.set("last-session", json!("s1")).unwrap();
        let before = std::fs::read(&path).unwrap();
        let e = s.set("../../.bashrc", json!("x")).unwrap_err();
        assert_eq!(e.code, "refused");
        assert!(e.message.contains("keeps no"), "{}", e.message);
        assert_eq!(s.get("__proto__").unwrap_err().code, "refused");
        let huge = json!("x".repeat(KEY_CAP + 1));
        let e = s.set("comment-drafts", huge).unwrap_err();
        assert_eq!(e.code, "too_large");
        assert!(e.message.contains("comment-drafts"), "{}", e.message);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "the file is unchanged"
        );
        // Each key within its own limit, but all four together past the file's: the last
        // is refused and the file stays within its limit.
        let big = json!("y".repeat(KEY_CAP - 16));
        let kept: Vec<bool> = KEYS.iter().map(|k| s.set(k, big.clone()).is_ok()).collect();
        assert_eq!(kept, [true, true, true, false]);
        assert!(std::fs::metadata(&path).unwrap().len() <= CAP);
        assert_eq!(map.get("dismissed-banners"), None);
    }

    /// When the file cannot be written the value is not kept in memory either (the window
    /// says so), and nothing is left half-written.
    #[test]
    fn a_failed_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (s, map, path) = state(dir.path());
        s.set("last-session", json!("s1")).unwrap();
        // The file's place taken by a folder: no rename can land there, even as root.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir_all(path.join("x")).unwrap();
        let e = s.set("last-session", json!("s2")).unwrap_err();
        assert_eq!(e.code, "io");
        assert!(e.message.contains("not kept"), "{}", e.message);
        assert_eq!(map.get("last-session"), Some(json!("s1")));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            [std::ffi::OsString::from(FILE)],
            "no temporary file left"
        );
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

    /// The file an earlier build kept in the plugin's folder moves to the data folder once,
    /// and never over a file already there.
    #[test]
    fn the_old_file_moves_to_the_data_folder_once() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("plugin/ui-state.json");
        std::fs::create_dir_all(old.parent().unwrap()).unwrap();
        std::fs::write(&old, r#"{"last-session":"old"}"#).unwrap();
        let new = dir.path().join("data/ui-state.json");
        move_old(&old, &new);
        assert!(std::fs::read_to_string(&new).unwrap().contains("old"));
        assert!(!old.exists());
        std::fs::write(&old, r#"{"last-session":"older"}"#).unwrap();
        move_old(&old, &new);
        assert!(std::fs::read_to_string(&new).unwrap().contains("\"old\""));
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
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "{}",
            "the link's target is untouched"
        );
    }
}

//! The window's own state (comment drafts, panel widths, the last open session, dismissed
//! banners), kept by the design card's `tauri-plugin-store` in `ui-state.json` in Waymark's
//! data folder. Settings are not kept here: they stay in the settings file the CLI shares.
//!
//! The webview reaches the store only through `ui_state_get` and `ui_state_set` (the plugin's
//! own commands are not granted to the page), which take only the four keys below, each
//! within a size limit, so a page script cannot fill the disk or open a file of its choosing.
//! What the plugin cannot keep itself is kept around it ([`file`]): the file is checked
//! before the plugin opens it and set aside when it is not a small regular file holding a JSON
//! object, and every change is written by us, atomically and privately, before the call
//! returns (the plugin's own save writes in place, with the default file mode, through a link).

mod file;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_store::{Store, StoreBuilder};

use crate::error::{IpcError, IpcResult};

/// The largest window-state file read or written; a bigger one is set aside on start.
const CAP: u64 = 4 * 1024 * 1024;
/// The most one key may hold, as JSON.
const KEY_CAP: usize = 1024 * 1024;

/// The store file, in the data folder.
pub const FILE: &str = "ui-state.json";

/// The keys the window may keep. `KEYS` in ui/src/lib/uistate.ts names the same ones (a test
/// checks).
pub const KEYS: &[&str] = &[
    "comment-drafts",
    "panel-widths",
    "last-session",
    "dismissed-banners",
];

/// The window's state as the app holds it (managed Tauri state): the plugin's store and the
/// file it is kept in, or nothing when the file could not be used.
pub struct UiState<R: Runtime> {
    kept: Option<(Arc<Store<R>>, PathBuf)>,
    /// One change at a time: the file written, then the store, as one step.
    writing: std::sync::Mutex<()>,
}

impl<R: Runtime> UiState<R> {
    fn get(&self, key: &str) -> IpcResult<Option<Value>> {
        known(key)?;
        Ok(self.kept.as_ref().and_then(|(store, _)| store.get(key)))
    }

    fn set(&self, key: &str, value: Value) -> IpcResult<()> {
        known(key)?;
        let _one = self
            .writing
            .lock()
            .map_err(|_| not_kept("a write failed"))?;
        let Some((store, path)) = &self.kept else {
            return Err(not_kept("its file could not be opened at start"));
        };
        if store.get(key).as_ref() == Some(&value) {
            return Ok(());
        }
        let current: BTreeMap<String, Value> = store.entries().into_iter().collect();
        let bytes = next_file(&current, key, &value)?;
        // On disk first: a value the file could not take is not kept in memory either.
        file::write(path, &bytes).map_err(|e| not_kept(&e.to_string()))?;
        store.set(key, value);
        Ok(())
    }
}

/// The file's bytes with `key` set to `value`, or why the window may not keep it: an unknown
/// key, a value past [`KEY_CAP`], or a file that would pass [`CAP`].
fn next_file(current: &BTreeMap<String, Value>, key: &str, value: &Value) -> IpcResult<Vec<u8>> {
    known(key)?;
    let len = serde_json::to_vec(value).map_or(usize::MAX, |b| b.len());
    if len > KEY_CAP {
        return Err(IpcError::new(
            "too_large",
            format!(
                "the window's {key} is {len} bytes as JSON, more than the {KEY_CAP} it may keep; it was not saved"
            ),
        ));
    }
    let mut all: BTreeMap<&str, &Value> = current
        .iter()
        .filter(|(k, _)| KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    all.insert(key, value);
    let bytes = serde_json::to_vec(&all).map_err(|e| not_kept(&e.to_string()))?;
    if bytes.len() as u64 > CAP {
        return Err(IpcError::new(
            "too_large",
            format!("the window's state would grow past {CAP} bytes; {key} was not saved"),
        ));
    }
    Ok(bytes)
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

/// Runs `f` on the window's state on a thread for blocking work: neither the main thread
/// nor the async workers the session commands and events run on ever wait on the disk or
/// on another call's write, however many calls a page makes at once.
async fn off_thread<R: Runtime, T: Send + 'static>(
    app: AppHandle<R>,
    f: impl FnOnce(&UiState<R>) -> IpcResult<T> + Send + 'static,
) -> IpcResult<T> {
    tauri::async_runtime::spawn_blocking(move || f(&app.state::<UiState<R>>()))
        .await
        .map_err(|e| not_kept(&e.to_string()))?
}

/// The value the page asked for, or null when none is kept.
#[tauri::command]
#[specta::specta]
pub async fn ui_state_get<R: Runtime>(app: AppHandle<R>, key: String) -> IpcResult<Option<Value>> {
    off_thread(app, move |s| s.get(&key)).await
}

/// Keeps one value of the window's state, written to disk before this returns.
#[tauri::command]
#[specta::specta]
pub async fn ui_state_set<R: Runtime>(
    app: AppHandle<R>,
    key: String,
    value: Value,
) -> IpcResult<()> {
    off_thread(app, move |s| s.set(&key, value)).await
}

/// Opens the store in `data_dir` and hands it to the app as managed state (the store plugin
/// must be registered). When the folder cannot be used the window keeps its state only until
/// it closes (said on stderr, and in the window on the first write).
pub fn open<R: Runtime>(app: &AppHandle<R>, data_dir: &Path) {
    let path = data_dir.join(FILE);
    // Where the file was kept before (the store plugin's folder for this app) moves here once.
    if let Ok(old) = app.path().app_data_dir() {
        file::move_old(&old.join(FILE), &path);
    }
    let kept = match store(app, &path, std::process::id()) {
        Ok(store) => Some((store, path)),
        Err(e) => {
            eprintln!(
                "waymark: the window's state is not kept ({}): {e}",
                path.display()
            );
            None
        }
    };
    app.manage(UiState {
        kept,
        writing: std::sync::Mutex::new(()),
    });
}

/// Why the window's state could not be opened.
#[derive(Debug, thiserror::Error)]
enum OpenError {
    #[error("{0}")]
    File(#[from] std::io::Error),
    #[error("the store plugin: {0}")]
    Store(#[from] tauri_plugin_store::Error),
}

/// The plugin's store for the file at `path`, holding what [`file::check`] read from it (a
/// file it could not take set aside, said on stderr), the keys the window keeps only. The
/// plugin never touches the file: it does not load it (a FIFO swapped in after the check
/// would hang the start) and cannot save it, at exit either (its save writes in place,
/// through a link, with the default mode), so a write is only ever ours.
fn store<R: Runtime>(
    app: &AppHandle<R>,
    path: &Path,
    tag: u32,
) -> Result<Arc<Store<R>>, OpenError> {
    let (values, aside) = file::check(path, tag)?;
    if let Some(aside) = aside {
        eprintln!(
            "waymark: {FILE} was not a regular file of at most {CAP} bytes holding a JSON object; it was moved to {} and the window starts afresh",
            aside.display()
        );
    }
    let store = StoreBuilder::new(app, path)
        .create_new()
        .disable_auto_save()
        .serialize(|_| Err("the window's state is written by Waymark, atomically".into()))
        .build()?;
    for (k, v) in values {
        if KEYS.contains(&k.as_str()) {
            store.set(k, v);
        }
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(v).unwrap()
    }

    /// A page script cannot keep keys of its own choosing, nor fill the disk: an unknown key
    /// and a value past the limit are refused, and the file never passes its cap.
    #[test]
    fn a_hostile_page_cannot_keep_other_keys_or_huge_values() {
        let now = map(json!({"last-session": "s1"}));
        let e = next_file(&now, "../../.bashrc", &json!("x")).unwrap_err();
        assert_eq!(e.code, "refused");
        assert!(e.message.contains("keeps no"), "{}", e.message);
        assert_eq!(known("__proto__").unwrap_err().code, "refused");
        let e = next_file(&now, "comment-drafts", &json!("x".repeat(KEY_CAP + 1))).unwrap_err();
        assert_eq!(e.code, "too_large");
        assert!(e.message.contains("comment-drafts"), "{}", e.message);
        // Each key within its own limit, but all four together past the file's: the last is
        // refused.
        let big = json!("y".repeat(KEY_CAP - 16));
        let mut all = BTreeMap::new();
        let kept: Vec<bool> = KEYS
            .iter()
            .map(|k| match next_file(&all, k, &big) {
                Ok(bytes) => {
                    assert!(bytes.len() as u64 <= CAP);
                    all.insert(k.to_string(), big.clone());
                    true
                }
                Err(_) => false,
            })
            .collect();
        assert_eq!(kept, [true, true, true, false]);
    }

    /// Keys a file holds beyond the four (written by hand, or by an older build) are dropped
    /// by the next write; the others stay beside the new value.
    #[test]
    fn keys_the_window_does_not_keep_are_dropped_from_the_file() {
        let now = map(json!({"last-session": "s1", "junk": "x", "__proto__": {}}));
        let bytes = next_file(&now, "panel-widths", &json!({"left": 200})).unwrap();
        let written: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            written,
            json!({"last-session": "s1", "panel-widths": {"left": 200}})
        );
    }
}

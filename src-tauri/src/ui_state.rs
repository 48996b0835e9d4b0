//! The window's own state (comment drafts, panel widths, the last open session, dismissed
//! banners) in one file of the store plugin. The app opens the file at start; the webview
//! then reaches it with the plugin's `get_store`, `get` and `set` only. It has no `load`, so
//! it cannot open a file of its own choosing (the plugin resolves a path it is given against
//! the app's data folder, and an absolute path or `..` would leave it). Settings are not kept
//! here: they stay in the settings file the CLI shares.

use tauri::{AppHandle, Runtime};
use tauri_plugin_store::StoreExt;

/// The store file, in the app's data folder; the UI asks for it by this name
/// (`UI_STATE_FILE` in ui/src/lib/uistate.ts).
pub const FILE: &str = "ui-state.json";

/// Opens (or creates) the file so the webview finds it loaded. When it cannot be opened the
/// window keeps its state only until it closes (said here on stderr, and in its console).
pub fn open<R: Runtime>(app: &AppHandle<R>) {
    if let Err(e) = app.store(FILE) {
        eprintln!("waymark: the window's state is not kept ({FILE}): {e}");
    }
}

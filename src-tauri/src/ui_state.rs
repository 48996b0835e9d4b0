//! The window's own state (comment drafts, panel widths, the last open session, dismissed
//! banners): one small JSON file, `ui-state.json` in Waymark's data folder, held in memory
//! while the app runs. Settings are not kept here: they stay in the settings file the CLI
//! shares.
//!
//! The webview reaches the file only through `ui_state_get` and `ui_state_set`, which take
//! only the four keys below, each within a size limit, so a page script cannot fill the disk
//! or open a file of its choosing. The file is read once at start, checked on the open file
//! itself (a regular file within its limit, holding a JSON object); every change is written
//! before the call returns, atomically (a new private file, synced, renamed over the old one).

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tauri::{AppHandle, Manager, Runtime};

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

/// The window's state as the app holds it (managed Tauri state).
pub struct UiState {
    inner: Mutex<Option<Inner>>,
}

struct Inner {
    values: BTreeMap<String, Value>,
    path: PathBuf,
}

impl UiState {
    /// No store: every read finds nothing and every write says the state is not kept.
    pub fn none() -> Self {
        UiState {
            inner: Mutex::new(None),
        }
    }

    fn with(values: BTreeMap<String, Value>, path: PathBuf) -> Self {
        UiState {
            inner: Mutex::new(Some(Inner { values, path })),
        }
    }

    fn get(&self, key: &str) -> IpcResult<Option<Value>> {
        known(key)?;
        let inner = self.inner.lock().map_err(|_| not_kept("a write failed"))?;
        Ok(inner.as_ref().and_then(|i| i.values.get(key).cloned()))
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
        let mut inner = self.inner.lock().map_err(|_| not_kept("a write failed"))?;
        let Some(inner) = inner.as_mut() else {
            return Err(not_kept("its file could not be opened at start"));
        };
        if inner.values.get(key) == Some(&value) {
            return Ok(());
        }
        // The file as it would be with the new value; nothing changes if it cannot be written.
        let mut all = inner.values.clone();
        all.insert(key.to_string(), value);
        let bytes = serde_json::to_vec(&all).map_err(|e| not_kept(&e.to_string()))?;
        if bytes.len() as u64 > CAP {
            return Err(IpcError::new(
                "too_large",
                format!("the window's state would grow past {CAP} bytes; {key} was not saved"),
            ));
        }
        waymark_runtime::settings::write_private(&inner.path, &bytes)
            .map_err(|e| not_kept(&e.to_string()))?;
        inner.values = all;
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

/// Runs `f` on the window's state on a thread for blocking work: neither the main thread
/// nor the async workers the session commands and events run on ever wait on the disk or
/// on another call's write, however many calls a page makes at once.
async fn off_thread<R: Runtime, T: Send + 'static>(
    app: AppHandle<R>,
    f: impl FnOnce(&UiState) -> IpcResult<T> + Send + 'static,
) -> IpcResult<T> {
    tauri::async_runtime::spawn_blocking(move || f(&app.state::<UiState>()))
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

/// Reads the state in `data_dir` and hands it to the app as managed state. When the folder
/// cannot be used the window keeps its state only until it closes (said on stderr, and in
/// the window on the first write).
pub fn open<R: Runtime>(app: &AppHandle<R>, data_dir: &Path) {
    let path = data_dir.join(FILE);
    // Where the file was kept before (the store plugin's folder for this app) moves here once.
    if let Ok(old) = app.path().app_data_dir() {
        move_old(&old.join(FILE), &path);
    }
    app.manage(load(&path, std::process::id()));
}

/// The state kept at `path`, read as [`read`] says; a file it cannot take is set aside first
/// (said on stderr).
fn load(path: &Path, tag: u32) -> UiState {
    match read(path, tag) {
        Ok((values, aside)) => {
            if let Some(aside) = aside {
                eprintln!(
                    "waymark: {FILE} was not a regular file of at most {CAP} bytes holding a JSON object; it was moved to {} and the window starts afresh",
                    aside.display()
                );
            }
            UiState::with(values, path.to_path_buf())
        }
        Err(e) => {
            eprintln!(
                "waymark: the window's state is not kept ({}): {e}",
                path.display()
            );
            UiState::none()
        }
    }
}

/// Moves the file from where an earlier build kept it, when there is none at `to` yet. A
/// file past [`CAP`] or not a regular file stays where it is.
fn move_old(from: &Path, to: &Path) {
    if from == to || std::fs::symlink_metadata(to).is_ok() {
        return;
    }
    if std::fs::symlink_metadata(from).is_ok_and(|m| m.file_type().is_file() && m.len() <= CAP) {
        if let Some(dir) = to.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if std::fs::rename(from, to).is_err() {
            // Another file system: copy (within the cap), then keep the old one out of the way.
            if let Ok(bytes) = read_capped(from)
                && waymark_runtime::settings::write_private(to, &bytes).is_ok()
            {
                let _ = std::fs::remove_file(from);
            }
        }
    }
}

/// The bytes of a regular file of at most [`CAP`] bytes, checked and read on one open file
/// that was never a link and never waited on (a FIFO), else why not.
fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        // It holds the user's unsent comments: theirs alone, even when it is set aside.
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    let mut bytes = Vec::new();
    (&mut f).take(CAP + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > CAP {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "too large",
        ));
    }
    Ok(bytes)
}

/// What the window kept at `path`: the values of the known keys (others are dropped), and
/// where a file that could not be taken went. Anything but a regular file within [`CAP`]
/// holding a JSON object (a FIFO a read would wait on forever, a link, a huge file, a file
/// cut short) is moved aside under a name no other file has, so start-up never hangs and
/// nothing the user wrote is written over. A missing file is an empty state.
fn read(path: &Path, tag: u32) -> std::io::Result<(BTreeMap<String, Value>, Option<PathBuf>)> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    waymark_runtime::settings::sweep_temps(path, waymark_runtime::settings::STALE_TEMP);
    let taken = match read_capped(path) {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((BTreeMap::new(), None));
        }
        // What the file is (a link, a socket, not a regular file, too large): set aside.
        Err(e)
            if e.kind() == std::io::ErrorKind::InvalidData
                || matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENXIO)) =>
        {
            None
        }
        // Anything passing (no file handles left, a lease, a disk error): the file stays as
        // it is, and this run keeps no state.
        Err(e) => return Err(e),
    };
    match taken {
        Some(map) => Ok((
            map.into_iter()
                .filter(|(k, _)| KEYS.contains(&k.as_str()))
                .collect(),
            None,
        )),
        None => Ok((BTreeMap::new(), Some(set_aside(path, tag)?))),
    }
}

/// Moves what is at `path` (whatever it is; a link is moved, not followed) to a new name
/// beside it, never over another file, and returns that name.
fn set_aside(path: &Path, tag: u32) -> std::io::Result<PathBuf> {
    for n in 0..1000u32 {
        let suffix = if n == 0 {
            format!("json.set-aside-{tag}")
        } else {
            format!("json.set-aside-{tag}-{n}")
        };
        let to = path.with_extension(suffix);
        // A hard link fails when the name is taken, so nothing is ever replaced; the link
        // is to the entry itself (a symbolic link is not followed).
        match std::fs::hard_link(path, &to) {
            Ok(()) => {
                std::fs::remove_file(path)?;
                return Ok(to);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) if std::fs::symlink_metadata(&to).is_err() => {
                // A file system without hard links: the name was free just now.
                std::fs::rename(path, &to)?;
                return Ok(to);
            }
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free name to set the file aside",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn state(dir: &Path) -> (UiState, PathBuf) {
        let path = dir.join(FILE);
        (load(&path, 1), path)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// A value set is on disk, whole and private, when the call returns, beside the others.
    #[test]
    fn a_value_is_written_to_disk_before_the_call_returns() {
        let dir = tempfile::tempdir().unwrap();
        let (s, path) = state(dir.path());
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
        assert_eq!(
            names(dir.path()),
            [FILE],
            "no temporary file is left behind"
        );
        // What was written is what the next start reads.
        let (again, _) = state(dir.path());
        assert_eq!(
            again.get("panel-widths").unwrap(),
            s.get("panel-widths").unwrap()
        );
    }

    /// A page script cannot keep keys of its own choosing, nor fill the disk: an unknown key
    /// and a value past the limit are refused, and the file keeps what it held.
    #[test]
    fn a_hostile_page_cannot_keep_other_keys_or_huge_values() {
        let dir = tempfile::tempdir().unwrap();
        let (s, path) = state(dir.path());
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
        assert_eq!(s.get("dismissed-banners").unwrap(), None);
    }

    /// Keys a file holds beyond the four (written by hand, or by a hostile page through an
    /// older build) are not read, and the next write drops them.
    #[test]
    fn keys_the_window_does_not_keep_are_dropped_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(&path, r#"{"last-session":"s1","junk":"x","__proto__":{}}"#).unwrap();
        let s = load(&path, 1);
        assert_eq!(s.get("last-session").unwrap(), Some(json!("s1")));
        s.set("panel-widths", json!({"left": 200, "right": 400}))
            .unwrap();
        let on_disk: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let keys: Vec<&String> = on_disk.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["last-session", "panel-widths"]);
    }

    /// When the file cannot be written the value is not kept in memory either (the window
    /// says so), and nothing is left half-written.
    #[test]
    fn a_failed_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (s, path) = state(dir.path());
        s.set("last-session", json!("s1")).unwrap();
        // The file's place taken by a folder: no rename can land there, even as root.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir_all(path.join("x")).unwrap();
        let e = s.set("last-session", json!("s2")).unwrap_err();
        assert_eq!(e.code, "io");
        assert!(e.message.contains("not kept"), "{}", e.message);
        assert_eq!(s.get("last-session").unwrap(), Some(json!("s1")));
        assert_eq!(names(dir.path()), [FILE], "no temporary file left");
    }

    /// The file is the user's alone, whether it is new or was there (0644) before.
    #[test]
    fn the_state_file_is_private_to_the_user() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("a/ui-state.json");
        let s = load(&new, 1);
        s.set("last-session", json!("s1")).unwrap();
        assert_eq!(mode(&new), 0o600);
        let old = dir.path().join("ui-state.json");
        std::fs::write(&old, r#"{"last-session":"s1"}"#).unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let s = load(&old, 1);
        assert_eq!(mode(&old), 0o600);
        assert_eq!(s.get("last-session").unwrap(), Some(json!("s1")));
    }

    /// The file an earlier build kept in the plugin's folder moves to the data folder once,
    /// never over a file already there, and never when it is past the cap.
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
        let huge = dir.path().join("plugin2/ui-state.json");
        std::fs::create_dir_all(huge.parent().unwrap()).unwrap();
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(CAP + 1)
            .unwrap();
        let to = dir.path().join("data2/ui-state.json");
        move_old(&huge, &to);
        assert!(!to.exists() && huge.exists(), "a huge file is not moved");
    }

    /// A FIFO (which a read would wait on forever), a link and a huge or cut-short file are
    /// set aside, and the window starts from an empty state instead of hanging, reading
    /// gigabytes or writing through the link.
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
        std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o644)).unwrap();
        let cut = dir.path().join("c/ui-state.json");
        std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
        std::fs::write(&cut, r#"{"comment-drafts":{"p1:v1":[{"start":1,"#).unwrap();
        let link = dir.path().join("l/ui-state.json");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let target = dir.path().join("elsewhere.json");
        std::fs::write(&target, r#"{"last-session":"theirs"}"#).unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for p in [&fifo, &big, &cut, &link] {
            let s = load(p, 7);
            let aside = p.with_extension("json.set-aside-7");
            assert!(
                std::fs::symlink_metadata(&aside).is_ok(),
                "{}",
                aside.display()
            );
            assert_eq!(s.get("last-session").unwrap(), None, "{}", p.display());
            s.set("last-session", json!("mine")).unwrap();
            let meta = std::fs::symlink_metadata(p).unwrap();
            assert!(meta.file_type().is_file(), "{}", p.display());
            assert_eq!(mode(p), 0o600);
        }
        assert!(
            std::fs::read_to_string(&target).unwrap().contains("theirs"),
            "the link's target is untouched"
        );
        // What was set aside is as private as the file it was.
        assert_eq!(mode(&big.with_extension("json.set-aside-7")), 0o600);
    }

    /// Setting a file aside never replaces one set aside before, by this start or another
    /// with the same process id.
    #[test]
    fn a_file_set_aside_never_replaces_an_earlier_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        for text in ["first {", "second {", "third {"] {
            std::fs::write(&path, text).unwrap();
            load(&path, 7);
        }
        let mut kept: Vec<String> = names(dir.path())
            .iter()
            .map(|n| std::fs::read_to_string(dir.path().join(n)).unwrap())
            .collect();
        kept.sort();
        assert_eq!(kept, ["first {", "second {", "third {"]);
    }
}

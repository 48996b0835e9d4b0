//! The settings file as the user edits it by hand while the app runs: a change on disk is
//! loaded and put in force at once (a provider added is usable without a restart). A file
//! that no longer loads is said, and holds the day's spending cap at $0, as at start.

use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer, notify};
use std::path::{Path, PathBuf};
use std::time::Duration;
use waymark_config::Config;

/// Quiet period before a burst of file events is handled (an editor's save is several).
const DEBOUNCE: Duration = Duration::from_millis(150);

/// What a change of the file did.
#[derive(Debug, Clone, PartialEq)]
pub enum Reloaded {
    /// It loaded, and differs from the settings in force: these are now.
    Applied(Box<Config>),
    /// It does not load: the message for the user. The settings in force stay, with the
    /// day's spending cap held at $0 until the file is fixed.
    Broken(String),
}

/// A running watch; dropping it stops watching.
pub struct SettingsWatch {
    _debouncer: Debouncer<notify::RecommendedWatcher>,
}

impl SettingsWatch {
    /// Calls `on_change` whenever the file at `path` changes into settings other than
    /// `current()` gives (the app's own saves, already in force, call nothing; `None` when a
    /// load failure is still being said, so a file put back as it was is said too). A file
    /// removed holds the cap like one that does not load: a missing file means defaults at
    /// start, but mid-run it is most often a save in progress.
    pub fn start(
        path: PathBuf,
        current: impl Fn() -> Option<Config> + Send + 'static,
        on_change: impl Fn(Reloaded) + Send + 'static,
    ) -> notify::Result<SettingsWatch> {
        let folder = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let name = path.file_name().map(|n| n.to_os_string());
        let mut debouncer = new_debouncer(DEBOUNCE, move |res: DebounceEventResult| {
            let Ok(events) = res else { return };
            if !events.iter().any(|e| e.path.file_name() == name.as_deref()) {
                return;
            }
            if !path.exists() {
                on_change(Reloaded::Broken(format!(
                    "the settings file {} is gone. The settings in force stay, and no model call goes out until it is back (the day's spending cap is held at $0).",
                    path.display()
                )));
                return;
            }
            match waymark_runtime::settings::load_guarded(&path) {
                (config, None) if current().as_ref() != Some(&config) => {
                    on_change(Reloaded::Applied(Box::new(config)))
                }
                (_, None) => {}
                (_, Some(why)) => on_change(Reloaded::Broken(why)),
            }
        })?;
        std::fs::create_dir_all(&folder).map_err(notify::Error::io)?;
        debouncer
            .watcher()
            .watch(&folder, notify::RecursiveMode::NonRecursive)?;
        Ok(SettingsWatch {
            _debouncer: debouncer,
        })
    }
}

/// Puts a change of the file in force in `host`, and what to tell the user.
pub fn apply(host: &crate::host::Host, change: Reloaded) -> (String, String) {
    let said = |why: Option<String>| {
        *host
            .settings_error
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = why;
    };
    match change {
        Reloaded::Applied(config) => match host.runtime.apply_settings(*config) {
            Ok(()) => {
                said(None);
                (
                    "Settings".into(),
                    "the settings file changed; its settings are in force now".into(),
                )
            }
            Err(e) => ("Settings not applied".into(), e.to_string()),
        },
        Reloaded::Broken(why) => {
            // A value the file quotes back in its error may be a secret.
            let why = host.runtime.redactor().redact(&why).into_owned();
            let mut held = (*host.runtime.config()).clone();
            held.limits.daily_cost_usd = Some(0.0);
            let _ = host.runtime.apply_settings(held);
            said(Some(why.clone()));
            ("The settings file does not load".into(), why)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn next(rx: &mpsc::Receiver<Reloaded>) -> Reloaded {
        rx.recv_timeout(Duration::from_secs(5)).unwrap()
    }

    /// Writes `text` as the whole file at once (a new file renamed over it, as the app and
    /// most editors save): a plain write truncates first, and the watch may read the empty
    /// file in between, which is one more "broken" than the test means to make.
    fn put(path: &std::path::Path, text: &str) {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }

    /// A provider written into the file by hand is in force at once; a save that changes
    /// nothing calls nothing; a broken file is said and lifts no cap.
    #[test]
    fn a_hand_edit_is_applied_and_a_broken_file_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{}").unwrap();
        let in_force = std::sync::Arc::new(std::sync::Mutex::new(Config::default()));
        let (tx, rx) = mpsc::channel();
        let seen = in_force.clone();
        let _w = SettingsWatch::start(
            path.clone(),
            move || Some(seen.lock().unwrap().clone()),
            move |r| {
                let _ = tx.send(r);
            },
        )
        .unwrap();
        put(
            &path,
            r#"{"providers": {"lab": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}}, "model": "lab:m1"}"#,
        );
        let Reloaded::Applied(c) = next(&rx) else {
            panic!("not applied")
        };
        assert!(c.providers.contains_key("lab"));
        assert_eq!(c.model.as_deref(), Some("lab:m1"));
        *in_force.lock().unwrap() = (*c).clone();
        // Under load the first write can reach the watch as two batches, the second read
        // before the test put the settings in force: let any such echo of that one change
        // arrive before the quiet write below is judged.
        while let Ok(Reloaded::Applied(again)) = rx.recv_timeout(Duration::from_millis(600)) {
            assert_eq!(again, c, "only an echo of the first change may arrive");
        }
        // The same settings written again (the app's own save): nothing to do.
        put(&path, &serde_json::to_string(&c).unwrap());
        assert!(rx.recv_timeout(Duration::from_millis(600)).is_err());
        // A broken file: said, with the cap held at $0.
        put(&path, r#"{"model": "#);
        let Reloaded::Broken(why) = next(&rx) else {
            panic!("not said")
        };
        assert!(why.contains("held at $0"), "{why}");
        // Removed mid-run: said the same way, never taken as "defaults".
        std::fs::remove_file(&path).unwrap();
        let Reloaded::Broken(why) = next(&rx) else {
            panic!("a removed file was taken as settings")
        };
        assert!(why.contains("is gone"), "{why}");
    }
}

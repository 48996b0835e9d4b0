//! The sessions this window has open: each one's handle and the task that forwards its
//! events to the webview (and raises notifications). Holds no business logic: everything it
//! does is a call into `waymark-runtime`.

use crate::error::{IpcError, IpcResult};
use crate::plan_watch::PlanWatch;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use tauri_specta::Event as _;
use waymark_runtime::{Runtime, SessionHandle, SessionSpec};

/// Shared state of the app (managed by Tauri).
pub struct Host {
    pub runtime: Runtime,
    pub settings_path: PathBuf,
    /// Why the settings file could not be used at start, if it could not.
    pub settings_error: Mutex<Option<String>>,
    sessions: Mutex<HashMap<String, Arc<SessionHandle>>>,
    /// Held while a session is being opened: two requests to open the same session (the
    /// list's first choice and a click) must not both try to take its lease.
    opening: Mutex<()>,
    watch: Mutex<Option<PlanWatch>>,
    /// Hand edits of the settings file, put in force as they are saved.
    settings_watch: Mutex<Option<crate::settings_watch::SettingsWatch>>,
    /// The session the window shows (the last one it opened a view of).
    shown: Mutex<Option<String>>,
    /// The main window has focus (plan-approval notifications only when it has not).
    pub focused: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Host {
    pub fn new(runtime: Runtime, settings_path: PathBuf, settings_error: Option<String>) -> Host {
        Host {
            runtime,
            settings_path,
            settings_error: Mutex::new(settings_error),
            opening: Mutex::new(()),
            sessions: Mutex::new(HashMap::new()),
            watch: Mutex::new(None),
            settings_watch: Mutex::new(None),
            shown: Mutex::new(None),
            focused: AtomicBool::new(true),
        }
    }

    /// Keeps the settings file watched for as long as the app runs.
    pub fn keep_settings_watch(&self, w: crate::settings_watch::SettingsWatch) {
        *lock(&self.settings_watch) = Some(w);
    }

    /// The handle of an open session.
    pub fn handle(&self, id: &str) -> IpcResult<Arc<SessionHandle>> {
        lock(&self.sessions).get(id).cloned().ok_or_else(|| {
            IpcError::new(
                "session_not_open",
                format!("session {id} is not open in this window"),
            )
        })
    }

    pub fn open_ids(&self) -> Vec<String> {
        lock(&self.sessions).keys().cloned().collect()
    }

    /// Opens a stored session (taking its lease) unless this window has it open already.
    pub fn open<R: tauri::Runtime>(&self, app: &tauri::AppHandle<R>, id: &str) -> IpcResult<()> {
        let _one_at_a_time = lock(&self.opening);
        if lock(&self.sessions).contains_key(id) {
            return Ok(());
        }
        let handle = self.runtime.open_session(id, SessionSpec::default())?;
        self.adopt(app, handle);
        Ok(())
    }

    /// Creates a session in `workspace` and opens it.
    pub fn create<R: tauri::Runtime>(
        &self,
        app: &tauri::AppHandle<R>,
        spec: SessionSpec,
    ) -> IpcResult<String> {
        // Held until the new session is in the map: the window may ask to open it the moment
        // it appears in the list (a session.started event), and an `open` in between would
        // attach a second time and meet the first one's lease.
        let _one_at_a_time = lock(&self.opening);
        let handle = self.runtime.create_session(spec)?;
        let id = handle.id().to_string();
        self.adopt(app, handle);
        Ok(id)
    }

    /// Creates a session in a new git worktree of `spec.workspace`'s project and opens it.
    pub fn create_in_worktree<R: tauri::Runtime>(
        &self,
        app: &tauri::AppHandle<R>,
        spec: SessionSpec,
        name: Option<&str>,
    ) -> IpcResult<String> {
        let _one_at_a_time = lock(&self.opening);
        let handle = self
            .runtime
            .create_session_in_worktree(spec, name, "session")?;
        let id = handle.id().to_string();
        self.adopt(app, handle);
        Ok(id)
    }

    /// "Approve & pursue as goal" in a new worktree (G-36): the plan under review in open
    /// session `id`'s questionnaire `qid` is implemented by a new session in a new worktree,
    /// opened here and started; its id.
    pub async fn approve_in_worktree<R: tauri::Runtime>(
        &self,
        app: &tauri::AppHandle<R>,
        id: &str,
        qid: &str,
        option: Option<u32>,
        as_goal: Option<waymark_protocol::BudgetChange>,
        name: Option<&str>,
    ) -> IpcResult<String> {
        let plan = self.handle(id)?;
        let made = self
            .runtime
            .approve_in_worktree(&plan, qid, option, as_goal, name)
            .await?;
        let made_id = made.id().to_string();
        self.adopt(app, made);
        self.handle(&made_id)?
            .submit(waymark_protocol::Op::Resume)
            .await?;
        Ok(made_id)
    }

    fn adopt<R: tauri::Runtime>(&self, app: &tauri::AppHandle<R>, handle: SessionHandle) {
        let id = handle.id().to_string();
        let follow = waymark_runtime::client::Follow::on(&handle);
        lock(&self.sessions).insert(id, Arc::new(handle));
        tauri::async_runtime::spawn(crate::forward::forward(app.clone(), follow));
    }

    /// How notifications name a session: its title, else its workspace folder's name.
    pub(crate) fn title(&self, id: &str) -> String {
        let summary = self
            .runtime
            .list_sessions()
            .ok()
            .and_then(|l| l.into_iter().find(|s| s.id == id));
        match summary {
            Some(s) => s.title.unwrap_or_else(|| {
                std::path::Path::new(&s.workspace)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or(s.workspace)
            }),
            None => id.to_string(),
        }
    }

    /// Notes that the window shows session `id` now; the one it showed before.
    pub fn show(&self, id: &str) -> Option<String> {
        lock(&self.shown).replace(id.to_string())
    }

    /// The window shows `previous` again (its view of another session failed).
    pub fn show_again(&self, previous: Option<String>) {
        *lock(&self.shown) = previous;
    }

    /// Whether the window shows session `id`.
    pub fn shows(&self, id: &str) -> bool {
        lock(&self.shown).as_deref() == Some(id)
    }

    /// Watches the plan file of the session shown in the window (one at a time).
    pub fn watch_plan<R: tauri::Runtime>(
        &self,
        app: &tauri::AppHandle<R>,
        id: &str,
    ) -> IpcResult<()> {
        let mut w = lock(&self.watch);
        if w.as_ref().is_some_and(|w| w.session_id == id) {
            return Ok(());
        }
        *w = None;
        let path = self.runtime.plan_path(id)?;
        let app = app.clone();
        let sid = id.to_string();
        let watch = PlanWatch::start(id, path, self.runtime.redactor_source(), move |content| {
            let _ = crate::events::PlanFileChanged {
                session_id: sid.clone(),
                html: content.html,
                markdown: content.markdown,
                seen_at_ms: now_ms(),
            }
            .emit(&app);
        })
        .map_err(|e| IpcError::new("watch_failed", format!("cannot watch the plan file: {e}")))?;
        *w = Some(watch);
        Ok(())
    }

    /// Closes session `id` in this window (its lease released; a running turn stops) and
    /// deletes it with its data.
    pub async fn delete(&self, id: &str) -> IpcResult<()> {
        self.close(id).await;
        self.deleted(id, false).await.map(|_| ())
    }

    /// Deletes session `id` if it is blank, as the backend decides when it deletes it (the
    /// window's belief that it is blank is not trusted); false when it was kept. A session
    /// found to hold anything is not even closed.
    pub async fn delete_blank(&self, id: &str) -> IpcResult<bool> {
        if !self.runtime.session_is_blank(id)? {
            return Ok(false);
        }
        self.close(id).await;
        self.deleted(id, true).await
    }

    /// Closes session `id` in this window: its plan no longer watched, its handle shut down
    /// (its lease released; a running turn stops).
    async fn close(&self, id: &str) {
        {
            let mut w = lock(&self.watch);
            if w.as_ref().is_some_and(|w| w.session_id == id) {
                *w = None;
            }
        }
        let handle = lock(&self.sessions).remove(id);
        if let Some(h) = handle {
            match Arc::try_unwrap(h) {
                Ok(h) => {
                    let _ = h.shutdown().await;
                }
                Err(h) => {
                    // A command still holds it: ask it to stop, then wait for its lease to go.
                    let _ = h.submit(waymark_protocol::Op::Shutdown).await;
                    drop(h);
                }
            }
        }
    }

    /// Deletes session `id` once its lease is given up (`only_blank`: if it is blank).
    async fn deleted(&self, id: &str, only_blank: bool) -> IpcResult<bool> {
        // A session shutting down gives its lease up within moments.
        let mut tries = 0;
        loop {
            let done = if only_blank {
                self.runtime.delete_blank_session(id)
            } else {
                self.runtime.delete_session(id).map(|()| true)
            };
            match done {
                Err(waymark_runtime::Error::Refused {
                    code: "session_open_here",
                    ..
                }) if tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                r => return Ok(r?),
            }
        }
    }

    /// Closes every open session (releasing leases; running turns stop). On exit.
    pub async fn close_all(&self) {
        *lock(&self.watch) = None;
        let handles: Vec<Arc<SessionHandle>> =
            lock(&self.sessions).drain().map(|(_, h)| h).collect();
        for h in handles {
            match Arc::try_unwrap(h) {
                Ok(h) => {
                    let _ = h.shutdown().await;
                }
                Err(h) => {
                    let _ = h.submit(waymark_protocol::Op::Shutdown).await;
                }
            }
        }
    }
}

pub fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

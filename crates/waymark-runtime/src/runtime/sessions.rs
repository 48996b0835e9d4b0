//! Sessions as the runtime makes and keeps them: creating one (in a worktree too), opening a
//! stored one again (its lease, crash recovery, the model it resolves to), what its sandbox
//! stands on, and renaming and deleting sessions.

use super::{Runtime, pid_alive, read_config};
use crate::error::{Error, Result};
use crate::paths;
use crate::provider;
use crate::provider::{ModelProvider, resolve_model};
use crate::session::{SessionHandle, SessionSpec};
use crate::store;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use waymark_engine::LiveSession;

/// What opening a session changes in its stored row (applied once the lease is held).
#[derive(Default)]
struct Changes {
    model: Option<String>,
    permission_mode: Option<waymark_protocol::PermissionMode>,
}

impl Runtime {
    /// What a session's sandboxed shell stands on (see [`crate::sandbox::reads`]): its
    /// workspace and artifacts, and the private places around them.
    pub(super) fn read_scope(
        &self,
        workspace: &Path,
        artifacts: &Path,
    ) -> crate::sandbox::reads::ReadScope {
        let env = self.opts.process_env.as_ref().clone();
        // The homes whose toolchains serve commands: the tools' `HOME` first (`~/` in
        // `sandbox.read_allow` means that one), then the runtime's own.
        let mut homes: Vec<PathBuf> = env
            .iter()
            .filter(|(k, _)| k == "HOME")
            .map(|(_, v)| PathBuf::from(v))
            .filter(|h| h.is_absolute())
            .collect();
        homes.extend(dirs::home_dir());
        homes.dedup();
        // Every home whose hidden files are private: those, this user's from the password
        // database and, for root, everyone's.
        let mut private_homes = homes.clone();
        private_homes.extend(crate::sandbox::private::other_homes());
        private_homes.sort();
        private_homes.dedup();
        // Waymark's own folders: those in use and the platform defaults (the desktop app's
        // data folder is another process's, and just as private).
        let mut waymark = vec![self.opts.data_dir.clone(), paths::default_data_dir()];
        waymark.extend(self.opts.settings_dir.clone());
        waymark.extend(paths::default_config_file().parent().map(Path::to_path_buf));
        crate::sandbox::reads::ReadScope {
            workspace: workspace.to_path_buf(),
            artifacts: artifacts.to_path_buf(),
            project: self.project_git(workspace),
            homes,
            owner: crate::sandbox::private::Owner {
                waymark,
                homes: private_homes,
                env,
            },
        }
    }

    /// Creates a session and opens it.
    pub fn create_session(&self, spec: SessionSpec) -> Result<SessionHandle> {
        self.create(spec, None)
    }

    /// Creates a session in a new git worktree of the project `spec.workspace` is in (its
    /// current commit, on the branch `waymark/<name>`, in the data folder; G-34), and opens
    /// it. `name` is checked; none makes one from `hint` (the goal's objective, the prompt).
    pub fn create_session_in_worktree(
        &self,
        spec: SessionSpec,
        name: Option<&str>,
        hint: &str,
    ) -> Result<SessionHandle> {
        let name = match name {
            Some(n) if !n.trim().is_empty() => n.trim().to_string(),
            _ => waymark_worktree::derive_name(hint),
        };
        self.create(spec, Some(&name))
    }

    fn create(&self, spec: SessionSpec, worktree: Option<&str>) -> Result<SessionHandle> {
        let ws = spec
            .workspace
            .clone()
            .unwrap_or_else(|| self.opts.cwd.clone());
        let ws = self.opts.cwd.join(ws);
        let ws = ws.canonicalize().map_err(|e| Error::io(&ws, e))?;
        if !ws.is_dir() {
            return Err(Error::refused(format!(
                "the workspace {} is not a folder",
                ws.display()
            )));
        }
        let id = self.opts.ids.new_id("s");
        let sd = paths::session_dir(&self.opts.data_dir, &id);
        let model_spec = self.model_spec(spec.model.as_deref(), None)?;
        // Resolve before creating anything, so a bad spec leaves no half-made session.
        let resolved = self.provider(&model_spec, &ws, &sd)?;
        let made = match worktree {
            Some(name) => Some(waymark_worktree::create(
                &ws,
                &paths::worktrees_dir(&self.opts.data_dir),
                name,
            )?),
            None => None,
        };
        let ws = made.as_ref().map_or(ws, |m| m.workspace.clone());
        let created = (|| {
            session_folders(&sd)?;
            let mode = spec
                .permission_mode
                .unwrap_or(self.config().permission_mode);
            let instructions =
                crate::instructions::discover(&ws, self.opts.user_instructions.as_deref());
            self.store.write(self.opts.clock.now_ms(), |tx| {
                tx.create_session(&id, &ws.display().to_string(), Some(&resolved.0), mode)?;
                tx.set_instructions(&id, &instructions)?;
                if let Some(m) = &made {
                    use waymark_worktree::db::WorktreeWrites as _;
                    tx.insert_worktree(&m.row(&id, tx.now()))?;
                }
                Ok::<_, Error>(())
            })
        })();
        if let Err(e) = created {
            // Nothing half made is left: the worktree goes with the session that failed.
            if let Some(m) = &made {
                let _ = waymark_worktree::discard(&m.row(&id, 0));
            }
            return Err(e);
        }
        self.attach(&id, resolved, false, spec.hold, Changes::default())
    }

    /// A stored session's row, its workspace and its own folder.
    pub(crate) fn stored(&self, id: &str) -> Result<(store::SessionRow, PathBuf, PathBuf)> {
        let row = self
            .store
            .read(|c| store::sessions::get(c, id))?
            .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
        let ws = PathBuf::from(&row.workspace);
        Ok((row, ws, paths::session_dir(&self.opts.data_dir, id)))
    }

    /// Reopens a stored session (taking its lease).
    pub fn open_session(&self, id: &str, spec: SessionSpec) -> Result<SessionHandle> {
        let (row, ws, sd) = self.stored(id)?;
        session_folders(&sd)?;
        let model_spec = self.model_spec(spec.model.as_deref(), row.model.as_deref())?;
        let resolved =
            match self.provider(&model_spec, &ws, &sd) {
                Ok(r) => r,
                // Its provider cannot be built now (a key that is not set): the session still
                // opens to be read and answered; a model call fails with this reason.
                Err(Error::Provider(error)) if spec.model.is_none() => {
                    let rebuild = self.rebuild_provider(model_spec.clone(), ws.clone(), sd.clone());
                    let stand_in: Arc<dyn ModelProvider> = Arc::new(
                        crate::provider::Unavailable::new(model_spec.clone(), error, rebuild),
                    );
                    (model_spec.clone(), stand_in)
                }
                Err(e) => return Err(e),
            };
        let changes = Changes {
            model: (spec.model.is_some() && row.model.as_deref() != Some(resolved.0.as_str()))
                .then(|| resolved.0.clone()),
            permission_mode: spec.permission_mode.filter(|m| *m != row.permission_mode),
        };
        // Applied with the lease taken, in the same transaction: a session another process
        // drives is not changed behind its back.
        self.attach(id, resolved, true, spec.hold, changes)
    }

    /// Whether a new session could reach its model: `requested`, else the settings' model,
    /// resolved as a session would resolve it (its provider known, the key it needs found).
    /// The model's spec when it could; the error that says what to set up when not.
    pub fn model_ready(&self, requested: Option<&str>) -> Result<String> {
        let spec = self.model_spec(requested, None)?;
        if self.opts.provider_override.is_some() {
            return Ok(spec);
        }
        let env = self.opts.env.clone();
        let r = resolve_model(
            &spec,
            &self.config(),
            &move |k| env(k),
            &self.opts.cwd,
            &self.opts.cwd,
            None,
            self.opts.http.clone(),
        )?;
        Ok(r.spec)
    }

    fn model_spec(&self, requested: Option<&str>, stored: Option<&str>) -> Result<String> {
        let config = self.config();
        requested
            .or(stored)
            .or(config.model.as_deref())
            .or(self.opts.default_model.as_deref())
            .map(str::to_string)
            .ok_or_else(|| {
                // Named as the `model` setting, so the desktop offers to open it.
                Error::Config(waymark_config::ConfigError::new(
                    "model",
                    "no model is set up yet: choose one as the default model in the settings (for example openai:gpt-4.1, anthropic:claude-sonnet-4-5, ollama:qwen3), or give one with --model on the command line",
                ))
            })
    }

    fn provider(
        &self,
        spec: &str,
        ws: &Path,
        sd: &Path,
    ) -> Result<(String, Arc<dyn ModelProvider>)> {
        if let Some(p) = &self.opts.provider_override {
            return Ok((spec.to_string(), p.clone()));
        }
        let env = self.opts.env.clone();
        let r = resolve_model(
            spec,
            &self.config(),
            &move |k| env(k),
            &self.opts.cwd,
            ws,
            Some(sd),
            self.opts.http.clone(),
        )?;
        Ok((r.spec, r.provider))
    }

    /// What [`Runtime::provider`] does, detached from the runtime: the settings in force
    /// and the environment (keyring first, in the app) at the time it is called.
    fn resolver(&self, ws: PathBuf, sd: PathBuf) -> waymark_engine::Resolve {
        if let Some(p) = &self.opts.provider_override {
            let p = p.clone();
            return Arc::new(move |spec: &str| Ok((spec.to_string(), p.clone())));
        }
        let config = self.config.clone();
        let env = self.opts.env.clone();
        let cwd = self.opts.cwd.clone();
        let http = self.opts.http.clone();
        Arc::new(move |spec: &str| {
            let config = read_config(&config);
            let env = env.clone();
            let r = resolve_model(
                spec,
                &config,
                &move |k| env(k),
                &cwd,
                &ws,
                Some(&sd),
                http.clone(),
            )?;
            Ok((r.spec, r.provider))
        })
    }

    /// Builds a session's provider again, as the stand-in for one that could not be built
    /// does before each call.
    fn rebuild_provider(&self, spec: String, ws: PathBuf, sd: PathBuf) -> provider::Rebuild {
        let resolve = self.resolver(ws, sd);
        Box::new(move || {
            resolve(&spec).map(|(_, p)| p).map_err(|e| match e {
                Error::Provider(e) => e,
                other => provider::ProviderError::new(
                    provider::ProviderErrorKind::RequestRejected,
                    other.to_string(),
                ),
            })
        })
    }

    fn attach(
        &self,
        id: &str,
        (model, provider): (String, Arc<dyn ModelProvider>),
        resumed: bool,
        hold: bool,
        changes: Changes,
    ) -> Result<SessionHandle> {
        // A key stored since (in the app's keyring) is redacted from this session on.
        self.refresh_secrets();
        let sandbox = |workspace: &Path, session_dir: &Path, artifacts: &Path| {
            Arc::new(crate::sandbox::Sandbox::new(
                self.opts.sandbox_helper.clone(),
                (self.opts.env)(crate::sandbox::FORCE_ENV),
                session_dir.join("sandbox-tmp"),
                self.read_scope(workspace, artifacts),
            ))
        };
        let (_, ws, sd) = self.stored(id)?;
        let resolve = self.resolver(ws, sd);
        let (handle, live) = waymark_engine::attach(
            id,
            waymark_engine::Attach {
                store: self.store.clone(),
                clock: self.opts.clock.clone(),
                ids: self.opts.ids.clone(),
                config: self.config().as_ref().clone(),
                data_dir: &self.opts.data_dir,
                model,
                provider,
                resolve,
                extensions: self.extensions(),
                sandbox: &sandbox,
                process_env: self.opts.process_env.clone(),
                lease_stale: self.opts.lease_stale,
                heartbeat: self.opts.heartbeat,
                pid_alive: &pid_alive,
                resumed,
                hold,
                set_model: changes.model,
                set_permission_mode: changes.permission_mode,
            },
        )?;
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(LiveSession::is_open);
        open.push(live);
        Ok(handle)
    }

    /// Gives a session the title the lists show, trimmed. An empty title, one past
    /// [`store::forget::MAX_TITLE`] characters or one holding control characters is refused.
    pub fn rename_session(&self, id: &str, title: &str) -> Result<()> {
        let title = title.trim();
        let max = store::forget::MAX_TITLE;
        if title.is_empty() {
            return Err(Error::refused("a session's title cannot be empty".into()));
        }
        if title.chars().count() > max {
            return Err(Error::refused(format!(
                "a session's title is at most {max} characters; this one has {}",
                title.chars().count()
            )));
        }
        // Control and format characters (line breaks, bidi overrides, zero-width ones)
        // would break the list's line or make it say something else than it shows.
        let hidden = |c: char| {
            c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
        };
        if title.chars().any(hidden) {
            return Err(Error::refused(
                "a session's title is one line of plain text, without control or format characters"
                    .into(),
            ));
        }
        let (found, _) = self
            .store
            .write(self.opts.clock.now_ms(), |tx| tx.rename_session(id, title))?;
        if !found {
            return Err(Error::SessionNotFound(id.to_string()));
        }
        Ok(())
    }

    /// Deletes a session for good: its rows in every table (the extensions' too) and its
    /// data folder (plan files, artifacts). Refused while a live process holds its lease:
    /// this one (close the session first) or another.
    pub fn delete_session(&self, id: &str) -> Result<()> {
        self.delete_if(id, false).map(|_| ())
    }

    /// Whether session `id` holds nothing yet: no content in the store (see
    /// [`waymark_store::forget::is_blank`]) and no file in its folder (a plan written there
    /// by an editor has no row).
    pub fn session_is_blank(&self, id: &str) -> Result<bool> {
        Ok(self
            .store
            .view(|c| waymark_store::forget::is_blank(c, id))?
            && !holds_files(&paths::session_dir(&self.opts.data_dir, id)))
    }

    /// Deletes session `id` only if it is blank, decided in the transaction that deletes it:
    /// a window leaving a session it believes empty never loses a message that reached it
    /// meanwhile (from this window or any other process). False: it was kept.
    pub fn delete_blank_session(&self, id: &str) -> Result<bool> {
        self.delete_if(id, true)
    }

    /// Deletes session `id`, when `only_blank` only if it is blank; false when it was kept.
    fn delete_if(&self, id: &str, only_blank: bool) -> Result<bool> {
        // Only a plain name can be a session's id: nothing else ever reaches the folders.
        if id.is_empty() || id == "." || id == ".." || id.contains(['/', '\0']) {
            return Err(Error::SessionNotFound(id.to_string()));
        }
        let now = self.opts.clock.now_ms();
        let stale = self.opts.lease_stale.as_millis() as i64;
        let (removed, _) = self.store.write(now, |tx| {
            if let Some(l) = store::sessions::lease(tx.conn(), id)?
                && now - l.heartbeat < stale
                && pid_alive(l.pid)
            {
                // Open in this process (a window still closing it, say): a code of its own,
                // so a front end can wait for it to close.
                let (code, who) = if l.pid == i64::from(std::process::id()) {
                    (
                        "session_open_here",
                        "it is open here; close it first".to_string(),
                    )
                } else {
                    ("session_open", format!("process {} has it open", l.pid))
                };
                return Err(Error::refused_as(
                    code,
                    format!("session {id} cannot be deleted while {who}"),
                ));
            }
            if only_blank
                && (!waymark_store::forget::is_blank(tx.conn(), id)?
                    || holds_files(&paths::session_dir(&self.opts.data_dir, id)))
            {
                return Ok(None);
            }
            Ok(Some(tx.delete_session(id)?))
        })?;
        let Some(removed) = removed else {
            return Ok(false);
        };
        if removed == 0 {
            return Err(Error::SessionNotFound(id.to_string()));
        }
        let sd = paths::session_dir(&self.opts.data_dir, id);
        match std::fs::remove_dir_all(&sd) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(Error::io(&sd, e)),
        }
    }
}

/// Whether anything but folders is under `dir` (links not followed; an unreadable folder
/// counts as holding something, so a doubt keeps the session).
fn holds_files(dir: &Path) -> bool {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return true,
        };
        for entry in entries {
            let Ok(entry) = entry else { return true };
            match entry.file_type() {
                Ok(t) if t.is_dir() => todo.push(entry.path()),
                _ => return true,
            }
        }
    }
    false
}

/// Session folder `sd` and its artifacts folder, made private (0700) whatever they were.
fn session_folders(sd: &Path) -> Result<()> {
    for dir in [sd.to_path_buf(), paths::artifacts_dir(sd)] {
        paths::private_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    Ok(())
}

//! The runtime: the store, settings and injected sources, and the way sessions are created
//! and reopened (lease, crash recovery, model resolution).

use crate::clock::{Clock, IdSource, RandomIds, SystemClock};
use crate::error::{Error, Result};
use crate::extension::Extension;
use crate::paths;
use crate::provider;
use crate::provider::{HttpOptions, ModelProvider, resolve_model};
use crate::session::{SessionHandle, SessionSpec};
use crate::store::{self, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use waymark_config::Config;
use waymark_engine::LiveSession;
use waymark_protocol::{Event, SessionSnapshot, SessionSummary};

/// What opening a session changes in its stored row (applied once the lease is held).
#[derive(Default)]
struct Changes {
    model: Option<String>,
    permission_mode: Option<waymark_protocol::PermissionMode>,
}

/// Reads environment variables (injected so tests need not touch the process environment).
pub type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// How the runtime is set up.
#[derive(Clone)]
pub struct RuntimeOptions {
    pub data_dir: PathBuf,
    pub config: Config,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdSource>,
    pub env: EnvReader,
    pub http: HttpOptions,
    /// Anchor for relative paths in model specs and workspaces.
    pub cwd: PathBuf,
    /// A lease whose heartbeat is older than this is taken over.
    pub lease_stale: Duration,
    pub heartbeat: Duration,
    /// Used when neither the session nor the settings name a model.
    pub default_model: Option<String>,
    /// Test hook: use this provider instead of resolving the spec.
    pub provider_override: Option<Arc<dyn ModelProvider>>,
    /// Components plugged into every session.
    pub extensions: Vec<Arc<dyn Extension>>,
    /// How to start the plan-mode sandbox helper: a program and its leading arguments
    /// (for the CLI, its own binary and [`crate::sandbox::HELPER_ARG`]). Without it, plan
    /// mode asks the user about every shell command.
    pub sandbox_helper: Option<Vec<std::ffi::OsString>>,
    /// The environment tool processes are derived from (secrets removed, see
    /// [`crate::secrets::ToolEnv`]); the process environment by default.
    pub process_env: Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// Views read through a pool of read-only connections, so that they neither wait for a
    /// session's writes nor hold them up: for a front end whose views run while sessions
    /// work (the desktop). Off, views share the one connection and open no other (the
    /// CLI, which prints from the thread that drives the session).
    pub read_pool: bool,
    /// The user's own instructions file, read into every new session with the project's
    /// `AGENTS.md` files (front ends: [`crate::instructions::user_file`] of the settings
    /// file). None: project files only.
    pub user_instructions: Option<PathBuf>,
    /// The folder of the settings file in use, which the sandboxed shell never reads (the
    /// platform's default settings folder is never read either).
    pub settings_dir: Option<PathBuf>,
}

impl RuntimeOptions {
    /// Real clock, ids and environment; data in `data_dir`.
    pub fn new(data_dir: PathBuf, config: Config) -> Self {
        RuntimeOptions {
            data_dir,
            config,
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds::default()),
            env: Arc::new(|k: &str| std::env::var(k).ok()),
            http: HttpOptions::default(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            lease_stale: Duration::from_secs(30),
            heartbeat: Duration::from_secs(5),
            default_model: None,
            provider_override: None,
            extensions: Vec::new(),
            sandbox_helper: None,
            process_env: Arc::new(std::env::vars_os().collect()),
            read_pool: false,
            user_instructions: None,
            settings_dir: None,
        }
    }
}

/// The longest text [`Runtime::search_sessions`] looks for, in characters.
const MAX_SEARCH: usize = 200;

/// The most sessions one search returns.
const SEARCH_LIMIT: usize = 200;

/// The runtime of one process.
pub struct Runtime {
    opts: RuntimeOptions,
    /// Sessions this runtime opened that are still alive: new settings reach them.
    open: std::sync::Mutex<Vec<LiveSession>>,
    /// The settings in force; starts as `opts.config`, replaced by [`Runtime::set_config`].
    config: Arc<std::sync::RwLock<Arc<Config>>>,
    store: Arc<Store>,
    /// The MCP servers of the settings it opened with, shared by all its sessions.
    mcp: Arc<waymark_mcp::McpExtension>,
}

/// The settings in force (a writer that panicked left a whole value behind: it is used).
fn read_config(lock: &std::sync::RwLock<Arc<Config>>) -> Arc<Config> {
    match lock.read() {
        Ok(c) => c.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// Why session `s` waits on the user, in words: an open review or question, or a goal that
/// is blocked or paused.
fn needs_you(c: &rusqlite::Connection, s: &SessionSummary) -> Result<Option<String>> {
    use waymark_protocol::{GoalStatus, QuestionnaireKind};
    if let Some(q) = &s.pending_questionnaire {
        let kind = store::questionnaires::get(c, q)?.map(|q| q.kind());
        return Ok(Some(
            match kind {
                Some(QuestionnaireKind::PlanApproval) => "A plan waits for your review",
                Some(QuestionnaireKind::Permission) => "A tool call waits for your permission",
                Some(QuestionnaireKind::Elicitation) => "A tool server asks for your input",
                Some(QuestionnaireKind::ProjectServers) => {
                    "The project asks to start its tool servers"
                }
                _ => "A question waits for your answer",
            }
            .to_string(),
        ));
    }
    Ok(
        match crate::goal::db::current_goal(c, &s.id)?.map(|g| g.status) {
            Some(GoalStatus::Blocked) => Some("The goal is blocked: the agent needs you".into()),
            Some(GoalStatus::Paused) => Some("The goal is paused".into()),
            Some(GoalStatus::BudgetLimited) => Some("The goal used up its budget".into()),
            _ => None,
        },
    )
}

#[allow(unsafe_code)]
pub(crate) fn pid_alive(pid: i64) -> bool {
    if pid <= 0 || pid > i64::from(i32::MAX) {
        return false;
    }
    // SAFETY: kill(2) with signal 0 only checks that the process exists; nothing is sent.
    let r = unsafe { libc::kill(pid as i32, 0) };
    let exists = r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !zombie(pid)
}

/// A process that exited but was not reaped yet (its parent died too, and nothing reaps
/// orphans, as in some containers) still answers kill(2); it holds nothing any more.
fn zombie(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s.get(s.rfind(')')? + 1..)?;
            after.split_whitespace().next().map(|state| state == "Z")
        })
        .unwrap_or(false)
}

impl Runtime {
    /// Opens the database in the data dir.
    /// What a session's sandboxed shell stands on (see [`crate::sandbox::reads`]): its
    /// workspace and artifacts, and the private places around them.
    fn read_scope(&self, workspace: &Path, artifacts: &Path) -> crate::sandbox::reads::ReadScope {
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

    pub fn open(opts: RuntimeOptions) -> Result<Runtime> {
        // The provider keys are in this process's environment: no other process of the
        // user's (a sandboxed command above all) may read it.
        crate::sandbox::make_undumpable();
        // Private, whatever it was before: every session's transcript and plans are in it.
        for dir in [opts.data_dir.clone(), opts.data_dir.join("sessions")] {
            paths::private_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        }
        let store = Arc::new(Store::open(&paths::database_file(&opts.data_dir))?);
        let config = Arc::new(std::sync::RwLock::new(Arc::new(opts.config.clone())));
        let base = crate::secrets::ToolEnv::build(&opts.process_env, &opts.config).plain;
        let mcp = Arc::new(waymark_mcp::McpExtension::new(waymark_mcp::McpHub::new(
            &opts.config.mcp_servers,
            opts.env.clone(),
            base,
        )));
        let rt = Runtime {
            opts,
            open: Default::default(),
            config,
            store,
            mcp,
        };
        // Each extension checks its own settings section before anything is changed.
        crate::sections::check(&rt.opts.config, &rt.extensions()).map_err(Error::Config)?;
        if rt.opts.read_pool {
            rt.store.use_read_pool();
        }
        // Each extension's own tables.
        for ext in rt.extensions() {
            rt.store.migrate_extension(ext.name(), ext.migrations())?;
        }
        rt.refresh_secrets();
        Ok(rt)
    }

    /// Collects the secrets to redact again: the provider keys as the environment (or the
    /// keyring, in the app) has them now, and secret-looking variables.
    fn refresh_secrets(&self) {
        let env = self.opts.env.clone();
        self.store.set_redactor(crate::secrets::Redactor::collect(
            &self.opts.process_env,
            &self.config(),
            &move |k| env(k),
        ));
    }

    /// The store itself, for work below the runtime (tests that simulate crashes, races and
    /// lease theft at that level; the front ends use the views).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The settings sessions opened from now on get.
    pub fn config(&self) -> Arc<Config> {
        read_config(&self.config)
    }

    /// Replaces the settings for sessions opened from now on ([`Runtime::apply_settings`]
    /// also puts them in force for the open ones). Refused when the settings are invalid.
    pub fn set_config(&self, config: Config) -> Result<()> {
        config.validate().map_err(Error::Config)?;
        crate::sections::check(&config, &self.extensions()).map_err(Error::Config)?;
        match self.config.write() {
            Ok(mut c) => *c = Arc::new(config),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(config),
        }
        self.refresh_secrets();
        Ok(())
    }

    /// Puts new settings in force: for sessions opened from now on and for every session
    /// this runtime has open (checks made from the next one on use them). Refused, changing
    /// nothing, when the settings are invalid.
    pub fn apply_settings(&self, config: Config) -> Result<()> {
        self.set_config(config.clone())?;
        // Tool servers added, changed or removed start or stop now.
        let base = crate::secrets::ToolEnv::build(&self.opts.process_env, &config).plain;
        self.mcp().reconfigure(&config.mcp_servers, base);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|s| s.configure(&config));
        Ok(())
    }

    /// Saves the settings at `path` the one way every front end does
    /// ([`crate::settings::save_checked`], held against the settings in force), then puts them
    /// in force for new and open sessions. Nothing is written or changed when they are refused.
    pub fn save_settings(&self, path: &Path, config: Config) -> Result<()> {
        let now = self.opts.clock.now_ms();
        crate::sections::check(&config, &self.extensions()).map_err(Error::Config)?;
        crate::settings::save_checked(path, &self.config(), &config, now)?;
        self.apply_settings(config)
    }

    /// The secrets redacted from what is stored, sent or shown.
    pub fn redactor(&self) -> Arc<crate::secrets::Redactor> {
        self.store.redactor()
    }

    /// A handle that always gives the secrets in force (they change with the settings and
    /// the keyring), for the log and the plan watcher.
    pub fn redactor_source(&self) -> crate::logging::Secrets {
        let store = self.store.clone();
        Arc::new(move || store.redactor())
    }

    pub fn options(&self) -> &RuntimeOptions {
        &self.opts
    }

    /// Every extension of this runtime's sessions: the built-in ones, then the options'.
    pub fn extensions(&self) -> Vec<Arc<dyn Extension>> {
        let mut all = crate::builtin::builtin();
        all.push(self.mcp.clone());
        all.extend(self.opts.extensions.iter().cloned());
        all
    }

    /// The MCP servers of this runtime.
    pub fn mcp(&self) -> &Arc<waymark_mcp::McpHub> {
        self.mcp.hub()
    }

    /// The MCP servers' state and tools; with `wait`, every enabled server is started first
    /// and each is ready or has failed when this returns (within its start-up time).
    pub async fn mcp_servers(&self, wait: bool) -> Vec<waymark_protocol::mcp_view::McpServerView> {
        let hub = self.mcp();
        if wait {
            hub.start_all().await;
        } else {
            hub.start();
        }
        hub.status()
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
            return Err(Error::Refused(format!(
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

    /// Files of session `id`'s workspace whose path holds `query`, for `@` in the composer
    /// (at most `limit`; the project's ignore rules apply; hidden files and private places
    /// are left out).
    pub fn workspace_files(&self, id: &str, query: &str, limit: usize) -> Result<Vec<String>> {
        let (_, ws, sd) = self.stored(id)?;
        let sandbox = crate::sandbox::Sandbox::new(
            self.opts.sandbox_helper.clone(),
            (self.opts.env)(crate::sandbox::FORCE_ENV),
            sd.join("sandbox-tmp"),
            self.read_scope(&ws, &paths::artifacts_dir(&sd)),
        );
        let protected = sandbox.protected(&self.config().sandbox.read_allow);
        Ok(crate::tools::mention::workspace_files(
            &ws,
            query,
            limit.min(200),
            &protected,
        ))
    }

    /// Gives a session the title the lists show, trimmed. An empty title, one past
    /// [`store::forget::MAX_TITLE`] characters or one holding control characters is refused.
    pub fn rename_session(&self, id: &str, title: &str) -> Result<()> {
        let title = title.trim();
        let max = store::forget::MAX_TITLE;
        if title.is_empty() {
            return Err(Error::Refused("a session's title cannot be empty".into()));
        }
        if title.chars().count() > max {
            return Err(Error::Refused(format!(
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
            return Err(Error::Refused(
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
                let who = if l.pid == i64::from(std::process::id()) {
                    "it is open here; close it first".to_string()
                } else {
                    format!("process {} has it open", l.pid)
                };
                return Err(Error::Refused(format!(
                    "session {id} cannot be deleted while {who}"
                )));
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

    /// All sessions, newest activity first.
    pub fn list_sessions(&self) -> Result<Vec<SessionSummary>> {
        let mut list = self.store.view(store::sessions::list)?;
        self.store.view(|c| {
            // One unreadable row leaves its session without a badge, not the list empty.
            let trees = waymark_worktree::db::on_disk(c).unwrap_or_default();
            for s in &mut list {
                s.needs_you = needs_you(c, s).unwrap_or(None);
                if let Some(w) = trees.iter().find(|w| w.session_id == s.id) {
                    s.worktree = Some(w.branch.clone());
                    // The same folder in the checkout the worktree stands for.
                    let inside = Path::new(&s.workspace)
                        .strip_prefix(&w.path)
                        .unwrap_or(Path::new(""));
                    // (At the checkout's top, `inside` is empty, and joining it would add a
                    // trailing `/` that no other session of the project has.)
                    let project = if inside.as_os_str().is_empty() {
                        Path::new(&w.repo).to_path_buf()
                    } else {
                        Path::new(&w.repo).join(inside)
                    };
                    s.project = Some(project.display().to_string());
                }
            }
            Ok::<_, Error>(())
        })?;
        Ok(list)
    }

    /// The sessions whose messages hold `query` (trimmed; ASCII letters of either case): the
    /// user's messages and the agent's replies. At most 200 ids, newest activity first. A
    /// blank query finds nothing; one longer than 200 characters is refused.
    pub fn search_sessions(&self, query: &str) -> Result<Vec<String>> {
        let query = query.trim();
        if query.is_empty() {
            return Ok(Vec::new());
        }
        let n = query.chars().count();
        if n > MAX_SEARCH {
            return Err(Error::Refused(format!(
                "a search is at most {MAX_SEARCH} characters; this one has {n}"
            )));
        }
        Ok(self
            .store
            .view(|c| store::sessions::search(c, query, SEARCH_LIMIT))?)
    }

    /// Everything `show` prints about a session.
    pub fn snapshot(&self, id: &str) -> Result<SessionSnapshot> {
        self.store.view(|c| {
            let summary = store::sessions::list(c)?
                .into_iter()
                .find(|s| s.id == id)
                .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            let (turns, usage) = store::turns::totals(c, id)?;
            let spend = store::spend::session(c, id)?;
            Ok(SessionSnapshot {
                summary,
                session_dir: paths::session_dir(&self.opts.data_dir, id)
                    .display()
                    .to_string(),
                messages: store::messages::list(c, id)?,
                questionnaires: store::questionnaires::list(c, id)?
                    .iter()
                    .map(|q| q.info())
                    .collect(),
                turns,
                usage,
                spend,
                cost_usd: spend.usd(),
                last_seq: store::events::last_seq(c, id)?,
            })
        })
    }

    /// An open session as a front end shows it: the snapshot, the newest `newest` logged
    /// events (older pages through [`Runtime::events`]) and the goal.
    pub fn session_view(&self, id: &str, newest: u64) -> Result<waymark_protocol::SessionView> {
        let snapshot = self.snapshot(id)?;
        let after = snapshot.last_seq.saturating_sub(newest);
        let events = self.events(id, after, newest)?;
        Ok(waymark_protocol::SessionView {
            complete: after == 0,
            goal: self.goal(id)?,
            goal_queue: self.goal_queue(id)?,
            snapshot,
            events,
            instructions: self.instructions(id)?.map(|i| i.files).unwrap_or_default(),
        })
    }

    /// The project instructions a session took when it started (None: it started before
    /// Waymark read them).
    pub fn instructions(&self, id: &str) -> Result<Option<crate::instructions::Instructions>> {
        Ok(self.store.view(|c| store::sessions::instructions(c, id))?)
    }

    /// One questionnaire of a session, as front ends show it.
    pub fn questionnaire(
        &self,
        id: &str,
        questionnaire_id: &str,
    ) -> Result<Option<waymark_protocol::QuestionnaireInfo>> {
        Ok(self
            .store
            .view(|c| store::questionnaires::get(c, questionnaire_id))?
            .filter(|q| q.session_id == id)
            .map(|q| q.info()))
    }

    /// Logged events of a session after `after`.
    pub fn events(&self, id: &str, after: u64, limit: u64) -> Result<Vec<Event>> {
        self.store.view(|c| {
            if store::sessions::get(c, id)?.is_none() {
                return Err(Error::SessionNotFound(id.to_string()));
            }
            Ok(store::events::list(c, id, after, limit)?)
        })
    }
}

impl Runtime {
    /// The newest `limit` logged events of one type, oldest first.
    pub fn recent_events_of_type(
        &self,
        id: &str,
        type_name: &str,
        limit: u64,
    ) -> Result<Vec<Event>> {
        Ok(self
            .store
            .view(|c| store::events::recent_of_type(c, id, type_name, limit))?)
    }
}

/// Session folder `sd` and its artifacts folder, made private (0700) whatever they were.
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

fn session_folders(sd: &Path) -> Result<()> {
    for dir in [sd.to_path_buf(), paths::artifacts_dir(sd)] {
        paths::private_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod pid_tests {
    use super::*;

    #[test]
    fn an_exited_but_unreaped_process_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = i64::from(child.id());
        // Not reaped yet: it stays a zombie until wait().
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !zombie(pid) {
            assert!(std::time::Instant::now() < deadline, "child never exited");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!pid_alive(pid));
        child.wait().unwrap();
        assert!(pid_alive(i64::from(std::process::id())));
        assert!(!pid_alive(0));
    }
}

//! The runtime of one process: how it is set up (the store, the settings in force and
//! their one checked save, injected sources, the MCP servers), and whether a lease's process
//! is alive. Its sessions are made and opened in `sessions.rs`, and listed and read in
//! `listing.rs`.

mod listing;
mod sessions;

use crate::clock::{Clock, IdSource, RandomIds, SystemClock};
use crate::error::{Error, Result};
use crate::extension::Extension;
use crate::paths;
use crate::provider::{HttpOptions, ModelProvider};
use crate::store::Store;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use waymark_config::Config;
use waymark_engine::LiveSession;

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
    /// Secrets a front end handed over besides the settings and the environment (the values
    /// an editor gives its MCP servers), by name: redacted as long as the runtime lives.
    handed: std::sync::Mutex<Vec<(String, String)>>,
}

/// The most secrets a front end may hand over ([`Runtime::add_secrets`]).
pub const HANDED_MAX: usize = 256;

/// The settings in force (a writer that panicked left a whole value behind: it is used).
fn read_config(lock: &std::sync::RwLock<Arc<Config>>) -> Arc<Config> {
    match lock.read() {
        Ok(c) => c.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
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
            handed: Default::default(),
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
        // Held until the new redactor is in place, so two refreshes at once cannot leave the
        // older one installed last.
        let handed = self.handed.lock().unwrap_or_else(|p| p.into_inner());
        let env = self.opts.env.clone();
        let mut redactor =
            crate::secrets::Redactor::collect(&self.opts.process_env, &self.config(), &move |k| {
                env(k)
            });
        for (name, value) in handed.iter() {
            redactor.add(name, value);
        }
        self.store.set_redactor(redactor);
    }

    /// Redacts `secrets` (name, value) from everything stored, sent or shown from now on, as
    /// long as the runtime lives: values a front end was given that Waymark's own settings
    /// never held (an editor's MCP server's key). At most [`HANDED_MAX`] are kept.
    pub fn add_secrets(&self, secrets: impl IntoIterator<Item = (String, String)>) {
        let mut added = false;
        {
            let mut handed = self.handed.lock().unwrap_or_else(|p| p.into_inner());
            for s in secrets {
                if handed.len() >= HANDED_MAX {
                    tracing::warn!("more secrets were handed over than are kept ({HANDED_MAX})");
                    break;
                }
                if !handed.contains(&s) {
                    handed.push(s);
                    added = true;
                }
            }
        }
        if added {
            self.refresh_secrets();
        }
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

//! The runtime's MCP servers: one connection per configured server, shared by every session
//! of the runtime. Servers start in the background when the first session opens; a session's
//! first model request and a call to a server's tool wait for it, each within a bound, and a
//! slow or failing one delays nothing past that. A server that exits is started again on the
//! next call (the first time at once, then with a growing wait), and a changed tool list is
//! listed again.

pub use crate::catalog::{ListedTool, MAX_DESCRIPTION, MAX_LISTING_BYTES, MAX_PAGES, MAX_TOOLS};
use crate::connect::{Connection, connect};
use crate::handler::{Elicitor, Handler, ProgressSink};
use crate::{McpError, seconds};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use waymark_config::mcp::McpServerConfig;
use waymark_protocol::mcp_view::{
    McpPromptView, McpServerState, McpServerView, McpSkippedTool, McpToolView,
};

/// Reads an environment variable (for `${VAR}` in the servers' settings).
pub type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// How long past its limits a call may go before the runtime ends it itself.
pub(crate) const WATCHDOG_GRACE: Duration = Duration::from_secs(2);

/// Where a project's server starts: the folder its file names inside the project, else the
/// root (outside the checkout).
pub fn project_cwd(folder: &std::path::Path, cwd: Option<&str>) -> String {
    match cwd {
        Some(c) => folder.join(c).display().to_string(),
        None => "/".to_string(),
    }
}

/// What a server is started by: its command line, or its URL (as the settings have them).
pub fn target(config: &McpServerConfig) -> String {
    match (&config.command, &config.url) {
        (Some(c), _) => std::iter::once(c.as_str())
            .chain(config.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        (None, Some(u)) => u.clone(),
        (None, None) => String::new(),
    }
}

/// How long a call may take.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// The longest wait without a word from the server (each progress report starts it
    /// again): the server's `tool_timeout_ms`.
    pub timeout: Duration,
    /// Never past this, whatever the server says (the goal's time left).
    pub deadline: Option<Duration>,
}

/// What a call does with what the server sends while it runs.
#[derive(Default, Clone)]
pub struct CallHooks {
    /// Where its progress reports go.
    pub progress: Option<ProgressSink>,
    /// Who answers a form the server sends during it (without one, forms are declined).
    pub asker: Option<Elicitor>,
}

/// A server's state, as `waymark mcp list` and the Settings show it.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    Disabled,
    Starting,
    Ready,
    Failed(String),
}

pub(crate) struct State {
    pub(crate) phase: Phase,
    pub(crate) conn: Option<Arc<Connection>>,
    tools: Arc<Vec<ListedTool>>,
    skipped: Vec<(String, String)>,
    /// Its prompts (slash commands).
    pub(crate) prompts: Arc<Vec<McpPromptView>>,
    /// Restarts since the last call that worked, and when the next may be tried.
    pub(crate) restarts: u32,
    next_try: Option<Instant>,
}

/// One configured server.
pub struct Server {
    pub name: String,
    pub(crate) config: McpServerConfig,
    pub(crate) handler: Handler,
    pub(crate) state: Mutex<State>,
    /// One start at a time.
    starting: tokio::sync::Mutex<()>,
    /// Cancelled when the settings no longer have this server as it is.
    retired: CancellationToken,
    /// The project folder whose `.mcp.json` has it; `None` for the user's settings.
    pub scope: Option<std::path::PathBuf>,
    /// A server an editor brought to its sessions (ACP's `mcpServers`): those sessions,
    /// which alone it serves. Trusted as the user's own settings are; `None` for others.
    pub(crate) editor: Option<Mutex<std::collections::BTreeSet<String>>>,
    /// The tools' environment it starts from (when the settings change it, the server is
    /// started afresh).
    base: BaseEnv,
}

/// The environment servers start from: the tools' (the process's, secrets removed).
pub type BaseEnv = Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>;

impl Server {
    fn new(
        name: &str,
        config: &McpServerConfig,
        scope: Option<std::path::PathBuf>,
        editor: Option<std::collections::BTreeSet<String>>,
        base: BaseEnv,
    ) -> Arc<Server> {
        Arc::new(Server {
            scope,
            editor: editor.map(Mutex::new),
            base,
            name: name.to_string(),
            config: config.clone(),
            handler: Handler {
                forms: true,
                ..Handler::default()
            },
            state: Mutex::new(State {
                phase: if config.enabled {
                    Phase::Starting
                } else {
                    Phase::Disabled
                },
                conn: None,
                tools: Default::default(),
                skipped: Vec::new(),
                prompts: Default::default(),
                restarts: 0,
                next_try: None,
            }),
            starting: Default::default(),
            retired: CancellationToken::new(),
        })
    }

    /// Stops it for good: its process is killed and nothing starts it again.
    fn retire(&self) {
        self.retired.cancel();
        let mut st = lock(&self.state);
        if let Some(c) = st.conn.take() {
            c.kill();
        }
        st.phase = Phase::Disabled;
    }

    /// Whether it is ready, with a connection that has not closed.
    pub fn live(&self) -> bool {
        let st = lock(&self.state);
        st.phase == Phase::Ready && st.conn.as_ref().is_some_and(|c| !c.is_closed())
    }

    /// How long a call may go without a word from the server.
    pub fn tool_timeout_ms(&self) -> u64 {
        self.config.tool_timeout_ms
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The servers editors brought (`crate::editors`), by name: each with the sessions that
/// brought it.
pub(crate) type EditorServers = BTreeMap<String, (McpServerConfig, BTreeSet<String>)>;

/// The servers of one runtime.
pub struct McpHub {
    /// The configured servers; replaced whole when the settings change.
    servers: std::sync::RwLock<Arc<Vec<Arc<Server>>>>,
    /// The sessions' workspaces, for servers configured later.
    roots: Mutex<Vec<std::path::PathBuf>>,
    /// The servers of the user's settings, and those of approved projects (`.mcp.json`) by
    /// project folder.
    #[allow(clippy::type_complexity)]
    wanted: Mutex<(
        BTreeMap<String, McpServerConfig>,
        BTreeMap<std::path::PathBuf, BTreeMap<String, McpServerConfig>>,
    )>,
    /// The servers editors brought, by name: each with the sessions that brought it.
    pub(crate) editors: Mutex<EditorServers>,
    /// Held while the running servers are brought in line.
    applying: Mutex<()>,
    /// Each open session's workspace: a project's servers serve its sessions alone.
    sessions: Mutex<std::collections::HashMap<String, std::path::PathBuf>>,
    env: EnvReader,
    /// The environment servers start with (the process's, secrets removed), before their
    /// own `env`; replaced when the settings change it.
    base_env: std::sync::RwLock<BaseEnv>,
    /// Changes whenever any server's tools or state do.
    generation: Arc<AtomicU64>,
    started: std::sync::Once,
    /// The async runtime the hub started in, where later servers start too (settings may
    /// change on a thread that has none).
    rt: std::sync::OnceLock<tokio::runtime::Handle>,
    reaped: std::sync::atomic::AtomicBool,
    /// Set once the servers have been started; changed settings start their servers at once
    /// only from then on.
    launched: std::sync::atomic::AtomicBool,
    /// Cancelled when the hub is dropped: the watchers stop.
    closing: CancellationToken,
}

impl Drop for McpHub {
    fn drop(&mut self) {
        self.closing.cancel();
    }
}

impl McpHub {
    pub fn new(
        servers: &BTreeMap<String, McpServerConfig>,
        env: EnvReader,
        base_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    ) -> Arc<McpHub> {
        let base_env: BaseEnv = Arc::new(base_env);
        Arc::new(McpHub {
            servers: std::sync::RwLock::new(Arc::new(
                servers
                    .iter()
                    .map(|(name, config)| Server::new(name, config, None, None, base_env.clone()))
                    .collect(),
            )),
            roots: Default::default(),
            wanted: Mutex::new((servers.clone(), BTreeMap::new())),
            sessions: Default::default(),
            editors: Default::default(),
            applying: Mutex::new(()),
            env,
            base_env: std::sync::RwLock::new(base_env),
            generation: Default::default(),
            started: std::sync::Once::new(),
            rt: std::sync::OnceLock::new(),
            reaped: Default::default(),
            launched: Default::default(),
            closing: CancellationToken::new(),
        })
    }

    /// The configured servers now.
    pub(crate) fn list(&self) -> Arc<Vec<Arc<Server>>> {
        self.servers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Takes changed settings: a server that is new or whose settings changed starts afresh
    /// (in the background, once the hub has started), one that is gone or changed is
    /// stopped, and the others go on untouched.
    /// `base_env` is the tools' environment the settings now give: a server started from
    /// another one starts afresh.
    pub fn reconfigure(
        self: &Arc<Self>,
        servers: &BTreeMap<String, McpServerConfig>,
        base_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    ) {
        {
            let mut base = self.base_env.write().unwrap_or_else(|p| p.into_inner());
            if **base != base_env {
                *base = Arc::new(base_env);
            }
        }
        lock(&self.wanted).0 = servers.clone();
        self.apply();
    }

    /// Adds the servers of an approved project's `.mcp.json` (replacing what it had): they
    /// serve the sessions of that folder alone. A name the settings or another project
    /// already use is left out.
    pub fn add_project(
        self: &Arc<Self>,
        folder: &std::path::Path,
        servers: BTreeMap<String, McpServerConfig>,
    ) {
        lock(&self.wanted).1.insert(folder.to_path_buf(), servers);
        self.apply();
    }

    /// Stops the servers of a project's `.mcp.json` (gone, changed or refused).
    pub fn drop_project(self: &Arc<Self>, folder: &std::path::Path) {
        if lock(&self.wanted).1.remove(folder).is_some() {
            self.apply();
        }
    }

    /// The names the settings and the approved projects give their servers.
    pub(crate) fn configured_names(&self) -> BTreeSet<String> {
        let (user, projects) = &*lock(&self.wanted);
        user.keys()
            .chain(projects.values().flat_map(|p| p.keys()))
            .cloned()
            .collect()
    }

    /// The session's workspace, for the project servers it may use.
    pub fn open_session(&self, session_id: &str, workspace: &std::path::Path) {
        lock(&self.sessions).insert(session_id.to_string(), workspace.to_path_buf());
    }

    /// Whether `server` serves `session_id`: an editor's server the sessions that brought
    /// it, else as [`McpHub::serves`] has it.
    pub fn serves_server(&self, server: &Server, session_id: &str) -> bool {
        match &server.editor {
            Some(sessions) => lock(sessions).contains(session_id),
            None => self.serves(server.scope.as_deref(), session_id),
        }
    }

    /// Whether a server of `scope` serves `session_id`: a settings server (no scope)
    /// serves all, a project's only the sessions in its folder.
    pub fn serves(&self, scope: Option<&std::path::Path>, session_id: &str) -> bool {
        match scope {
            None => true,
            Some(folder) => lock(&self.sessions)
                .get(session_id)
                .is_some_and(|w| w == folder),
        }
    }

    /// Brings the running servers in line with what is wanted.
    pub(crate) fn apply(self: &Arc<Self>) {
        // One at a time: two overlapping changes must not each keep the other's servers.
        let _one = lock(&self.applying);
        type Editors = Option<std::collections::BTreeSet<String>>;
        type Wanted = (String, McpServerConfig, Option<std::path::PathBuf>, Editors);
        let desired: Vec<Wanted> = {
            let (user, projects) = &*lock(&self.wanted);
            let mut d: Vec<Wanted> = user
                .iter()
                .map(|(n, c)| (n.clone(), c.clone(), None, None))
                .collect();
            for (folder, servers) in projects {
                for (n, c) in servers {
                    if d.iter().any(|(m, ..)| m == n) {
                        tracing::warn!(server = %n, project = %folder.display(), "a project's MCP server is left out: the name is taken");
                        continue;
                    }
                    d.push((n.clone(), c.clone(), Some(folder.clone()), None));
                }
            }
            // The editors' servers: their names never take one the settings or a project use
            // (they were refused when brought).
            for (n, (c, sessions)) in lock(&self.editors).iter() {
                if !d.iter().any(|(m, ..)| m == n) {
                    d.push((n.clone(), c.clone(), None, Some(sessions.clone())));
                }
            }
            d
        };
        let workspaces = lock(&self.sessions).clone();
        let old = self.list();
        let roots = lock(&self.roots).clone();
        let base = self
            .base_env
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let next: Vec<Arc<Server>> = desired
            .iter()
            .map(
                |(name, config, scope, editor)| match old.iter().find(|s| &s.name == name) {
                    Some(s)
                        if s.config == *config
                            && s.scope == *scope
                            && s.editor.is_some() == editor.is_some()
                            && Arc::ptr_eq(&s.base, &base) =>
                    {
                        // An editor's server takes the sessions it serves now, and their
                        // folders as its roots.
                        if let (Some(now), Some(sessions)) = (&s.editor, editor) {
                            *lock(now) = sessions.clone();
                            for w in sessions.iter().filter_map(|id| workspaces.get(id)) {
                                s.handler.shared.add_root(w);
                            }
                        }
                        s.clone()
                    }
                    _ => {
                        let s =
                            Server::new(name, config, scope.clone(), editor.clone(), base.clone());
                        match (scope, editor) {
                            // A project's server knows its own folder alone.
                            (Some(folder), _) => {
                                s.handler.shared.add_root(folder);
                            }
                            // An editor's, the folders of the sessions it serves.
                            (None, Some(sessions)) => {
                                for w in sessions.iter().filter_map(|id| workspaces.get(id)) {
                                    s.handler.shared.add_root(w);
                                }
                            }
                            (None, None) => {
                                for r in &roots {
                                    s.handler.shared.add_root(r);
                                }
                            }
                        }
                        s
                    }
                },
            )
            .collect();
        let fresh: Vec<Arc<Server>> = next
            .iter()
            .filter(|n| !old.iter().any(|o| Arc::ptr_eq(o, n)))
            .cloned()
            .collect();
        for gone in old
            .iter()
            .filter(|o| !next.iter().any(|n| Arc::ptr_eq(o, n)))
        {
            gone.retire();
        }
        if fresh.is_empty() && old.len() == next.len() {
            return;
        }
        *self.servers.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        self.bump();
        if self.launched.load(Ordering::Acquire)
            && let Some(rt) = self.rt.get()
        {
            let _in = rt.enter();
            if fresh
                .iter()
                .any(|s| s.config.enabled && s.config.command.is_some())
            {
                drop(self.reap());
            }
            for s in fresh.into_iter().filter(|s| s.config.enabled) {
                self.watch(rt, s);
            }
        }
    }

    /// Starts `server` and lists its tools again each time it says they changed, until it
    /// is retired or the hub closes.
    fn watch(self: &Arc<Self>, rt: &tokio::runtime::Handle, server: Arc<Server>) {
        let hub = Arc::downgrade(self);
        let closing = self.closing.clone();
        rt.spawn(async move {
            if let Some(h) = hub.upgrade() {
                tokio::select! {
                    _ = server.retired.cancelled() => return,
                    _ = h.ensure(&server) => {}
                }
            }
            // A changed tool list is listed again, once per burst of notices.
            loop {
                tokio::select! {
                    _ = closing.cancelled() => return,
                    _ = server.retired.cancelled() => return,
                    _ = server.handler.shared.tools_changed.notified() => {}
                }
                let Some(h) = hub.upgrade() else { return };
                h.relist(&server).await;
            }
        });
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.list().is_empty()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    pub fn server(&self, name: &str) -> Option<Arc<Server>> {
        self.list().iter().find(|s| s.name == name).cloned()
    }

    /// Starts every enabled server in the background, once (later calls do nothing). Needs a
    /// tokio runtime; without one nothing starts and the servers say why.
    pub fn start(self: &Arc<Self>) {
        self.started.call_once(|| {
            let Ok(rt) = tokio::runtime::Handle::try_current() else {
                for s in self.list().iter() {
                    let mut st = lock(&s.state);
                    if st.phase == Phase::Starting {
                        st.phase = Phase::Failed("no async runtime to start it in".into());
                    }
                }
                return;
            };
            let _ = self.rt.set(rt.clone());
            self.launch();
        });
    }

    /// The enabled servers that serve `session_id`.
    pub fn serving(&self, session_id: &str) -> Vec<Arc<Server>> {
        self.list()
            .iter()
            .filter(|s| s.config.enabled && self.serves_server(s, session_id))
            .cloned()
            .collect()
    }

    /// Waits until each of `servers` is ready (started, or started again after it exited)
    /// or has failed, each at most `bound` and never past its own `startup_timeout_ms`;
    /// the names of those that are not ready by then.
    pub async fn wait_ready(
        self: &Arc<Self>,
        servers: &[Arc<Server>],
        bound: Duration,
    ) -> Vec<String> {
        let waits = servers.iter().map(|s| async move {
            let limit = bound.min(Duration::from_millis(s.config.startup_timeout_ms));
            // The start goes on without its waiter: one that gives up never cuts a start
            // short (which would skip the back-off, and let every later call start it again
            // and wait the whole start-up time once more).
            let (hub, server) = (self.clone(), s.clone());
            let start = tokio::spawn(async move { hub.ensure(&server).await.is_ok() });
            let ready = tokio::select! {
                _ = s.retired.cancelled() => false,
                r = tokio::time::timeout(limit, start) => matches!(r, Ok(Ok(true))),
            };
            (!ready).then(|| s.name.clone())
        });
        futures_util::future::join_all(waits)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Starts the servers configured now; those configured later start as they come.
    fn launch(self: &Arc<Self>) {
        let Some(rt) = self.rt.get() else { return };
        // Under the settings' lock: a change made meanwhile is either in this list or
        // starts its own servers.
        let _one = lock(&self.applying);
        if self.launched.swap(true, Ordering::AcqRel) {
            return;
        }
        let _in = rt.enter();
        // Not waited for: it kills only what no live process owns.
        drop(self.reap());
        for s in self.list().iter().filter(|s| s.config.enabled) {
            self.watch(rt, s.clone());
        }
    }

    /// Kills, once per hub and off the async threads (a scan of /proc), what the servers of
    /// an earlier run that was killed outright left behind.
    fn reap(&self) -> Option<tokio::task::JoinHandle<usize>> {
        let stdio = self
            .list()
            .iter()
            .any(|s| s.config.enabled && s.config.command.is_some());
        (stdio && !self.reaped.swap(true, Ordering::AcqRel))
            .then(|| tokio::task::spawn_blocking(crate::reap::reap_orphans))
    }

    /// Starts every enabled server and waits until each is ready or has failed (for
    /// `waymark mcp list`).
    pub async fn start_all(self: &Arc<Self>) {
        if let Some(reaping) = self.reap() {
            let _ = reaping.await;
        }
        let servers = self.list();
        let starts = servers
            .iter()
            .filter(|s| s.config.enabled)
            .map(|s| async move {
                let _ = self.ensure(s).await;
            });
        futures_util::future::join_all(starts).await;
    }

    /// Adds a session's workspace to the servers' roots.
    pub fn add_root(&self, workspace: &std::path::Path) {
        {
            let mut roots = lock(&self.roots);
            if !roots.iter().any(|r| r == workspace) {
                roots.push(workspace.to_path_buf());
            }
        }
        // A project's server knows its own folder alone.
        for s in self
            .list()
            .iter()
            .filter(|s| s.scope.is_none() && s.editor.is_none())
        {
            s.handler.shared.add_root(workspace);
        }
    }

    /// Every server's state and tools, as the front ends show them.
    pub fn status(&self) -> Vec<McpServerView> {
        self.status_where(|_| true)
    }

    /// The servers one session may use (a project's serve only its folder's sessions).
    pub fn status_for(&self, session_id: &str) -> Vec<McpServerView> {
        self.status_where(|s| self.serves_server(s, session_id))
    }

    fn status_where(&self, keep: impl Fn(&Server) -> bool) -> Vec<McpServerView> {
        self.list()
            .iter()
            .filter(|s| keep(s))
            .map(|s| {
                let st = lock(&s.state);
                let (state, reason) = match (&st.phase, &st.conn) {
                    (Phase::Ready, Some(c)) if c.is_closed() => (
                        McpServerState::Failed,
                        Some(format!(
                            "{}; it is started again on the next call",
                            c.closed_reason()
                        )),
                    ),
                    (Phase::Ready, _) => (McpServerState::Ready, None),
                    (Phase::Starting, _) => (McpServerState::Starting, None),
                    (Phase::Disabled, _) => (McpServerState::Disabled, None),
                    (Phase::Failed(m), _) => (McpServerState::Failed, Some(m.clone())),
                };
                McpServerView {
                    name: s.name.clone(),
                    state,
                    reason,
                    target: target(&s.config),
                    tools: st
                        .tools
                        .iter()
                        .map(|t| McpToolView {
                            name: t.tool_name.clone(),
                            model_name: t.model_name.clone(),
                            description: t.description.clone(),
                            read_only: t.read_only,
                            vouched: s.config.read_only_tools.contains(&t.tool_name),
                        })
                        .collect(),
                    skipped: st
                        .skipped
                        .iter()
                        .map(|(name, reason)| McpSkippedTool {
                            name: name.clone(),
                            reason: reason.clone(),
                        })
                        .collect(),
                    prompts: st.prompts.to_vec(),
                }
            })
            .collect()
    }

    /// The tools of every ready server (with their server), cheap: `Arc`s under a lock.
    pub fn tools(&self) -> Vec<(Arc<Server>, Arc<Vec<ListedTool>>)> {
        self.list()
            .iter()
            .filter_map(|s| {
                let st = lock(&s.state);
                (st.phase == Phase::Ready).then(|| (s.clone(), st.tools.clone()))
            })
            .collect()
    }

    /// A live connection to `server`: the current one, or a new one when there is none or
    /// it closed (the first restart at once, later ones after a growing wait).
    pub(crate) async fn ensure(&self, server: &Server) -> Result<Arc<Connection>, McpError> {
        let _one = server.starting.lock().await;
        {
            let st = lock(&server.state);
            if let Some(c) = &st.conn
                && !c.is_closed()
            {
                return Ok(c.clone());
            }
            if st.phase == Phase::Disabled {
                return Err(McpError::new(&server.name, "the server is disabled"));
            }
            if let Some(at) = st.next_try
                && Instant::now() < at
            {
                let why = match (&st.phase, &st.conn) {
                    (_, Some(c)) => c.closed_reason(),
                    (Phase::Failed(m), None) => m.clone(),
                    _ => "it is not running".into(),
                };
                return Err(McpError::new(
                    &server.name,
                    format!(
                        "{why}; it is tried again in {}",
                        seconds(at.saturating_duration_since(Instant::now()))
                    ),
                ));
            }
        }
        let result = self.open(server).await;
        let mut st = lock(&server.state);
        match result {
            // The settings dropped or changed it meanwhile.
            Ok((conn, ..)) if server.retired.is_cancelled() => {
                conn.kill();
                Err(McpError::new(
                    &server.name,
                    "its settings changed; the new ones apply",
                ))
            }
            Ok((conn, tools, skipped, prompts)) => {
                let conn = Arc::new(conn);
                st.conn = Some(conn.clone());
                st.tools = Arc::new(tools);
                st.skipped = skipped;
                st.prompts = Arc::new(prompts);
                st.phase = Phase::Ready;
                drop(st);
                self.bump();
                Ok(conn)
            }
            Err(e) => {
                // The first restart is at once; each later one waits twice as long, up to a
                // minute.
                st.restarts = st.restarts.saturating_add(1);
                let wait =
                    Duration::from_secs(1u64 << st.restarts.min(6)).min(Duration::from_secs(60));
                st.next_try = Some(Instant::now() + wait);
                st.conn = None;
                st.tools = Default::default();
                st.prompts = Default::default();
                st.phase = Phase::Failed(e.message.clone());
                drop(st);
                self.bump();
                Err(e)
            }
        }
    }

    /// Connects and lists the tools and the prompts.
    #[allow(clippy::type_complexity)]
    async fn open(
        &self,
        server: &Server,
    ) -> Result<
        (
            Connection,
            Vec<ListedTool>,
            Vec<(String, String)>,
            Vec<McpPromptView>,
        ),
        McpError,
    > {
        // A project's server may name only variables the tools' environment already has
        // (no provider key, no secret-looking variable): approving a file never hands it
        // more than a command in the project could read.
        let tools_env = |k: &str| {
            server
                .base
                .iter()
                .find(|(n, _)| n.to_str() == Some(k))
                .and_then(|(_, v)| v.to_str().map(str::to_string))
        };
        let transport = match &server.scope {
            None => server.config.transport(&server.name, &*self.env),
            Some(_) => server.config.transport(&server.name, &tools_env),
        }
        .map_err(|e| McpError::new(&server.name, e.message))?;
        let transport = match transport {
            waymark_config::mcp::McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                // The server starts from the environment tools get (no provider keys, no
                // secret-looking variables), plus its own settings.
                let mut full: BTreeMap<String, String> = server
                    .base
                    .iter()
                    .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v.to_str()?.to_string())))
                    .collect();
                full.extend(env);
                // A project's server starts outside the checkout unless its file names a
                // folder in it (else the checkout's `.npmrc`, `pkg.py` or `node_modules`
                // would steer a command that looks harmless), and gets no way to the
                // keyring or the SSH agent.
                let cwd = match &server.scope {
                    Some(folder) => Some(project_cwd(folder, cwd.as_deref())),
                    None => cwd,
                };
                if server.scope.is_some() {
                    for k in waymark_config::secrets::SANDBOX_REMOVED {
                        full.remove(*k);
                    }
                }
                waymark_config::mcp::McpTransport::Stdio {
                    command,
                    args,
                    env: full,
                    cwd,
                }
            }
            http => http,
        };
        let startup = Duration::from_millis(server.config.startup_timeout_ms);
        let conn = connect(
            &server.name,
            &transport,
            startup,
            server.handler.clone(),
            true,
        )
        .await?;
        let (tools, skipped) = tokio::time::timeout(
            startup,
            crate::catalog::list(&server.name, &server.config, server.scope.is_some(), &conn),
        )
        .await
        .map_err(|_| {
            McpError::new(
                &server.name,
                format!("no tool list within {}", seconds(startup)),
            )
        })??;
        let prompts =
            tokio::time::timeout(startup, crate::catalog::list_prompts(&server.name, &conn))
                .await
                .unwrap_or_default();
        Ok((conn, tools, skipped, prompts))
    }

    /// Lists a ready server's tools and prompts again (it said they changed).
    async fn relist(&self, server: &Server) {
        let conn = lock(&server.state).conn.clone();
        let Some(conn) = conn else { return };
        let startup = Duration::from_millis(server.config.startup_timeout_ms);
        let listed = tokio::time::timeout(startup, async {
            let tools =
                crate::catalog::list(&server.name, &server.config, server.scope.is_some(), &conn)
                    .await;
            (
                tools,
                crate::catalog::list_prompts(&server.name, &conn).await,
            )
        })
        .await;
        if let Ok((Ok((tools, skipped)), prompts)) = listed {
            let mut st = lock(&server.state);
            st.tools = Arc::new(tools);
            st.skipped = skipped;
            st.prompts = Arc::new(prompts);
            drop(st);
            self.bump();
        }
    }
}

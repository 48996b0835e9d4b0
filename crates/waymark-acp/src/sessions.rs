//! The Waymark sessions one ACP connection has open, and the prompt running in each.

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema as acp;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;
use waymark_protocol::SessionSummary;
use waymark_protocol::display::escape_line;
use waymark_protocol::{MessageSource, Op, PermissionMode, Position};
use waymark_runtime::{Runtime, SessionHandle, SessionSpec};

/// How `waymark acp` was started: the model and permission mode of the sessions it makes.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub model: Option<String>,
    pub permission: Option<PermissionMode>,
}

/// A session this connection opened.
pub(crate) struct Open {
    pub(crate) handle: SessionHandle,
    /// Its workspace, which relative paths are shown against.
    pub(crate) workspace: PathBuf,
    /// The prompt running in it, if one is: cancelled by `session/cancel`.
    running: Mutex<Option<CancellationToken>>,
    /// The plan review the user chose "Revise" on: the next prompt is its feedback.
    revising: Mutex<Option<String>>,
}

/// A prompt running in a session; the session takes another once this is dropped.
pub(crate) struct Running {
    open: Arc<Open>,
    pub(crate) cancel: CancellationToken,
}

impl Running {
    pub(crate) fn open(&self) -> &Open {
        &self.open
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        *lock(&self.open.running) = None;
    }
}

impl Open {
    fn new(handle: SessionHandle, workspace: PathBuf) -> Arc<Open> {
        Arc::new(Open {
            handle,
            workspace,
            running: Mutex::new(None),
            revising: Mutex::new(None),
        })
    }

    /// The next prompt is the feedback for the plan review `questionnaire_id`.
    pub(crate) fn revise_next(&self, questionnaire_id: String) {
        *lock(&self.revising) = Some(questionnaire_id);
    }

    /// The plan review this prompt is the feedback for, if the user chose "Revise" on one.
    pub(crate) fn take_revising(&self) -> Option<String> {
        lock(&self.revising).take()
    }

    /// Marks a prompt as running; refused while another one is. Called when the request
    /// arrives, before anything else is read: a `session/cancel` right behind it finds it.
    pub(crate) fn begin(self: &Arc<Self>) -> Result<Running, Error> {
        let mut running = lock(&self.running);
        if running.is_some() {
            return Err(Error::invalid_request().data(
                "a prompt is already running in this session; cancel it or wait for its answer",
            ));
        }
        let cancel = CancellationToken::new();
        *running = Some(cancel.clone());
        Ok(Running {
            open: self.clone(),
            cancel,
        })
    }
}

/// The most sessions one connection has open at once: a client that floods `session/new`
/// gets an error, not a process of idle actors.
pub(crate) const OPEN_MAX: usize = 64;

/// The most sessions one connection makes in all: one that makes and closes sessions in a
/// loop gets an error, not a database of empty sessions.
pub(crate) const MADE_MAX: usize = 1024;

pub(crate) struct Sessions {
    pub(crate) runtime: Arc<Runtime>,
    options: Options,
    open: Mutex<HashMap<String, Arc<Open>>>,
    /// How many sessions this connection has made.
    made: std::sync::atomic::AtomicUsize,
    /// Whether the client keeps up with what is written to it.
    pub(crate) flow: Arc<crate::outgoing::Flow>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sessions {
    pub(crate) fn new(
        runtime: Arc<Runtime>,
        options: Options,
        flow: Arc<crate::outgoing::Flow>,
    ) -> Sessions {
        Sessions {
            runtime,
            options,
            open: Mutex::new(HashMap::new()),
            made: std::sync::atomic::AtomicUsize::new(0),
            flow,
        }
    }

    /// The model the sessions it makes are given (`None`: the settings').
    pub(crate) fn model(&self) -> Option<&str> {
        self.options.model.as_deref()
    }

    /// Refused once this connection has [`OPEN_MAX`] sessions open.
    fn room_for_one_more(&self) -> Result<(), Error> {
        if lock(&self.open).len() >= OPEN_MAX {
            return Err(Error::invalid_request().data(format!(
                "one connection has at most {OPEN_MAX} sessions open; close one (session/close) first"
            )));
        }
        Ok(())
    }

    /// Makes a Waymark session in the folder `cwd`, the editor's MCP `servers` joining it
    /// (it alone). Returns it, and each server left out with why.
    pub(crate) fn create(
        &self,
        cwd: &Path,
        servers: &[acp::McpServer],
    ) -> Result<(String, Vec<(String, String)>), Error> {
        if !cwd.is_absolute() {
            return Err(Error::invalid_params().data(format!(
                "cwd must be an absolute path, not `{}`",
                cwd.display()
            )));
        }
        if !cwd.is_dir() {
            return Err(Error::invalid_params().data(format!(
                "cwd `{}` is not a folder on this machine",
                cwd.display()
            )));
        }
        self.room_for_one_more()?;
        if self.made.load(std::sync::atomic::Ordering::Relaxed) >= MADE_MAX {
            return Err(Error::invalid_request().data(format!(
                "one connection makes at most {MADE_MAX} sessions; open a new connection"
            )));
        }
        let handle = self
            .runtime
            .create_session(SessionSpec {
                workspace: Some(cwd.to_path_buf()),
                model: self.options.model.clone(),
                permission_mode: self.options.permission,
                hold: false,
            })
            .map_err(|e| Error::internal_error().data(e.to_string()))?;
        self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = handle.id().to_string();
        let left_out = self.join_servers(&id, servers);
        lock(&self.open).insert(
            id.clone(),
            Open::new(
                handle,
                cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf()),
            ),
        );
        Ok((id, left_out))
    }

    /// The editor's MCP `servers` join session `id` (it alone); each left out, with why.
    fn join_servers(&self, id: &str, servers: &[acp::McpServer]) -> Vec<(String, String)> {
        if servers.is_empty() {
            return Vec::new();
        }
        let mut wanted = std::collections::BTreeMap::new();
        let mut left_out = Vec::new();
        let mut secrets = Vec::new();
        for s in servers {
            match crate::servers::config_of(s) {
                Ok((name, config)) => {
                    secrets.extend(crate::servers::secrets_of(s));
                    wanted.insert(name, config);
                }
                Err(left) => left_out.push(left),
            }
        }
        // What the editor gives its servers as keys is redacted like the user's own, before
        // any of them starts.
        self.runtime.add_secrets(secrets);
        left_out.extend(self.runtime.mcp().add_session_servers(id, wanted));
        left_out
    }

    /// Stored session `id` as the lists show it.
    fn summary(&self, id: &str) -> Result<SessionSummary, Error> {
        self.runtime
            .list_sessions()
            .map_err(|e| Error::internal_error().data(e.to_string()))?
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| {
                acp::Error::session_not_found(acp::SessionId::from(id.to_string())).into()
            })
    }

    /// The mode session `id` is in (see [`crate::modes`]).
    pub(crate) fn mode_of(&self, id: &str) -> Result<&'static str, Error> {
        let s = self.summary(id)?;
        Ok(crate::modes::current(s.interaction_mode, s.permission_mode))
    }

    /// `session/load` and `session/resume`: stored session `id`, opened for this connection
    /// in the folder `cwd` it belongs to (another folder's session is refused). Returns its
    /// workspace. One open here already is used as it is.
    pub(crate) fn open_stored(
        &self,
        id: &acp::SessionId,
        cwd: &Path,
        servers: &[acp::McpServer],
    ) -> Result<PathBuf, Error> {
        if let Some(open) = lock(&self.open).get(&*id.0) {
            return Ok(open.workspace.clone());
        }
        self.room_for_one_more()?;
        let summary = self.summary(&id.0)?;
        let ws = PathBuf::from(&summary.workspace);
        let ws = ws.canonicalize().unwrap_or(ws);
        if cwd.canonicalize().ok().as_deref() != Some(ws.as_path()) {
            return Err(Error::invalid_params().data(format!(
                "session {} belongs to {}, not to {}",
                id.0,
                ws.display(),
                cwd.display()
            )));
        }
        // The session keeps its own model and modes.
        let handle = self
            .runtime
            .open_session(&id.0, SessionSpec::default())
            .map_err(|e| Error::invalid_request().data(e.to_string()))?;
        // The servers join before the session is open here, as in `create`: a close
        // always finds them.
        for (name, why) in self.join_servers(&id.0, servers) {
            tracing::warn!("acp: MCP server {name} left out of {}: {why}", id.0);
        }
        lock(&self.open).insert(id.0.to_string(), Open::new(handle, ws.clone()));
        Ok(ws)
    }

    /// `session/list`: the stored sessions, of folder `cwd` when it is given, newest first.
    pub(crate) fn list(&self, cwd: Option<&Path>) -> Result<Vec<acp::SessionInfo>, Error> {
        let want = cwd.map(|c| c.canonicalize().unwrap_or_else(|_| c.to_path_buf()));
        let mut all = self
            .runtime
            .list_sessions()
            .map_err(|e| Error::internal_error().data(e.to_string()))?;
        all.sort_by_key(|s| std::cmp::Reverse(s.updated_at));
        Ok(all
            .into_iter()
            .filter(|s| {
                let ws = PathBuf::from(&s.workspace);
                want.as_ref()
                    .is_none_or(|w| ws.canonicalize().unwrap_or(ws) == *w)
            })
            .map(|s| {
                let info = acp::SessionInfo::new(s.id, PathBuf::from(s.workspace));
                match s.title {
                    Some(t) => info.title(t),
                    None => info,
                }
            })
            .collect())
    }

    /// `session/close`: what the session runs stops and it closes here (everything stays
    /// stored).
    pub(crate) async fn close(&self, id: &acp::SessionId) -> Result<(), Error> {
        let open = lock(&self.open)
            .remove(&*id.0)
            .ok_or_else(|| Error::from(acp::Error::session_not_found(id.clone())))?;
        self.runtime.mcp().drop_session_servers(&id.0);
        if let Some(cancel) = lock(&open.running).as_ref() {
            cancel.cancel();
        }
        match Arc::try_unwrap(open) {
            Ok(o) => o
                .handle
                .shutdown()
                .await
                .map_err(|e| Error::internal_error().data(e.to_string())),
            // Its prompt is ending: the session closes with the prompt's last handle.
            Err(o) => {
                let _ = o.handle.submit(Op::Stop).await;
                Ok(())
            }
        }
    }

    /// `session/set_mode`: plan mode on, or off with a permission mode. Returns the mode the
    /// session is in after.
    pub(crate) async fn set_mode(
        &self,
        id: &acp::SessionId,
        mode: &str,
    ) -> Result<&'static str, Error> {
        let open = self.get(id)?;
        let Some(target) = crate::modes::parse(mode) else {
            return Err(
                Error::invalid_params().data(format!("`{mode}` is not one of Waymark's modes"))
            );
        };
        let internal = |e: waymark_runtime::Error| Error::internal_error().data(e.to_string());
        let in_plan = self.mode_of(open.handle.id())? == crate::modes::PLAN;
        let command = |text: &str| Op::Submit {
            text: text.to_string(),
            source: MessageSource::User,
            position: Position::Tail,
            idempotency_key: None,
            intent: None,
            images: Vec::new(),
        };
        match target {
            None if !in_plan => {
                open.handle
                    .submit(command("/plan on"))
                    .await
                    .map_err(internal)?;
            }
            None => {}
            Some(permission) => {
                if in_plan {
                    open.handle
                        .submit(command("/plan off"))
                        .await
                        .map_err(internal)?;
                }
                open.handle
                    .submit(Op::SetPermissionMode { mode: permission })
                    .await
                    .map_err(internal)?;
            }
        }
        self.mode_of(open.handle.id())
    }

    /// The slash commands of session `id`, as the editor offers them: Waymark's own, then the
    /// prompts of the MCP servers that serve it (`/mcp__server__prompt arg=…`).
    pub(crate) fn commands(&self, id: &str) -> Result<Vec<acp::AvailableCommand>, Error> {
        let open = self.get(&acp::SessionId::from(id.to_string()))?;
        let prompts = self.runtime.mcp().prompts_for(id).into_iter().map(|p| {
            let what = if p.description.trim().is_empty() {
                format!("The {} prompt of an MCP server", p.name)
            } else {
                p.description.clone()
            };
            let command = acp::AvailableCommand::new(p.command.clone(), escape_line(&what));
            let usage = p.usage();
            match usage.split_once(' ') {
                Some((_, hint)) => command.input(acp::AvailableCommandInput::Unstructured(
                    acp::UnstructuredCommandInput::new(escape_line(hint)),
                )),
                None => command,
            }
        });
        Ok(waymark_runtime::client::commands(&open.handle)
            .into_iter()
            .map(|c| {
                let command = acp::AvailableCommand::new(c.name, c.summary);
                // What follows the name in its usage, as the input's hint.
                match c.usage.split_once(' ') {
                    Some((_, hint)) if !hint.trim().is_empty() => {
                        command.input(acp::AvailableCommandInput::Unstructured(
                            acp::UnstructuredCommandInput::new(hint.trim()),
                        ))
                    }
                    _ => command,
                }
            })
            .chain(prompts)
            .collect())
    }

    /// The open session `id`.
    pub(crate) fn get(&self, id: &acp::SessionId) -> Result<Arc<Open>, Error> {
        lock(&self.open)
            .get(&*id.0)
            .cloned()
            .ok_or_else(|| acp::Error::session_not_found(id.clone()).into())
    }

    /// `session/cancel`: the prompt running in `id` stops. With none running, the session is
    /// stopped anyway: whatever it does now, nobody is watching it.
    pub(crate) async fn cancel(&self, id: &acp::SessionId) {
        let Some(open) = lock(&self.open).get(&*id.0).cloned() else {
            return;
        };
        let running = lock(&open.running).clone();
        match running {
            Some(cancel) => cancel.cancel(),
            None => {
                let _ = open.handle.submit(Op::Stop).await;
            }
        }
    }

    /// The client went away. The SDK has dropped the prompts' tasks by now, so each session
    /// closes: its running turn stops as Stop would, an active goal pauses until someone
    /// resumes it, and everything stays stored.
    pub(crate) async fn close_all(&self) {
        let open: Vec<Arc<Open>> = lock(&self.open).drain().map(|(_, o)| o).collect();
        for o in open {
            self.runtime.mcp().drop_session_servers(o.handle.id());
            match Arc::try_unwrap(o) {
                Ok(o) => {
                    if let Err(e) = o.handle.shutdown().await {
                        tracing::warn!("acp: a session did not close cleanly: {e}");
                    }
                }
                Err(o) => {
                    let _ = o.handle.submit(Op::Stop).await;
                    tracing::warn!(
                        "acp: a session was still in use when the client left; its turn was stopped"
                    );
                }
            }
        }
    }
}

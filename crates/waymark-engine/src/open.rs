//! Opening a session: taking its lease (recovering what a crashed process left), assembling
//! the session from the extensions (their tools, commands, guards, reminders, permission
//! rules and services) and starting its actor. The runtime decides what goes in ([`Attach`]).

use crate::clock::{Clock, IdSource};
use crate::commands::CommandRegistry;
use crate::error::{Error, Result};
use crate::extension::services::Services;
use crate::extension::{Extension, GuardStage};
use crate::guard::ToolGuard;
use crate::paths;
use crate::permission::PermissionGuard;
use crate::provider::ModelProvider;
use crate::session::{self, FoundTool, SessionCore, SessionHandle};
use crate::store::{self, Store, Tx};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::broadcast;
use waymark_config::Config;
use waymark_protocol::{EventKind, PermissionMode, TurnEndReason};

/// Builds a session's sandbox from its canonical workspace, session folder and artifacts.
pub type SandboxFor<'a> = dyn Fn(&Path, &Path, &Path) -> Arc<crate::sandbox::Sandbox> + 'a;

/// Everything a session is opened with.
pub struct Attach<'a> {
    pub store: Arc<Store>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdSource>,
    pub config: Config,
    pub data_dir: &'a Path,
    /// The model spec and the provider made from it.
    pub model: String,
    pub provider: Arc<dyn ModelProvider>,
    /// Makes the provider of another model spec, for `Op::SetModel`.
    pub resolve: crate::Resolve,
    /// The extensions plugged into the session, in hook order.
    pub extensions: Vec<Arc<dyn Extension>>,
    pub sandbox: &'a SandboxFor<'a>,
    pub process_env: Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// A lease whose holder is gone or whose heartbeat is older than this is taken over.
    pub lease_stale: Duration,
    pub heartbeat: Duration,
    /// Whether a process is alive (the lease holder's).
    pub pid_alive: &'a (dyn Fn(i64) -> bool + Sync),
    /// Reopened rather than created.
    pub resumed: bool,
    /// Start no work until an `Op::Resume` arrives.
    pub hold: bool,
    /// Applied with the lease taken, in the same transaction.
    pub set_model: Option<String>,
    pub set_permission_mode: Option<PermissionMode>,
}

/// A session this process has open, for settings that change while it runs.
#[derive(Clone)]
pub struct LiveSession(Weak<SessionCore>);

impl LiveSession {
    /// Puts new settings in force for the session (from its next check on); false when the
    /// session has shut down.
    pub fn configure(&self, config: &Config) -> bool {
        match self.0.upgrade() {
            Some(core) => {
                core.set_config(config.clone());
                true
            }
            None => false,
        }
    }

    pub fn is_open(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// Opens session `id`: lease, recovery, `session.started`, and its actor.
pub fn attach(id: &str, a: Attach<'_>) -> Result<(SessionHandle, LiveSession)> {
    let owner = a.ids.new_id("lease");
    let pid = i64::from(std::process::id());
    let stale = a.lease_stale.as_millis() as i64;
    let sd = paths::session_dir(a.data_dir, id);
    let artifacts = paths::artifacts_dir(&sd);
    let ((row, instructions), startup) = a.store.write(a.clock.now_ms(), |tx| {
        let crashed = tx
            .acquire_lease(id, &owner, pid, stale, a.pid_alive)?
            .is_some();
        if let Some(m) = &a.set_model {
            tx.set_model(id, m)?;
        }
        if let Some(m) = a.set_permission_mode {
            tx.set_permission_mode(id, m)?;
        }
        recover(tx, &a.extensions, id, crashed)?;
        let row = store::sessions::get(tx.conn(), id)?
            .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
        let instructions = store::sessions::instructions(tx.conn(), id)?
            .map(|i| i.text)
            .unwrap_or_default();
        tx.emit(
            id,
            EventKind::SessionStarted {
                workspace: row.workspace.clone(),
                session_dir: sd.display().to_string(),
                model: a.model.clone(),
                permission_mode: row.permission_mode,
                interaction_mode: row.interaction_mode,
                resumed: a.resumed,
                context_window: a
                    .config
                    .turn
                    .context_tokens
                    .unwrap_or_else(|| a.provider.context_tokens()),
            },
        )?;
        Ok::<_, Error>((row, instructions))
    })?;
    let last_seq = startup.last().map(|e| e.seq).unwrap_or(0);
    // Front ends read promptly; a slow one is told how many events it skipped.
    let (events, _) = broadcast::channel(1024);
    let compact_requested = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let parts = Parts::of(&a.extensions, compact_requested.clone())?;
    let workspace = PathBuf::from(&row.workspace);
    let workspace = workspace.canonicalize().unwrap_or(workspace);
    let session_dir = sd.canonicalize().unwrap_or(sd);
    let artifacts = artifacts.canonicalize().unwrap_or(artifacts);
    let sandbox = (a.sandbox)(&workspace, &session_dir, &artifacts);
    let core = Arc::new(SessionCore {
        id: id.to_string(),
        lease: session::parts::Lease {
            owner: owner.clone(),
            lost: Default::default(),
        },
        journal: session::parts::Journal {
            store: a.store,
            clock: a.clock,
            ids: a.ids,
            events,
            last_seq: AtomicU64::new(last_seq),
        },
        config: SessionCore::new_config(a.config),
        model: session::parts::ModelRoute {
            current: std::sync::RwLock::new(crate::provider::Route {
                spec: a.model.clone(),
                provider: a.provider,
            }),
            resolve: a.resolve,
        },
        toolbox: session::parts::Toolbox {
            fixed: parts.fixed,
            sources: parts.sources,
            offered: Default::default(),
        },
        policy: session::parts::Policy {
            policies: parts.policies,
            guards: parts.guards,
            rules: parts.rules,
        },
        reminders: parts.reminders,
        commands: parts.commands,
        places: session::parts::Places {
            workspace,
            session_dir,
            artifacts,
        },
        history: Default::default(),
        sandbox,
        process_env: a.process_env,
        extensions: session::parts::Plugged {
            all: a.extensions,
            slots: Default::default(),
            services: Arc::new(parts.services),
        },
        instructions,
        compact_requested,
        poked: Default::default(),
    });
    let live = LiveSession(Arc::downgrade(&core));
    Ok((
        session::spawn(core, owner, a.heartbeat, startup, a.hold),
        live,
    ))
}

/// What the extensions contribute to a session.
struct Parts {
    fixed: session::FixedTools,
    sources: Vec<Arc<dyn crate::extension::source::ToolSource>>,
    commands: CommandRegistry,
    guards: Vec<Arc<dyn ToolGuard>>,
    reminders: Vec<Arc<dyn crate::context::ReminderSource>>,
    rules: Vec<Arc<dyn crate::extension::rules::PermissionRule>>,
    policies: Vec<Arc<dyn crate::extension::policy::CallPolicy>>,
    services: Services,
}

impl Parts {
    fn of(
        extensions: &[Arc<dyn Extension>],
        compact_requested: Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<Parts> {
        let mut fixed = session::FixedTools::standard();
        let mut commands = CommandRegistry::with_builtin(compact_requested);
        let mut before: Vec<Arc<dyn ToolGuard>> = Vec::new();
        let mut after: Vec<Arc<dyn ToolGuard>> = Vec::new();
        let mut reminders = Vec::new();
        let mut rules = Vec::new();
        let mut policies = Vec::new();
        let mut services = Services::default();
        let mut sources = Vec::new();
        for ext in extensions {
            // No extension replaces a tool or command another one (or the engine) has: a
            // second `bash` or `/goal` would silently change what the user approved.
            let offered = ext.session_tools().into_iter().map(FoundTool::Session);
            for t in offered.chain(ext.tools().into_iter().map(FoundTool::Free)) {
                if fixed.get(t.name()).is_some() {
                    return Err(Error::refused(format!(
                        "extension `{}` offers a tool named `{}`, which the session already has",
                        ext.name(),
                        t.name()
                    )));
                }
                fixed.add(t);
            }
            sources.extend(ext.tool_sources());
            for c in ext.commands() {
                let name = c.spec().name;
                if commands.specs().iter().any(|s| s.name == name) {
                    return Err(Error::refused(format!(
                        "extension `{}` offers a command named `/{name}`, which the session already has",
                        ext.name()
                    )));
                }
                commands.register(c);
            }
            for (stage, g) in ext.guards() {
                match stage {
                    GuardStage::BeforePermission => before.push(g),
                    GuardStage::AfterPermission => after.push(g),
                }
            }
            reminders.extend(ext.reminders());
            rules.extend(ext.permission_rules());
            policies.extend(ext.call_policies());
            ext.provide(&mut services);
        }
        let mut guards = before;
        guards.push(Arc::new(PermissionGuard::new(rules.clone())));
        guards.extend(after);
        Ok(Parts {
            fixed,
            sources,
            commands,
            guards,
            reminders,
            rules,
            policies,
            services,
        })
    }
}

/// After a crash: a turn left `running` is closed as `aborted` (its message is done, calls
/// without results get one saying the process stopped). Parked turns keep waiting.
fn recover(
    tx: &mut Tx<'_>,
    extensions: &[Arc<dyn Extension>],
    id: &str,
    crashed: bool,
) -> Result<()> {
    crate::hooks::Hooks(extensions).on_open(tx, id, crashed)?;
    // Calls whose process stopped before they were charged: each is charged, at the most it
    // could cost (what was held for it), to its turn, before the turn closes (so a goal
    // counts it).
    let lost = tx.settle_holds(id)?;
    if !lost.is_empty() {
        tracing::warn!(
            "{} model call(s) cut off by a stopped process charged at their most",
            lost.len()
        );
    }
    // A turn closed already (the call was its reviewer's) is not closed again, so what it
    // was charged reaches its extensions (the goal's cost) here.
    for (turn, micros) in lost {
        let Some(t) = turn else { continue };
        let closed = store::turns::get(tx.conn(), t)?
            .is_some_and(|r| r.status != store::TurnStatus::Running);
        if closed {
            let spend = waymark_protocol::cost::Spend {
                micros,
                unpriced_calls: 0,
            };
            crate::hooks::Hooks(extensions).on_late_charge(tx, t, spend)?;
        }
    }
    for t in store::turns::with_status(tx.conn(), id, store::TurnStatus::Running)? {
        crate::turn::close_turn(
            tx,
            crate::hooks::Hooks(extensions),
            id,
            crate::turn::TurnEnd {
                turn_id: t.id,
                reason: TurnEndReason::Aborted,
                error: None,
                why: "interrupted: the process driving the session stopped before this call finished",
                recovered: true,
            },
        )?;
    }
    Ok(())
}

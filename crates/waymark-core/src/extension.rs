//! Extensions: the one way features plug into a session. Plan mode and thread goals are
//! extensions ([`builtin`]); the session core (`session.rs`, `turn/`, `runtime.rs`) knows
//! only this trait and calls its hooks at fixed points of a session's life:
//!
//! | Hook | When |
//! | --- | --- |
//! | [`Extension::on_open`] | the session is opened (in the lease-taking transaction) |
//! | [`Extension::on_intent`], [`Extension::on_admit`] | a message is admitted (same transaction) |
//! | [`Extension::handle_op`] | an op the core does not handle itself arrives |
//! | [`Extension::recheck`] | a queued message is about to run |
//! | [`Extension::on_turn_start`] | a turn starts (same transaction) |
//! | [`Extension::offers_tools`], [`Extension::may_call_model`] | before each model call |
//! | [`Extension::before_tool`], [`Extension::after_tool`] | around each tool call (besides guards) |
//! | [`Extension::on_turn_closed`] | a turn is closed (same transaction) |
//! | [`Extension::settle`] | after a finished turn, outside any transaction |
//! | [`Extension::on_turn_lost`] | a turn was closed from outside (Stop overran, panic) |
//! | [`Extension::on_answer`] | a questionnaire of a kind it [`answers`](Extension::answers) is answered |
//! | [`Extension::next_work`] | the session would go idle |
//! | [`Extension::on_close`] | the session is shut down |
//! | [`Extension::changed`] | after a command, an answer or a dropped message (push views) |
//!
//! Contributions: tools, guards, reminders, slash commands, system-prompt text and schema
//! migrations for the extension's own tables. Hooks get a [`SessionApi`], a narrow handle on
//! the session, never the session core itself; per-session state lives in typed slots
//! ([`SessionApi::state`]).

use crate::clock::Clock;
use crate::commands::SlashCommand;
use crate::context::ReminderSource;
use crate::error::Result;
use crate::guard::ToolGuard;
use crate::provider::ModelProvider;
use crate::session::SessionCore;
use crate::store::{
    HistoryItem, MessageRow, QuestionnaireRow, SessionRow, ToolCallRecord, TurnRow, Tx,
};
use crate::tools::{Tool, ToolRegistry};
use futures_util::future::BoxFuture;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use waymark_protocol::config::Config;
use waymark_protocol::{
    Answer, CallActor, EventKind, Intent, MessageSource, Op, Position, QuestionnaireKind,
    ToolStatus,
};

/// Where a guard sits in the chain relative to the permission guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardStage {
    /// Runs first (the plan-mode guard: a refusal there must not ask for permission).
    BeforePermission,
    /// Runs after the permission guard (the goal budget guard).
    AfterPermission,
}

/// What to do with a queued message about to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dequeue {
    Run,
    /// Drop it, saying why (logged as `message.dropped`).
    Drop(String),
}

/// Why a turn was closed from outside its own task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnLost {
    /// The user pressed Stop and the turn did not wind down in time.
    Stopped,
    /// The turn's task panicked.
    Failed,
}

/// A tool call about to go through the guard chain.
pub struct CallInfo<'a> {
    pub actor: CallActor,
    pub turn_id: i64,
    pub session: &'a SessionRow,
    pub call: &'a ToolCallRecord,
}

/// What hooks may set before a call is decided. Hooks can only narrow it: confine the
/// shell further or shorten the time; no hook can lift what another one (or the core) set.
#[derive(Debug, Clone, Default)]
pub struct CallPrep {
    writable: Option<Vec<PathBuf>>,
    time_left: Option<Duration>,
}

impl CallPrep {
    /// Run shell commands in the read-only sandbox, with at most `files` writable (only
    /// files every confinement allows stay writable).
    pub fn confine(&mut self, files: Vec<PathBuf>) {
        self.writable = Some(match self.writable.take() {
            None => files,
            Some(before) => before.into_iter().filter(|f| files.contains(f)).collect(),
        });
    }

    /// An allowed call takes at most `left` (plus the core's grace).
    pub fn cap(&mut self, left: Duration) {
        self.time_left = Some(self.time_left.map_or(left, |t| t.min(left)));
    }

    /// The sandbox's writable files, when the shell is confined.
    pub fn writable(&self) -> Option<&[PathBuf]> {
        self.writable.as_deref()
    }

    pub fn time_left(&self) -> Option<Duration> {
        self.time_left
    }
}

/// A feature plugged into every session. Every hook has a default that does nothing.
pub trait Extension: Send + Sync {
    /// A short unique name (`plan`, `goal`); also the key of its schema version.
    fn name(&self) -> &'static str;

    /// SQL migrations creating and changing the extension's own tables, in order; applied
    /// once each when the runtime opens the database.
    fn migrations(&self) -> &'static [&'static str] {
        &[]
    }

    /// Tools that need nothing but their call (the session-free kind).
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }
    /// Tools that work on the session ([`SessionTool`]).
    fn session_tools(&self) -> Vec<Arc<dyn SessionTool>> {
        Vec::new()
    }
    fn guards(&self) -> Vec<(GuardStage, Arc<dyn ToolGuard>)> {
        Vec::new()
    }
    fn reminders(&self) -> Vec<Arc<dyn ReminderSource>> {
        Vec::new()
    }
    fn commands(&self) -> Vec<Arc<dyn SlashCommand>> {
        Vec::new()
    }
    /// Text added to the system prompt of the session's model calls.
    fn system_prompt(&self, _api: &SessionApi, _session: &SessionRow) -> Option<String> {
        None
    }
    /// The questionnaire kinds whose answers [`Extension::on_answer`] receives.
    fn answers(&self) -> &'static [QuestionnaireKind] {
        &[]
    }

    /// The session is being opened, in the transaction that takes its lease; `crashed`
    /// when the previous process died holding it.
    fn on_open(&self, _tx: &mut Tx<'_>, _session_id: &str, _crashed: bool) -> Result<()> {
        Ok(())
    }
    /// A message arrives with an intent: apply it (before the message is queued, in the
    /// same transaction). Returns whether this extension handled it.
    fn on_intent(&self, _tx: &mut Tx<'_>, _api: &SessionApi, _intent: Intent) -> Result<bool> {
        Ok(false)
    }
    /// A message was queued (`created`: not a repeat of an idempotency key), in the
    /// admission transaction. Called last, so files touched here follow a committed state.
    fn on_admit(
        &self,
        _tx: &mut Tx<'_>,
        _api: &SessionApi,
        _message: &MessageRow,
        _intent: Option<Intent>,
        _created: bool,
    ) -> Result<()> {
        Ok(())
    }
    /// An op the core does not handle itself; `None` when it is not this extension's, else
    /// the result with an optional text for the user.
    fn handle_op(&self, _api: &SessionApi, _op: &Op) -> Option<Result<Option<String>>> {
        None
    }
    /// The last check before a queued message runs; the first `Drop` wins.
    fn recheck(&self, _api: &SessionApi, _message: &MessageRow) -> Result<Dequeue> {
        Ok(Dequeue::Run)
    }
    /// A turn starts, in its first transaction.
    fn on_turn_start(
        &self,
        _tx: &mut Tx<'_>,
        _api: &SessionApi,
        _turn_id: i64,
        _message: &MessageRow,
    ) -> Result<()> {
        Ok(())
    }
    /// Whether the turn's model calls get the tools (all must agree).
    fn offers_tools(&self, _api: &SessionApi, _turn_id: i64) -> Result<bool> {
        Ok(true)
    }
    /// Whether the turn may make another model call after `steps` calls (all must agree;
    /// a refusal completes the turn).
    fn may_call_model(&self, _api: &SessionApi, _turn_id: i64, _steps: u32) -> Result<bool> {
        Ok(true)
    }
    /// Before the guard chain decides a call: set the sandbox or the time it may take.
    fn before_tool(
        &self,
        _api: &SessionApi,
        _call: &CallInfo<'_>,
        _prep: &mut CallPrep,
    ) -> Result<()> {
        Ok(())
    }
    /// After a call of the session's agent has its result recorded.
    fn after_tool(
        &self,
        _api: &SessionApi,
        _turn_id: i64,
        _call: &ToolCallRecord,
        _status: ToolStatus,
    ) -> Result<()> {
        Ok(())
    }
    /// A turn is being closed, in the closing transaction (`recovered`: found interrupted
    /// after a crash).
    fn on_turn_closed(&self, _tx: &mut Tx<'_>, _turn: &TurnRow, _recovered: bool) -> Result<()> {
        Ok(())
    }
    /// After a turn finished, outside any transaction (goal settlement). Stop cancels
    /// `cancel`.
    fn settle<'a>(
        &'a self,
        _api: &'a SessionApi,
        _turn_id: i64,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }
    /// A turn was closed from outside its task, in the closing transaction.
    fn on_turn_lost(&self, _tx: &mut Tx<'_>, _session_id: &str, _why: TurnLost) -> Result<()> {
        Ok(())
    }
    /// A questionnaire of a kind in [`Extension::answers`] was answered, in the answer's
    /// transaction.
    fn on_answer(
        &self,
        _tx: &mut Tx<'_>,
        _api: &SessionApi,
        _questionnaire: &QuestionnaireRow,
        _answer: &Answer,
    ) -> Result<()> {
        Ok(())
    }
    /// The session has nothing queued and would go idle: queue work (returns whether it did).
    fn next_work(&self, _api: &SessionApi) -> Result<bool> {
        Ok(false)
    }
    /// The session went idle: when (the session clock's Unix ms) `next_work` should be asked
    /// again although nothing else happens (a goal waiting for a usage limit to reset).
    fn wake_at(&self, _api: &SessionApi) -> Result<Option<i64>> {
        Ok(None)
    }
    /// The session is shut down, in the transaction that releases the lease (`waiting`: a
    /// questionnaire is pending).
    fn on_close(&self, _tx: &mut Tx<'_>, _session_id: &str, _waiting: bool) -> Result<()> {
        Ok(())
    }
    /// Something may have changed this extension's view (after commit): push it to front
    /// ends as a transient event if it has one.
    fn changed(&self, _api: &SessionApi) {}
}

/// Plan mode and thread goals, in the order their guards and hooks run.
pub(crate) fn builtin() -> Vec<Arc<dyn Extension>> {
    vec![
        Arc::new(crate::plan::PlanExtension),
        Arc::new(crate::goal::GoalExtension),
    ]
}

/// Typed per-session state of extensions, one value per type.
#[derive(Default)]
pub(crate) struct Slots(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Slots {
    fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let slot = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()));
        match slot.clone().downcast::<T>() {
            Ok(v) => v,
            // The map is keyed by the type, so this is a bug in the slots themselves: a fresh
            // default would silently lose the extension's state, so it stops here instead.
            Err(_) => panic!(
                "the state slot of {} holds a value of another type",
                std::any::type_name::<T>()
            ),
        }
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    #[test]
    fn a_slot_keeps_its_state_and_a_wrong_type_is_never_a_fresh_default() {
        let slots = Slots::default();
        *slots.get::<Mutex<u32>>().lock().unwrap() = 7;
        assert_eq!(*slots.get::<Mutex<u32>>().lock().unwrap(), 7);
        // A value of another type under the key (what the slots never do themselves).
        slots
            .0
            .lock()
            .unwrap()
            .insert(TypeId::of::<Mutex<u64>>(), Arc::new(String::from("wrong")));
        let got = std::panic::catch_unwind(|| slots.get::<Mutex<u64>>());
        assert!(got.is_err(), "a wrong-typed slot gave a fresh default");
    }
}

/// The session as extensions see it: its identity, settings, paths, the store (through
/// lease-fenced transactions), its event stream and typed state slots.
#[derive(Clone)]
pub struct SessionApi {
    core: Arc<SessionCore>,
}

impl SessionApi {
    pub(crate) fn new(core: Arc<SessionCore>) -> SessionApi {
        SessionApi { core }
    }

    /// The session core, for the core's own modules (never used by extensions).
    pub(crate) fn core(&self) -> &Arc<SessionCore> {
        &self.core
    }

    pub fn id(&self) -> &str {
        &self.core.id
    }
    /// The settings in force now.
    pub fn config(&self) -> Arc<Config> {
        self.core.config()
    }
    pub fn now_ms(&self) -> i64 {
        self.core.clock.now_ms()
    }
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.core.clock
    }
    /// A fresh id with `prefix`.
    pub fn new_id(&self, prefix: &str) -> String {
        self.core.ids.new_id(prefix)
    }
    pub fn workspace(&self) -> &Path {
        &self.core.workspace
    }
    pub fn session_dir(&self) -> &Path {
        &self.core.session_dir
    }
    pub fn artifacts(&self) -> &Path {
        &self.core.artifacts
    }
    /// One lease-fenced transaction; its events are broadcast after commit.
    pub fn write<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.core.write(f)
    }
    pub fn read<T>(&self, f: impl FnOnce(&rusqlite::Connection) -> Result<T>) -> Result<T> {
        self.core.read(f)
    }
    /// Streams an event that is not logged.
    pub fn transient(&self, kind: EventKind) {
        self.core.transient(kind)
    }
    /// Runs `f` on the whole conversation.
    pub fn with_history<T>(&self, f: impl FnOnce(&[(Option<i64>, HistoryItem)]) -> T) -> Result<T> {
        self.core.with_history(f)
    }
    pub fn provider(&self) -> &Arc<dyn ModelProvider> {
        &self.core.provider
    }
    /// Every tool the session has.
    pub fn tools(&self) -> &ToolRegistry {
        &self.core.tools
    }
    /// The session's shell sandbox.
    pub fn sandbox(&self) -> &Arc<crate::sandbox::Sandbox> {
        &self.core.sandbox
    }
    /// The environments tool processes start with.
    pub fn tool_env(&self) -> Arc<crate::secrets::ToolEnv> {
        self.core.tool_env()
    }
    /// Queues a message at the tail in `tx` (logged as `message.admitted`); a `key` already
    /// used in the session returns the existing message and queues nothing. Returns the
    /// message id.
    pub fn enqueue(
        &self,
        tx: &mut Tx<'_>,
        source: MessageSource,
        text: &str,
        key: Option<&str>,
    ) -> Result<i64> {
        crate::session::admit_message(tx, self.id(), source, text, Position::Tail, key)
            .map(|(m, _)| m.id)
    }

    /// The session's value of type `T` (created with `T::default()` on first use).
    pub fn state<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.core.slots.get::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::CallPrep;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    /// Hooks only narrow: a later extension cannot lift plan mode's confinement (or the
    /// verifier's) or a goal's time cap.
    #[test]
    fn call_prep_only_narrows() {
        let plan = PathBuf::from("/s/artifacts/plan.md");
        let mut p = CallPrep::default();
        assert_eq!(p.writable(), None);
        p.confine(vec![plan.clone()]);
        // Another extension asks for more: it gets no more than both allow.
        p.confine(vec![plan.clone(), PathBuf::from("/ws/src/main.rs")]);
        assert_eq!(p.writable(), Some(&[plan.clone()][..]));
        p.confine(vec![PathBuf::from("/ws/other")]);
        assert_eq!(p.writable(), Some(&[][..]));
        p.cap(Duration::from_secs(10));
        p.cap(Duration::from_secs(3600));
        assert_eq!(p.time_left(), Some(Duration::from_secs(10)));
        // The verifier starts with nothing writable, and nothing widens it.
        let mut v = CallPrep::default();
        v.confine(Vec::new());
        v.confine(vec![plan]);
        assert_eq!(v.writable(), Some(&[][..]));
    }

    /// The lines of every `.rs` file under `dir` (relative to `src/`), comments left out.
    fn code_lines(rel: &str) -> Vec<(String, usize, String)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let path = root.join(rel);
        let mut files = Vec::new();
        if path.is_dir() {
            for e in std::fs::read_dir(&path).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        } else {
            files.push(path);
        }
        let mut out = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                out.push((f.display().to_string(), i + 1, code.to_string()));
            }
        }
        out
    }

    /// The session core reaches features only through the `Extension` hooks: it names
    /// nothing of plan mode or goals (their modules, types or tool names).
    #[test]
    fn the_session_core_names_no_extension() {
        const CORE: &[&str] = &["session.rs", "session", "turn", "runtime.rs"];
        const NAMES: &[&str] = &[
            "plan::",
            "goal::",
            "PlanExtension",
            "GoalExtension",
            "EnterPlanMode",
            "ExitPlanMode",
            "create_goal",
            "update_goal",
        ];
        let hits: Vec<String> = CORE
            .iter()
            .flat_map(|c| code_lines(c))
            .filter(|(_, _, code)| NAMES.iter().any(|n| code.contains(n)))
            .map(|(f, n, code)| format!("{f}:{n}: {}", code.trim()))
            .collect();
        assert!(
            hits.is_empty(),
            "the core names an extension:\n{}",
            hits.join("\n")
        );
    }

    /// Extensions get the narrow handle, never the session core.
    #[test]
    fn extensions_never_touch_the_session_core() {
        let hits: Vec<String> = ["plan", "goal"]
            .iter()
            .flat_map(|c| code_lines(c))
            .filter(|(_, _, code)| code.contains("SessionCore") || code.contains(".core()"))
            .map(|(f, n, code)| format!("{f}:{n}: {}", code.trim()))
            .collect();
        assert!(
            hits.is_empty(),
            "an extension reaches the core:\n{}",
            hits.join("\n")
        );
    }
}

/// A tool an extension offers: offered and guarded like any tool, but it works on the
/// session (plan mode's, goals'), so the runtime runs it with the session's handle. The
/// tools below the extension API never see a session.
pub trait SessionTool: Tool {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a crate::tools::ToolContext,
        args: serde_json::Value,
    ) -> BoxFuture<'a, std::result::Result<crate::tools::ToolOutput, crate::tools::ToolError>>;

    /// The same tool, as the registry keeps it.
    fn as_tool(self: Arc<Self>) -> Arc<dyn Tool>;
}

/// A runtime error as a tool result: refusals go to the model, the rest ends the turn.
pub fn tool_error(e: crate::error::Error) -> crate::tools::ToolError {
    match e {
        crate::error::Error::Refused(m) | crate::error::Error::FeatureOff { message: m, .. } => {
            crate::tools::ToolError::Model(m)
        }
        other => crate::tools::ToolError::Fatal(other.to_string()),
    }
}

/// A database file with the built-in extensions' tables too (benchmarks and tests that work
/// below the runtime).
pub fn store_with_builtin(path: &std::path::Path) -> Result<crate::store::Store> {
    let store = crate::store::Store::open(path)?;
    for ext in builtin() {
        store.migrate_extension(ext.name(), ext.migrations())?;
    }
    Ok(store)
}

/// An in-memory database with the built-in extensions' tables (unit tests).
#[cfg(test)]
pub(crate) fn test_store() -> Result<crate::store::Store> {
    let store = crate::store::Store::open_in_memory()?;
    for ext in builtin() {
        store.migrate_extension(ext.name(), ext.migrations())?;
    }
    Ok(store)
}

/// A new session in a test store, each with its own id.
#[cfg(test)]
pub(crate) fn test_session(store: &crate::store::Store) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let id = format!("s{}", N.fetch_add(1, Ordering::Relaxed));
    store
        .write(10, |tx| {
            tx.create_session(&id, "/ws", None, waymark_protocol::PermissionMode::Ask)
        })
        .unwrap();
    id
}

#[cfg(test)]
mod store_tests {
    use crate::store::Store;
    use rusqlite::Connection;

    /// A database from before extensions owned their tables (core versions 1–4 with the
    /// plan and goal tables): it opens, keeps its rows, and no table is created twice.
    #[test]
    fn a_database_from_before_extension_migrations_keeps_its_plans_and_goals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                .unwrap();
            for (v, sql) in [
                include_str!("../../waymark-store/migrations/0001_init.sql"),
                include_str!("../migrations/plan/0001_plans.sql"),
                include_str!("../migrations/goal/0001_goals.sql"),
                include_str!("../../waymark-store/migrations/0004_grants.sql"),
            ]
            .iter()
            .enumerate()
            {
                conn.execute_batch(sql).unwrap();
                conn.execute("INSERT INTO schema_version VALUES (?1)", [v as i64 + 1])
                    .unwrap();
            }
            conn.execute_batch(
                "INSERT INTO workspaces (id, path, created_at) VALUES (1, '/w', 0);
                 INSERT INTO sessions (id, workspace_id, created_at, updated_at) VALUES ('s', 1, 0, 0);
                 INSERT INTO goals (id, session_id, objective, status, reason, actor, created_at, updated_at)
                     VALUES ('g', 's', 'keep me', 'active', 'created', 'user', 0, 0);",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        for ext in super::builtin() {
            store
                .migrate_extension(ext.name(), ext.migrations())
                .unwrap();
        }
        let (objective, versions): (String, i64) = store
            .read(|c| {
                Ok::<_, crate::store::StoreError>((
                    c.query_row("SELECT objective FROM goals WHERE id = 'g'", [], |r| {
                        r.get(0)
                    })?,
                    c.query_row("SELECT SUM(version) FROM extension_schema", [], |r| {
                        r.get(0)
                    })?,
                ))
            })
            .unwrap();
        // Plan at version 2 (comments), goal at 4 (question, usage limit and steps on top).
        assert_eq!((objective.as_str(), versions), ("keep me", 6));
    }
}

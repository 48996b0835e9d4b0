//! Extensions: the one way features plug into a session. Plan mode and thread goals are
//! extensions (`waymark-plan`, `waymark-goal`); the engine knows only this trait and calls
//! its hooks at fixed points of a session's life:
//!
//! | Hook | When |
//! | --- | --- |
//! | [`Extension::on_open`] | the session is opened (in the lease-taking transaction) |
//! | [`Extension::after_open`] | the session is open, before it takes its first op (no transaction) |
//! | [`Extension::check_prompt`] | a user's message is submitted, before admission (no transaction) |
//! | [`Extension::on_intent`], [`Extension::on_admit`] | a message is admitted (same transaction) |
//! | [`Extension::handle_op`] | an op the core does not handle itself arrives |
//! | [`Extension::recheck`] | a queued message is about to run |
//! | [`Extension::on_turn_start`] | a turn starts (same transaction) |
//! | [`Extension::before_turn`] | a new turn starts, before its first model call (no transaction) |
//! | [`Extension::offers_tools`], [`Extension::may_call_model`] | before each model call |
//! | [`Extension::before_tool`], [`Extension::after_tool`] | around each tool call (besides guards) |
//! | [`Extension::before_run`] | a call the guards allowed is about to run |
//! | [`Extension::review_result`] | a call ran, before its result is recorded (no transaction) |
//! | [`Extension::before_compaction`] | the older history is about to be summarized (no transaction) |
//! | [`Extension::on_turn_closed`] | a turn is closed (same transaction) |
//! | [`Extension::settle`] | after a finished turn, outside any transaction |
//! | [`Extension::on_turn_lost`] | a turn was closed from outside (Stop overran, panic) |
//! | [`Extension::on_answer`] | a questionnaire of a kind it [`answers`](Extension::answers) is answered |
//! | [`Extension::rewind`], [`Extension::on_rewound`] | `Op::Rewind`: the checkpoint keeper restores, then everyone hears of it |
//! | [`Extension::next_work`] | the session would go idle |
//! | [`Extension::on_close`] | the session is shut down |
//! | [`Extension::changed`] | after a command, an answer or a dropped message (push views) |
//!
//! Contributions: tools (fixed ones, and [`source::ToolSource`]s whose set changes), guards, permission rules, reminders, slash commands, services for
//! other extensions, system-prompt text and schema migrations for the extension's own
//! tables. Hooks get a [`SessionApi`], a narrow handle on the session over the engine's
//! [`SessionHost`] trait, never the engine itself; per-session state lives in typed slots
//! ([`SessionApi::state`]).
//!
//! This crate sits below the engine: extensions (plan mode, goals, and every later feature)
//! depend on it and never on the engine, the runtime or each other.

pub mod agent;
pub mod api;
pub mod clock;
pub mod commands;
pub mod error;
pub mod guard;
mod objective;
pub mod paths;
pub mod policy;
pub mod reminder;
pub mod rewind;
pub mod rules;
pub mod services;
mod session_tool;
pub mod source;

pub use api::{Gate, SessionApi, SessionHost, Slots};
pub use error::{Error, Result};
pub use session_tool::{SessionTool, tool_error};
pub use waymark_config::secrets;
pub use waymark_protocol::display;
pub use waymark_provider as provider;
pub use waymark_sandbox as sandbox;
pub use waymark_store as store;
pub use waymark_tools as tools;

use crate::commands::SlashCommand;
use crate::guard::ToolGuard;
use crate::reminder::ReminderSource;
use crate::rules::PermissionRule;
use crate::services::Services;
use futures_util::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use waymark_protocol::{Answer, CallActor, Intent, Op, QuestionnaireKind, ToolStatus};
use waymark_store::{MessageRow, QuestionnaireRow, SessionRow, ToolCallRecord, TurnRow, Tx};
use waymark_tools::FreeTool;

/// A call's result as [`Extension::review_result`] sees it, before it is recorded.
pub struct ResultSeen<'a> {
    pub status: ToolStatus,
    /// What the model will read (redacted, cut to the output limit).
    pub content: &'a str,
    pub actor: CallActor,
}

/// What [`Extension::check_prompt`] says of a user's message.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptCheck {
    /// Admit it as it is.
    Pass,
    /// Refuse it, with why (the submitter is told; nothing is admitted).
    Refuse(String),
    /// Admit it with this context for the model, after the user's words.
    AddContext(String),
}

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
    network: Option<waymark_config::ShellNetwork>,
    time_left: Option<Duration>,
    scratch: Option<String>,
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

    /// A confined shell may use the network as far as `network` lets it (and every other
    /// hook lets it too); a confined shell no hook lets out has none.
    pub fn network(&mut self, network: waymark_config::ShellNetwork) {
        use waymark_config::ShellNetwork::{Allow, Deny};
        self.network = Some(match (self.network, network) {
            (None, n) => n,
            (Some(Allow), Allow) => Allow,
            _ => Deny,
        });
    }

    /// The network a confined shell gets.
    pub fn shell_network(&self) -> waymark_config::ShellNetwork {
        self.network.unwrap_or_default()
    }

    /// A confined shell writes over the workspace into the scratch layer `owner` (kept for
    /// the owner's next command; the workspace stays as it was), where this machine has the
    /// scratch shell; otherwise it stays read-only. The first hook to name an owner wins.
    pub fn scratch(&mut self, owner: impl Into<String>) {
        if self.scratch.is_none() {
            self.scratch = Some(owner.into());
        }
    }

    /// The scratch layer's owner, when a hook asked for one.
    pub fn scratch_owner(&self) -> Option<&str> {
        self.scratch.as_deref()
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
    fn tools(&self) -> Vec<Arc<dyn FreeTool>> {
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
    /// Tools whose set changes while the session runs (an MCP server's), asked before each
    /// model call. Their names must not be any fixed tool's.
    fn tool_sources(&self) -> Vec<Arc<dyn source::ToolSource>> {
        Vec::new()
    }
    fn commands(&self) -> Vec<Arc<dyn SlashCommand>> {
        Vec::new()
    }
    /// Rules the permission guard applies besides the permission mode ([`PermissionRule`]).
    fn permission_rules(&self) -> Vec<Arc<dyn PermissionRule>> {
        Vec::new()
    }
    /// Policies that review every tool call before the guard chain decides it
    /// ([`policy::CallPolicy`]): async, and able to refuse, ask or rewrite the input.
    fn call_policies(&self) -> Vec<Arc<dyn policy::CallPolicy>> {
        Vec::new()
    }
    /// Checks the extension's own settings section, `extensions.<name>` of the settings
    /// file, whenever the runtime takes new settings (at start, on a save, on a reload).
    /// `None`: the extension has no section, and one under its name is refused as unknown.
    /// An error's key is relative to the section (`max_chars` is reported as
    /// `extensions.<name>.max_chars`; an empty key names the section). The extension reads
    /// the section from the settings in force ([`SessionApi::config`]).
    fn check_settings(
        &self,
        _section: &serde_json::Value,
    ) -> Option<Result<(), waymark_config::ConfigError>> {
        None
    }
    /// Services this extension offers the others ([`services`]), registered when a session
    /// is opened.
    fn provide(&self, _services: &mut Services) {}
    /// Text added to the system prompt of the session's model calls.
    fn system_prompt(&self, _api: &SessionApi, _session: &SessionRow) -> Option<String> {
        None
    }
    /// The questionnaire kinds whose answers [`Extension::on_answer`] receives.
    fn answers(&self) -> &'static [QuestionnaireKind] {
        &[]
    }

    /// Expands `/name args`, a command no one registered, into the text of a message to the
    /// model (an MCP server's prompt); `None` when the name is not one of its. Runs where
    /// the message is submitted, before it is admitted; an error is the submitter's.
    fn expand<'a>(
        &'a self,
        _api: &'a SessionApi,
        _name: &'a str,
        _args: &'a str,
    ) -> Option<BoxFuture<'a, Result<String>>> {
        None
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
    /// A new turn starts, after its first transaction and before its first model call
    /// (checkpoints take the workspace's state here; a goal its baseline). Not called when a
    /// parked turn resumes. Stop cancels `cancel`.
    fn before_turn<'a>(
        &'a self,
        _api: &'a SessionApi,
        _turn_id: i64,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }
    /// Whether the session's sandbox should be probed before this turn's reminders are
    /// gathered (a reminder that says which sandbox layers hold).
    fn probes_sandbox(&self, _session: &SessionRow) -> bool {
        false
    }
    /// Whether the turn's model calls get the tools (all must agree).
    fn offers_tools(&self, _api: &SessionApi, _turn_id: i64) -> Result<bool> {
        Ok(true)
    }
    /// Tools of its own this extension keeps back for the whole turn (the goal's `wait`
    /// while no goal is active): not offered, though a call to one still reaches it.
    fn withheld_tools(&self, _api: &SessionApi, _turn_id: i64) -> Result<&'static [&'static str]> {
        Ok(&[])
    }
    /// Whether the turn may make another model call after `steps` calls (all must agree;
    /// a refusal completes the turn).
    fn may_call_model(&self, _api: &SessionApi, _turn_id: i64, _steps: u32) -> Result<bool> {
        Ok(true)
    }
    /// The micro-dollars the next model call of turn `turn_id` (or of no turn) may spend
    /// under a spending limit this extension keeps (a goal's cost budget), or `None` when it
    /// keeps none. While any limit is set, a call to a model without a price is refused and
    /// a call's output is cut to what the tightest one can pay for; a limit at 0 is left to
    /// the extension's own guard.
    fn cost_left(&self, _api: &SessionApi, _turn_id: Option<i64>) -> Result<Option<u64>> {
        Ok(None)
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
    /// A call of the session's agent that the guard chain allowed is about to run; `writes`
    /// when the tool may change anything (a write tool, an unconfined shell, another
    /// program's tool that is not read-only). A checkpoint is taken here.
    fn before_run<'a>(
        &'a self,
        _api: &'a SessionApi,
        _turn_id: i64,
        _call: &'a ToolCallRecord,
        _writes: bool,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }
    /// A call of the session's agent (or a subagent's) ran: before its result is recorded,
    /// outside any transaction, the extension may add a note the model reads with the
    /// result (a check's finding, a reminder). It cannot change what ran or its status.
    fn review_result<'a>(
        &'a self,
        _api: &'a SessionApi,
        _turn_id: i64,
        _call: &'a ToolCallRecord,
        _result: &'a ResultSeen<'a>,
    ) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async { Ok(None) })
    }
    /// After the session is opened and before it takes its first op, outside any transaction
    /// (a hook process that prepares the workspace, a server to reach). An error is said as
    /// a session error; the session stays open.
    fn after_open<'a>(&'a self, _api: &'a SessionApi) -> BoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }
    /// A user's message is submitted: before it is admitted, outside any transaction, the
    /// extension may refuse it (the submitter is told why, and nothing is admitted) or add
    /// context the model reads with it. Slash commands are not checked.
    fn check_prompt<'a>(
        &'a self,
        _api: &'a SessionApi,
        _text: &'a str,
    ) -> BoxFuture<'a, Result<PromptCheck>> {
        Box::pin(async { Ok(PromptCheck::Pass) })
    }
    /// The older history is about to be summarized (for `reason`): outside any transaction,
    /// the extension may say what the summary must keep.
    fn before_compaction<'a>(
        &'a self,
        _api: &'a SessionApi,
        _reason: waymark_protocol::CompactReason,
    ) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async { Ok(None) })
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
    /// A model call of turn `turn_id`, which had closed already (a goal's reviewer checks a
    /// turn after it finished), is charged `spend` after the fact: its process stopped
    /// mid-call, and the session's next open charges what was held for it. In the opening
    /// transaction.
    fn on_late_charge(
        &self,
        _tx: &mut Tx<'_>,
        _turn_id: i64,
        _spend: waymark_protocol::cost::Spend,
    ) -> Result<()> {
        Ok(())
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
    /// `Op::Rewind` to checkpoint `to`: the extension that keeps checkpoints answers `Some`.
    /// It takes a checkpoint of the state now, restores the files when `scope` says so, and
    /// says where the conversation stood at `to`. Called only while no turn is open.
    fn rewind<'a>(
        &'a self,
        _api: &'a SessionApi,
        _to: &'a str,
        _scope: waymark_protocol::checkpoint::RewindScope,
    ) -> Option<BoxFuture<'a, Result<rewind::RewindPlan>>> {
        None
    }
    /// The session was rewound, in the transaction that records it (an active goal pauses).
    fn on_rewound(
        &self,
        _tx: &mut Tx<'_>,
        _api: &SessionApi,
        _rewound: &rewind::Rewound,
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

/// Applies the extensions' own migrations to `store` (the runtime does this when it opens
/// the database; benchmarks and tests below the runtime call it themselves).
pub fn migrate(store: &waymark_store::Store, extensions: &[Arc<dyn Extension>]) -> Result<()> {
    for ext in extensions {
        store.migrate_extension(ext.name(), ext.migrations())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::CallPrep;
    use std::path::PathBuf;
    use std::time::Duration;

    /// Hooks only narrow: a later extension cannot lift plan mode's confinement (or the
    /// verifier's) or a goal's time cap.
    #[test]
    fn call_prep_only_narrows() {
        let plan = PathBuf::from("/s/artifacts/notes.md");
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
        // The network: none unless a hook lets it out, and one refusal is enough.
        use waymark_config::ShellNetwork::{Allow, Deny};
        assert_eq!(v.shell_network(), Deny);
        v.network(Allow);
        assert_eq!(v.shell_network(), Allow);
        v.network(Deny);
        v.network(Allow);
        assert_eq!(v.shell_network(), Deny);
    }
}

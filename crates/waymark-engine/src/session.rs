//! One open session: a tokio actor that owns it while this process holds its lease. Ops come
//! in through [`SessionHandle::submit`]; events go out on a broadcast channel after the
//! transaction that wrote them commits. Admission, answers, Stop and the run loop live here;
//! the turn itself is in `turn/`, answering questionnaires in `session/answer.rs`.

mod admit;
mod answer;
mod close;
mod history;
mod host;
mod rewind;
mod tools;
pub(crate) use tools::{FoundTool, ToolList};

pub(crate) use history::HistoryCache;

use crate::clock::{Clock, IdSource};
use crate::commands::{self, CommandRegistry};
use crate::context::ReminderSource;
use crate::error::{Error, Result};
use crate::extension::{Dequeue, Extension, SessionApi, SessionHost, Slots, TurnLost};
use crate::guard::ToolGuard;
use crate::provider::ModelProvider;
use crate::store::{self, Store, TurnStatus, Tx};
use crate::tools::ToolRegistry;
use crate::turn::{self, TurnExit, TurnStart};
use admit::admit;
use answer::answer_questionnaire;
use close::{abort_parked_turn, close_panicked_turn, close_stopped_turn};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use waymark_config::Config;
use waymark_protocol::{
    Answer, Event, EventKind, Intent, MessageSource, Op, PermissionMode, Position, TurnEndReason,
};

/// How to create or reopen a session.
#[derive(Debug, Clone, Default)]
pub struct SessionSpec {
    /// Workspace of a new session (defaults to the current directory).
    pub workspace: Option<PathBuf>,
    /// Model spec; on reopen it replaces the stored one.
    pub model: Option<String>,
    /// Permission mode; on reopen it replaces the stored one.
    pub permission_mode: Option<PermissionMode>,
    /// Start no work until an `Op::Resume` arrives (to record an answer without running).
    pub hold: bool,
}

/// What an op did.
#[derive(Debug, Clone, PartialEq)]
pub enum OpOutcome {
    /// A message entered the queue (or the same idempotency key found it there).
    Admitted {
        message_id: i64,
        created: bool,
    },
    /// A slash command ran; its output.
    Command {
        output: String,
    },
    Answered,
    Done,
}

/// Everything a turn needs, shared between the actor and the running turn.
pub(crate) struct SessionCore {
    pub id: String,
    /// This process's lease on the session; every write checks it is still held.
    pub lease_owner: String,
    /// Set once a write found the lease taken: nothing more is written.
    pub lease_lost: std::sync::atomic::AtomicBool,
    pub store: Arc<Store>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdSource>,
    /// The settings; replaced whole when the runtime applies new ones, read per use so a change applies
    /// from the next check on.
    pub(crate) config: std::sync::RwLock<Arc<Config>>,
    /// The model and its spec (what its calls are priced by), together; swapped by
    /// `Op::SetModel`, read per call so a switch applies from the next model call on.
    pub(crate) route: std::sync::RwLock<crate::provider::Route>,
    /// Makes a provider of a model spec (the runtime's resolution: settings, keys).
    pub(crate) resolve: crate::Resolve,
    pub tools: ToolRegistry,
    /// The extensions' tools, which run with the session's handle (by name; also in `tools`).
    pub session_tools: std::collections::HashMap<String, Arc<dyn crate::extension::SessionTool>>,
    pub guards: Vec<Arc<dyn ToolGuard>>,
    pub reminders: Vec<Arc<dyn ReminderSource>>,
    pub commands: CommandRegistry,
    pub workspace: PathBuf,
    pub session_dir: PathBuf,
    pub artifacts: PathBuf,
    pub events: broadcast::Sender<Event>,
    pub last_seq: AtomicU64,
    /// The conversation as loaded so far; topped up from the store before each model call,
    /// so a call reads only the rows added since the last one.
    pub history: std::sync::Mutex<HistoryCache>,
    /// The sandboxed shell of plan mode and the verifier.
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// The environment tool processes are derived from.
    pub process_env: Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// Tools whose set changes while the session runs (MCP servers'), asked before each
    /// model call and when a called name is no fixed tool's.
    pub sources: Vec<Arc<dyn crate::extension::source::ToolSource>>,
    /// Tool lists per interaction mode, with their size in tokens.
    pub tool_specs:
        std::sync::Mutex<std::collections::HashMap<waymark_protocol::InteractionMode, ToolList>>,
    /// The extensions plugged into the session, in hook order.
    pub extensions: Vec<Arc<dyn Extension>>,
    /// Their per-session state.
    pub(crate) slots: Slots,
    /// Their permission rules (the permission guard has them too).
    pub rules: Vec<Arc<dyn crate::extension::rules::PermissionRule>>,
    /// What they offer one another.
    pub services: Arc<crate::extension::services::Services>,
    /// The project instructions the session started with (the system prompt carries them).
    pub instructions: String,
    /// `/compact` was typed: compact before the next model call.
    pub compact_requested: Arc<std::sync::atomic::AtomicBool>,
    /// Something an extension ran in the background finished: the idle session looks for
    /// work again ([`SessionHost::poke`]).
    pub poked: tokio::sync::Notify,
}

impl SessionCore {
    pub(crate) fn new_config(config: Config) -> std::sync::RwLock<Arc<Config>> {
        std::sync::RwLock::new(Arc::new(config))
    }

    /// The session's model now, with its spec: one call's route.
    pub fn route(&self) -> crate::provider::Route {
        match self.route.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The session's model now.
    pub fn provider(&self) -> Arc<dyn ModelProvider> {
        self.route().provider
    }

    fn set_provider(&self, spec: String, provider: Arc<dyn ModelProvider>) {
        let route = crate::provider::Route { spec, provider };
        match self.route.write() {
            Ok(mut r) => *r = route,
            Err(poisoned) => *poisoned.into_inner() = route,
        }
    }

    /// The model spec the session's calls go to now.
    pub fn model_spec(&self) -> String {
        self.route().spec
    }

    /// What one call with `usage` that went by `route` is charged, by the prices in force
    /// (G-31): its cost, or `None` when the model has no price; it replaces the hold `hold`
    /// taken for the call by [`SessionCore::gate_call`].
    pub(crate) fn charge_for(
        &self,
        route: &crate::provider::Route,
        usage: &waymark_protocol::Usage,
        hold: Option<store::spend::Hold>,
    ) -> store::spend::Charge {
        store::spend::Charge {
            micros: route
                .price(&self.config().pricing)
                .map(|p| p.cost_micros(usage)),
            day: crate::clock::local_day(self.clock.now_ms()),
            hold,
        }
    }

    /// Takes hold `hold` off its day: its call never went out, or was not billed.
    pub(crate) fn release(&self, hold: Option<store::spend::Hold>) -> Result<()> {
        match hold {
            Some(h) => self.write(|tx| Ok(tx.release(h).map(drop)?)),
            None => Ok(()),
        }
    }

    /// Whether the next model call, `request` (of turn `turn_id`, if any), may start, and
    /// within what (G-33): while a spending limit is set (`limits.daily_cost_usd`, or a goal's
    /// cost budget an extension reports through [`Extension::cost_left`]), a call to a model
    /// without a price is refused, since nothing could hold it to the limit; a call is refused
    /// once the day's cap or the goal's budget is reached or when its input alone would pass
    /// what one has left; its output (`max_output_tokens`) is cut to what the tightest limit
    /// can still pay for; and its most possible cost (input and bounded output) is held
    /// against the day until it is charged, so every process's limits see it in flight, and
    /// a process killed mid-call leaves it counted.
    ///
    /// [`Extension::cost_left`]: crate::extension::Extension::cost_left
    pub(crate) fn gate_call(
        &self,
        api: &SessionApi,
        turn_id: Option<i64>,
        route: &crate::provider::Route,
        request: &mut crate::provider::ModelRequest,
    ) -> Result<waymark_extension::Gate> {
        use waymark_extension::Gate;
        use waymark_protocol::cost;
        let config = self.config();
        let cap = config
            .limits
            .daily_cost_usd
            .map(|c| cost::micros(c).unwrap_or(u64::MAX));
        // What a goal's budget has left, by the extensions that keep one.
        let goal_left = self.hooks().cost_left(api, turn_id)?;
        if cap.is_none() && goal_left.is_none() {
            return Ok(Gate::Go(None));
        }
        let Some(price) = route.price(&config.pricing) else {
            let names: Vec<&str> = [
                cap.map(|_| "today's spending cap (limits.daily_cost_usd)"),
                goal_left.map(|_| "the goal's cost budget"),
            ]
            .into_iter()
            .flatten()
            .collect();
            let shown = waymark_protocol::display::escape_line(&route.spec);
            let mut info = waymark_protocol::ErrorInfo::new(
                "unpriced_model",
                format!(
                    "the model `{shown}` has no price, so {} cannot hold its calls: no call is sent to it while a spending limit is set. Give it a price in the settings: `pricing` with the key `{shown}` (or a pattern that matches it, with `*`), and input_per_mtok and output_per_mtok in USD per million tokens; or switch to a priced model.",
                    names.join(" and "),
                ),
            );
            info.setting = Some("pricing".into());
            return Ok(Gate::Refused(info));
        };
        let tokens = request.estimated_tokens();
        let input = price.cost_micros(&waymark_protocol::Usage {
            input_tokens: tokens,
            ..Default::default()
        });
        // A call that could not even pay for its input and one token of output is not sent:
        // it could only pass the limit.
        let one_token = price.output_per_mtok.ceil().max(0.0) as u64;
        let unaffordable = |left: u64| input.saturating_add(one_token) > left;
        // A goal's budget, spent or not: no call of a goal's turn or of its reviewer goes past
        // it (the extension reports no budget for the summary turn, the one call allowed past
        // it, G-22). The goal settles as `budget_limited(cost)`.
        if let Some(left) = goal_left
            && unaffordable(left)
        {
            return Ok(Gate::Refused(waymark_protocol::ErrorInfo::new(
                "cost_budget",
                if left == 0 {
                    "the goal's cost budget is spent: no further model call is made for it. Raise the budget to go on.".to_string()
                } else {
                    format!(
                        "the next model call would pass the goal's cost budget: its input alone (about {tokens} tokens) costs about {}, and {} of the budget is left. Raise the budget to go on.",
                        cost::label(input),
                        cost::label(left)
                    )
                },
            )));
        }
        // The day's part is read and held in one write transaction: two sessions (or
        // processes) checking at the same moment are taken one after the other, each seeing
        // what the other holds.
        let now = self.clock.now_ms();
        let day = crate::clock::local_day(now);
        let sid = self.id.clone();
        let per_token = price.output_per_mtok.max(0.0);
        let max_output = &mut request.max_output_tokens;
        let decided = self.write(|tx| {
            let mut tightest = goal_left;
            if let Some(cap) = cap {
                let spent = store::spend::day(tx.conn(), &day)?.micros;
                let left = cap.saturating_sub(spent);
                if left == 0 {
                    return Ok(Err(self.cap_reached(
                        now,
                        format!(
                            "today's spending cap is reached: {} of {} spent on model calls across all sessions (limits.daily_cost_usd). No model call starts until the next day, or raise the cap in the settings.",
                            cost::label(spent),
                            cost::label(cap)
                        ),
                    )));
                }
                if unaffordable(left) {
                    return Ok(Err(self.cap_reached(
                        now,
                        format!(
                            "the next model call would pass today's spending cap: its input alone (about {tokens} tokens) costs about {}, and {} of the cap is left (limits.daily_cost_usd). No model call starts until the next day, or raise the cap in the settings.",
                            cost::label(input),
                            cost::label(left)
                        ),
                    )));
                }
                tightest = Some(tightest.map_or(left, |g| g.min(left)));
            }
            // The output is what a call can still be held to: no more tokens than the
            // tightest limit can pay for once the input is paid.
            if per_token > 0.0
                && let Some(left) = tightest
            {
                let affordable = left.saturating_sub(input) as f64 / per_token;
                let bound = affordable.floor().clamp(1.0, f64::from(u32::MAX)) as u32;
                *max_output = (*max_output).min(bound);
            }
            // The most the call can cost: its input at the input price and every output token
            // it may write.
            let most = input.saturating_add(
                (f64::from(*max_output) * per_token)
                    .ceil()
                    .min(u64::MAX as f64) as u64,
            );
            if most == 0 {
                return Ok(Ok(None));
            }
            Ok(Ok(Some(tx.hold(&sid, turn_id, &day, most)?)))
        })?;
        Ok(match decided {
            Ok(hold) => Gate::Go(hold),
            Err(refused) => Gate::Refused(refused),
        })
    }

    /// The error of a call the daily cap stops: code `spend_cap`, the setting, and when the
    /// day ends.
    fn cap_reached(&self, now: i64, message: String) -> waymark_protocol::ErrorInfo {
        let mut info = waymark_protocol::ErrorInfo::new("spend_cap", message);
        info.setting = Some("limits.daily_cost_usd".into());
        info.resets_in_ms = Some(crate::clock::until_local_midnight(now));
        info
    }

    /// The settings in force now.
    pub fn config(&self) -> Arc<Config> {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The session's extensions, as the engine calls their hooks.
    pub(crate) fn hooks(&self) -> crate::hooks::Hooks<'_> {
        crate::hooks::Hooks(&self.extensions)
    }

    pub(crate) fn set_config(&self, config: Config) {
        match self.config.write() {
            Ok(mut c) => *c = Arc::new(config),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(config),
        }
        // The tools offered depend on the settings (beta flags): list them again.
        self.tool_specs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// One transaction, fenced by the lease (a process that lost it writes nothing); its
    /// events are broadcast after commit.
    pub fn write<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        if self.lease_lost.load(Ordering::Relaxed) {
            return Err(self.lease_error());
        }
        let written = self.store.write(self.clock.now_ms(), |tx| {
            tx.check_lease(&self.id, &self.lease_owner)?;
            f(tx)
        });
        let (value, events) = match written {
            Err(e @ Error::LeaseLost { .. }) => {
                self.lease_lost.store(true, Ordering::Relaxed);
                return Err(e);
            }
            other => other?,
        };
        for e in events {
            self.last_seq.store(e.seq, Ordering::Relaxed);
            let _ = self.events.send(e);
        }
        Ok(value)
    }

    fn lease_error(&self) -> Error {
        let pid = self
            .read(|c| Ok(store::sessions::lease(c, &self.id)?))
            .ok()
            .flatten()
            .map(|l| l.pid)
            .unwrap_or(0);
        Error::LeaseLost {
            id: self.id.clone(),
            pid,
        }
    }

    /// The environments tool processes start with, under the settings in force.
    pub(crate) fn tool_env(&self) -> Arc<crate::secrets::ToolEnv> {
        Arc::new(crate::secrets::ToolEnv::build(
            &self.process_env,
            &self.config(),
        ))
    }

    /// Streams an event that is not written to the log (secrets redacted, as in the log).
    pub fn transient(&self, kind: EventKind) {
        if let EventKind::SessionError { error } = &kind {
            tracing::warn!(code = %error.code, "{}", error.message);
        }
        let kind = match crate::store::redact_event(&self.store.redactor(), kind) {
            Ok((_, k)) => k,
            Err(_) => return,
        };
        let _ = self.events.send(Event {
            session_id: self.id.clone(),
            seq: self.last_seq.load(Ordering::Relaxed),
            ts: self.clock.now_ms(),
            transient: true,
            kind,
        });
    }

    pub fn read<T>(&self, f: impl FnOnce(&rusqlite::Connection) -> Result<T>) -> Result<T> {
        self.store.read(f)
    }
}

type Reply = oneshot::Sender<Result<OpOutcome>>;

/// How long Stop waits for the running turn to wind down by itself before dropping it: the
/// turn ends within a second whatever a tool is doing.
const STOP_BACKSTOP: Duration = Duration::from_millis(900);

/// A front end's handle on an open session.
pub struct SessionHandle {
    id: String,
    ops: mpsc::UnboundedSender<(Op, Reply)>,
    events: broadcast::Sender<Event>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Events written while opening (before anyone could subscribe).
    pub startup: Vec<Event>,
    /// For commands an extension expands into a message, before the actor gets it.
    core: Arc<SessionCore>,
}

impl SessionHandle {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session as its extensions see it, for work a front end asks of one outside the
    /// op queue (a goal draft's one model call).
    pub fn api(&self) -> SessionApi {
        SessionApi::new(self.core.clone())
    }

    /// A receiver of every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Sends an op and waits until the session has taken it (not until work finishes).
    pub async fn submit(&self, op: Op) -> Result<OpOutcome> {
        let op = commands::expand(&self.core, op).await?;
        let (tx, rx) = oneshot::channel();
        self.ops.send((op, tx)).map_err(|_| Error::SessionClosed)?;
        rx.await.map_err(|_| Error::SessionClosed)?
    }

    /// Stops any running turn, releases the lease and ends the actor.
    pub async fn shutdown(mut self) -> Result<()> {
        let r = self.submit(Op::Shutdown).await.map(|_| ());
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        r
    }
}

/// What the session last told front ends about being done, so it is said once.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Announced {
    Nothing,
    Idle,
    Waiting(String),
}

struct Running {
    task: tokio::task::JoinHandle<Result<TurnExit>>,
    cancel: CancellationToken,
}

pub(crate) struct Actor {
    core: Arc<SessionCore>,
    lease_owner: String,
    heartbeat: Duration,
    running: Option<Running>,
    announced: Announced,
    /// False while held: work starts only after `Op::Resume`.
    auto_run: bool,
    /// When idle: the session clock's time an extension asked to be asked again
    /// ([`Extension::wake_at`]).
    wake: Option<i64>,
}

pub(crate) fn spawn(
    core: Arc<SessionCore>,
    lease_owner: String,
    heartbeat: Duration,
    startup: Vec<Event>,
    hold: bool,
) -> SessionHandle {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let events = core.events.clone();
    let id = core.id.clone();
    let handle_core = core.clone();
    let actor = Actor {
        core,
        lease_owner,
        heartbeat,
        running: None,
        announced: Announced::Nothing,
        auto_run: !hold,
        wake: None,
    };
    let span = tracing::info_span!("session", id = %id);
    let task = tokio::spawn(tracing::Instrument::instrument(actor.run(ops_rx), span));
    SessionHandle {
        id,
        ops: ops_tx,
        events,
        task: Some(task),
        startup,
        core: handle_core,
    }
}

impl Actor {
    async fn run(mut self, mut ops: mpsc::UnboundedReceiver<(Op, Reply)>) {
        // The lease was just taken: the first heartbeat is due one period from now.
        let mut beat =
            tokio::time::interval_at(tokio::time::Instant::now() + self.heartbeat, self.heartbeat);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let (wake, clock) = (self.wake, self.core.clock.clone());
            tokio::select! {
                op = ops.recv() => {
                    let Some((op, reply)) = op else { break };
                    if matches!(op, Op::Shutdown) {
                        let (sid, owner) = (self.core.id.clone(), self.lease_owner.clone());
                        // Extensions see the close first (an active goal is paused, G-24), so
                        // the stopped turn's settlement does not take it for a Stop.
                        let waiting = self
                            .core
                            .read(|c| Ok(store::questionnaires::pending(c, &sid)?))
                            .map(|q| q.is_some())
                            .unwrap_or(false);
                        let on_close = |tx: &mut Tx<'_>| -> Result<()> {
                            self.core.hooks().on_close(tx, &sid, waiting)
                        };
                        let r = if self.running.is_some() {
                            let _ = self.core.write(on_close);
                            self.stop_running().await;
                            self.release()
                        } else {
                            // Nothing runs: closing and releasing are one transaction.
                            self.core.write(|tx| {
                                on_close(tx)?;
                                Ok(tx.release_lease(&sid, &owner)?)
                            })
                        };
                        let _ = reply.send(r.map(|_| OpOutcome::Done));
                        return;
                    }
                    let r = self.handle(op).await;
                    let _ = reply.send(r);
                    self.drive();
                }
                done = async {
                    match &mut self.running {
                        Some(r) => (&mut r.task).await,
                        None => std::future::pending().await,
                    }
                } => {
                    self.running = None;
                    match done {
                        Ok(Ok(_exit)) => {}
                        Ok(Err(e)) => self.core.transient(EventKind::SessionError { error: e.info() }),
                        Err(join) => {
                            let error = waymark_protocol::ErrorInfo::new(
                                "turn_panicked",
                                format!("the turn stopped on an internal error: {join}"),
                            );
                            // Close the turn (and stop its goal) so the same failure is not
                            // retried in a loop.
                            if let Err(e) = close_panicked_turn(&self.core, &error) {
                                self.core.transient(EventKind::SessionError { error: e.info() });
                            }
                            self.core.transient(EventKind::SessionError { error });
                        }
                    }
                    self.drive();
                }
                _ = async {
                    match wake {
                        Some(at) => clock.sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    // Taken first: a drive that does not run (a turn runs, the session is
                    // held) must not leave a past wake-up that fires again at once.
                    let fired = self.wake.take();
                    self.drive_woken(fired);
                }
                _ = self.core.poked.notified() => {
                    self.drive();
                }
                _ = beat.tick() => {
                    let (id, owner) = (self.core.id.clone(), self.lease_owner.clone());
                    if let Err(e) = self.core.write(|tx| Ok(tx.heartbeat(&id, &owner)?)) {
                        // Someone else owns the session now: stop touching it.
                        self.core.transient(EventKind::SessionError { error: e.info() });
                        if let Some(r) = &self.running { r.cancel.cancel(); }
                    }
                }
            }
        }
        self.stop_running().await;
        let _ = self.release();
    }

    fn release(&self) -> Result<()> {
        let (id, owner) = (self.core.id.clone(), self.lease_owner.clone());
        self.core.write(|tx| Ok(tx.release_lease(&id, &owner)?))
    }

    async fn stop_running(&mut self) {
        if let Some(r) = self.running.take() {
            r.cancel.cancel();
            let mut task = r.task;
            if tokio::time::timeout(STOP_BACKSTOP, &mut task)
                .await
                .is_err()
            {
                task.abort();
                let _ = task.await;
                let _ = close_stopped_turn(&self.core);
            }
        }
    }

    async fn handle(&mut self, op: Op) -> Result<OpOutcome> {
        match op {
            Op::Submit {
                text,
                source,
                position,
                idempotency_key,
                intent,
            } => {
                let out = admit(
                    &self.core,
                    &text,
                    source,
                    position,
                    idempotency_key.as_deref(),
                    intent,
                )?;
                if matches!(out, OpOutcome::Admitted { created: true, .. }) {
                    self.announced = Announced::Nothing;
                }
                // `/compact` while no turn runs summarizes at once; during a turn, the turn
                // does it before its next model call.
                if matches!(out, OpOutcome::Command { .. })
                    && self.running.is_none()
                    && self.core.compact_requested.swap(false, Ordering::AcqRel)
                {
                    turn::compact_between_turns(&self.core, &CancellationToken::new()).await?;
                }
                Ok(out)
            }
            Op::Answer {
                questionnaire_id,
                answer,
            } => {
                answer_questionnaire(&self.core, &questionnaire_id, &answer)?;
                self.announced = Announced::Nothing;
                Ok(OpOutcome::Answered)
            }
            Op::Stop => {
                if let Some(r) = self.running.take() {
                    r.cancel.cancel();
                    let mut task = r.task;
                    match tokio::time::timeout(STOP_BACKSTOP, &mut task).await {
                        Ok(Ok(Err(e))) => self
                            .core
                            .transient(EventKind::SessionError { error: e.info() }),
                        Ok(_) => {}
                        Err(_) => {
                            // The turn did not wind down in time: it is dropped, and its
                            // turn closed here.
                            task.abort();
                            let _ = task.await;
                            close_stopped_turn(&self.core)?;
                        }
                    }
                } else {
                    abort_parked_turn(&self.core)?;
                }
                self.announced = Announced::Nothing;
                Ok(OpOutcome::Done)
            }
            Op::Resume => {
                self.announced = Announced::Nothing;
                self.auto_run = true;
                Ok(OpOutcome::Done)
            }
            Op::SetPermissionMode { mode } => {
                let core = &self.core;
                core.write(|tx| {
                    tx.set_permission_mode(&core.id, mode)?;
                    configured(tx, core, None)
                })?;
                changed(core);
                Ok(OpOutcome::Done)
            }
            Op::SetModel { model } => {
                let core = &self.core;
                let model = model.trim();
                if model.is_empty()
                    || model.chars().count() > MODEL_SPEC_MAX
                    || model.chars().any(crate::display::needs_escape)
                {
                    return Err(Error::Refused(format!(
                        "a model spec is provider:model, at most {MODEL_SPEC_MAX} characters with no control or invisible ones"
                    )));
                }
                // Resolved first: a spec that names no usable model changes nothing.
                let (spec, provider) = (core.resolve)(model)?;
                core.write(|tx| {
                    tx.set_model(&core.id, &spec)?;
                    configured(tx, core, Some(provider.context_tokens()))
                })?;
                core.set_provider(spec, provider);
                changed(core);
                Ok(OpOutcome::Done)
            }
            Op::Rewind { checkpoint, scope } => {
                // A rewind of a big workspace may take a while: the lease is kept alive
                // meanwhile, so no other process takes the session halfway.
                let work = rewind::rewind(&self.core, self.running.is_some(), &checkpoint, scope);
                tokio::pin!(work);
                let mut beat = tokio::time::interval_at(
                    tokio::time::Instant::now() + self.heartbeat,
                    self.heartbeat,
                );
                let (id, owner) = (self.core.id.clone(), self.lease_owner.clone());
                loop {
                    tokio::select! {
                        r = &mut work => break r?,
                        _ = beat.tick() => {
                            let _ = self.core.write(|tx| Ok(tx.heartbeat(&id, &owner)?));
                        }
                    }
                }
                self.announced = Announced::Nothing;
                Ok(OpOutcome::Done)
            }
            Op::Shutdown => Ok(OpOutcome::Done),
            other => {
                // Ops of a feature (editing the plan) go to the extension that owns them.
                let api = SessionApi::new(self.core.clone());
                if let Some(r) = self.core.hooks().handle_op(&api, &other) {
                    let text = r?;
                    changed(&self.core);
                    return Ok(match text {
                        Some(output) => OpOutcome::Command { output },
                        None => OpOutcome::Done,
                    });
                }
                Err(Error::Refused(format!(
                    "no extension of this session handles the op {other:?}"
                )))
            }
        }
    }

    /// Starts the next piece of work if there is one, else says the session is idle or
    /// waiting (once).
    fn drive(&mut self) {
        self.drive_woken(None);
    }

    /// [`Actor::drive`], after the wake-up `fired` (if any): when looking for work fails, the
    /// wake-up is tried again a minute later rather than lost.
    fn drive_woken(&mut self, fired: Option<i64>) {
        // A session whose lease another process took is not driven from here any more.
        if self.running.is_some() || !self.auto_run || self.core.lease_lost.load(Ordering::Relaxed)
        {
            return;
        }
        let wake = self.wake.or(fired);
        match self.next_work() {
            Ok(Some(start)) => {
                self.announced = Announced::Nothing;
                let cancel = CancellationToken::new();
                let core = self.core.clone();
                let c = cancel.clone();
                // A child of the session's span; the turn fills in its id.
                let span = tracing::info_span!("turn", turn_id = tracing::field::Empty);
                let task = tokio::spawn(tracing::Instrument::instrument(
                    async move { turn::run(core, start, c).await },
                    span,
                ));
                self.running = Some(Running { task, cancel });
            }
            Ok(None) => {}
            Err(e) => {
                // A wake-up that found an error is tried again a minute later, not lost.
                let retry = self.core.clock.now_ms().saturating_add(60_000);
                self.wake = wake.map(|w| w.max(retry));
                self.core
                    .transient(EventKind::SessionError { error: e.info() })
            }
        }
    }

    fn next_work(&mut self) -> Result<Option<TurnStart>> {
        self.wake = None;
        let sid = self.core.id.clone();
        let (open, pending, next) = self.core.read(|c| {
            Ok((
                store::turns::open_turn(c, &sid)?,
                store::questionnaires::pending(c, &sid)?,
                store::messages::next_queued(c, &sid)?,
            ))
        })?;
        if let Some(q) = pending {
            if self.announced != Announced::Waiting(q.id.clone()) {
                self.core.write(|tx| {
                    Ok(tx.emit(
                        &sid,
                        EventKind::SessionWaiting {
                            questionnaire_id: q.id.clone(),
                            kind: q.kind(),
                        },
                    )?)
                })?;
                self.announced = Announced::Waiting(q.id);
            }
            return Ok(None);
        }
        if let Some(t) = open {
            return Ok(Some(TurnStart::Resume(t)));
        }
        let api = SessionApi::new(self.core.clone());
        let mut next = next;
        while let Some(m) = next {
            if let Dequeue::Drop(why) = self.core.hooks().recheck(&api, &m)? {
                drop_message(&self.core, &api, &m, &why)?;
                next = self
                    .core
                    .read(|c| Ok(store::messages::next_queued(c, &sid)?))?;
                continue;
            }
            return Ok(Some(TurnStart::New(m)));
        }
        let queued = self.core.hooks().next_work(&api, || {
            self.core
                .read(|c| Ok(store::messages::next_queued(c, &sid)?))
        })?;
        if let Some(m) = queued {
            return Ok(Some(TurnStart::New(m)));
        }
        if let Some(at) = self.core.hooks().wake_at(&api)? {
            self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
        }
        if self.announced != Announced::Idle {
            self.core
                .write(|tx| Ok(tx.emit(&sid, EventKind::SessionIdle {})?))?;
            self.announced = Announced::Idle;
        }
        Ok(None)
    }
}

/// The longest model spec a switch takes (a script's path included).
const MODEL_SPEC_MAX: usize = 1024;

/// Says what the session runs with now, after the user switched its model (whose context
/// window is `window`) or its permission mode.
fn configured(tx: &mut store::Tx<'_>, core: &SessionCore, window: Option<u64>) -> Result<()> {
    let row = store::sessions::get(tx.conn(), &core.id)?
        .ok_or_else(|| Error::SessionNotFound(core.id.clone()))?;
    let window = window.unwrap_or_else(|| core.provider().context_tokens());
    Ok(tx.emit(
        &core.id,
        EventKind::SessionConfigured {
            model: row.model.unwrap_or_default(),
            permission_mode: row.permission_mode,
            context_window: core.config().turn.context_tokens.unwrap_or(window),
        },
    )?)
}

/// Tells every extension its view may have changed (after commit).
fn changed(core: &Arc<SessionCore>) {
    core.hooks().changed(&SessionApi::new(core.clone()));
}

/// Marks a queued message dropped, with its event.
fn drop_message(
    core: &SessionCore,
    api: &SessionApi,
    m: &store::MessageRow,
    reason: &str,
) -> Result<()> {
    api.write(|tx| {
        tx.set_message_status(m.id, store::MessageStatus::Dropped)?;
        Ok(tx.emit(
            api.id(),
            EventKind::MessageDropped {
                message_id: m.id,
                reason: reason.to_string(),
            },
        )?)
    })?;
    core.hooks().changed(api);
    Ok(())
}

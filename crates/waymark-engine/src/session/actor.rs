//! The session's actor: one tokio task that owns the session while this process holds its
//! lease. It takes ops in order, admits messages, answers questionnaires, runs one turn at a
//! time, Stop included, and keeps the lease alive.

use super::OpOutcome;
use super::admit::admit;
use super::answer::answer_questionnaire;
use super::close::{abort_parked_turn, close_panicked_turn, close_stopped_turn};
use super::handle::{Reply, SessionHandle};
use super::session_core::{SessionCore, changed};
use crate::error::{Error, Result};
use crate::extension::{Dequeue, SessionApi};
use crate::store::{self, Tx};
use crate::turn::{self, TurnExit, TurnStart};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use waymark_protocol::{Event, EventKind, Op};

/// How long Stop waits for the running turn to wind down by itself before dropping it: the
/// turn ends within a second whatever a tool is doing.
const STOP_BACKSTOP: Duration = Duration::from_millis(900);

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

/// The longest the extensions' step after opening may take: well inside the lease's
/// staleness (30 s by default), since no heartbeat is sent while it runs.
const AFTER_OPEN_LIMIT: Duration = Duration::from_secs(10);

pub(crate) fn spawn(
    core: Arc<SessionCore>,
    lease_owner: String,
    heartbeat: Duration,
    startup: Vec<Event>,
    hold: bool,
) -> SessionHandle {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let events = core.journal.events.clone();
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
        // The extensions' step after opening comes before the first op, bounded well inside
        // the lease's staleness (no heartbeat is sent meanwhile); one that fails or overruns
        // is said (and logged), and the session stays open.
        let api = crate::extension::SessionApi::new(self.core.clone());
        let opened = tokio::time::timeout(AFTER_OPEN_LIMIT, self.core.hooks().after_open(&api));
        let failed = match opened.await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.info()),
            Err(_) => Some(waymark_protocol::ErrorInfo::new(
                "after_open_timeout",
                format!(
                    "an extension's step after opening the session took longer than {} s and was stopped",
                    AFTER_OPEN_LIMIT.as_secs()
                ),
            )),
        };
        if let Some(error) = failed {
            tracing::warn!(code = %error.code, "after opening: {}", error.message);
            self.core.transient(EventKind::SessionError { error });
        }
        drop(api);
        // The lease was just taken: the first heartbeat is due one period from now.
        let mut beat =
            tokio::time::interval_at(tokio::time::Instant::now() + self.heartbeat, self.heartbeat);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let (wake, clock) = (self.wake, self.core.journal.clock.clone());
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
                images,
            } => {
                let images = super::admit::checked_images(&self.core, images).await?;
                let out = admit(
                    &self.core,
                    super::admit::Submission {
                        text: &text,
                        source,
                        position,
                        key: idempotency_key.as_deref(),
                        intent,
                        images,
                    },
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
                    return Err(Error::refused(format!(
                        "a model spec is provider:model, at most {MODEL_SPEC_MAX} characters with no control or invisible ones"
                    )));
                }
                // Resolved first: a spec that names no usable model changes nothing.
                let (spec, provider) = (core.model.resolve)(model)?;
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
                let work =
                    super::rewind::rewind(&self.core, self.running.is_some(), &checkpoint, scope);
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
                Err(Error::refused(format!(
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
        if self.running.is_some() || !self.auto_run || self.core.lease.lost.load(Ordering::Relaxed)
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
                let retry = self.core.journal.clock.now_ms().saturating_add(60_000);
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

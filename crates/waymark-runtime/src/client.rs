//! The client seam: what every front end does with a session, written once. It submits,
//! then follows the session's events, and says where the session came to rest as a typed
//! [`Settled`]: idle, waiting on a question, its goal finished with a reason, limited until
//! a time, or its goal waiting. The CLI's `exec` follows one run to its rest; the desktop
//! follows each open session for as long as the window lives; an editor's protocol (ACP)
//! ends a prompt turn at a rest.
//!
//! It also gives what a front end lists for a session (its slash commands) and saves
//! settings through the one checked save (`Runtime::save_settings`).

use crate::Runtime;
use crate::error::Result;
use tokio::sync::broadcast::{self, error::RecvError};
use waymark_engine::SessionHandle;
use waymark_engine::extension::commands::CommandSpec;
use waymark_engine::session::OpOutcome;
use waymark_protocol::{ErrorInfo, Event, EventKind, GoalSnapshot, GoalStatus, Op};

/// Where a session came to rest: nothing more runs in it until someone acts, or until a
/// time it names.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// Idle: no goal keeps it going (none, or one still active that gave way). `failure` is
    /// the error the run ended in, if it did.
    Idle { failure: Option<ErrorInfo> },
    /// A question waits on the user.
    Waiting { questionnaire_id: String },
    /// Its goal finished, with the reason in it: complete, blocked on the user, out of
    /// budget or paused. `failure` is the run's error, if any.
    Finished {
        goal: Box<GoalSnapshot>,
        failure: Option<ErrorInfo>,
    },
    /// A usage limit stopped its goal; it resumes by itself at `resumes_at` (Unix ms), or
    /// never by itself (`None`).
    Limited {
        goal: Box<GoalSnapshot>,
        resumes_at: Option<i64>,
    },
    /// Its goal waits (the agent's `wait`): it wakes by a time or when its check passes.
    GoalWaiting { goal: Box<GoalSnapshot> },
}

impl Settled {
    /// How a front end names it in a line or a log.
    pub fn name(&self) -> &'static str {
        match self {
            Settled::Idle { .. } => "idle",
            Settled::Waiting { .. } => "waiting",
            Settled::Finished { .. } => "finished",
            Settled::Limited { .. } => "limited",
            Settled::GoalWaiting { .. } => "goal_waiting",
        }
    }
}

/// What following a session gives next.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// An event, in order (transient ones included).
    Event(Event),
    /// The session came to rest; following it further gives what happens next (a goal that
    /// resumes after its limit, a question answered elsewhere).
    Settled(Settled),
    /// The follower fell behind and `n` events were skipped (the log has them all).
    Lagged(u64),
    /// The session closed.
    Closed,
}

/// Reads a session's goal for the follower (the runtime's view, or none).
pub type GoalOf<'a> = &'a (dyn Fn(&str) -> Result<Option<GoalSnapshot>> + Send + Sync);

/// Follows one session's events and says when it settles.
pub struct Follow {
    session: String,
    rx: broadcast::Receiver<Event>,
    /// The error the run ended in so far: set by a turn that failed or was stopped and by a
    /// session error, cleared by a turn that finished well after it.
    failure: Option<ErrorInfo>,
    /// It settled at a goal's wait or limit and no turn started since: the goal stopping
    /// there (paused, out of time) settles it again.
    resting_on_goal: bool,
    /// A rest found after the event that showed it, given next.
    pending: Option<Settled>,
    /// The goal could not be read when the event that showed a rest came: given after it.
    failed: Option<crate::Error>,
}

impl Follow {
    /// Follows `handle`'s session from now on.
    pub fn on(handle: &SessionHandle) -> Follow {
        Follow::from_receiver(handle.id(), handle.subscribe())
    }

    /// Follows session `id` through a receiver of its events.
    pub fn from_receiver(id: &str, rx: broadcast::Receiver<Event>) -> Follow {
        Follow {
            session: id.to_string(),
            rx,
            failure: None,
            resting_on_goal: false,
            pending: None,
            failed: None,
        }
    }

    /// The error the run ended in so far, if any.
    pub fn failure(&self) -> Option<&ErrorInfo> {
        self.failure.as_ref()
    }

    /// The events already sent, without waiting (what a refused op printed, say).
    pub fn drain(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Ok(e) = self.rx.try_recv() {
            out.push(e);
        }
        out
    }

    /// The next event or rest; `goal` reads the session's goal when the session rests.
    /// An event always comes first: a goal that cannot be read when the session rests is the
    /// error of the call after it, so no event is ever lost to it.
    pub async fn next(&mut self, goal: GoalOf<'_>) -> Result<Progress> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if let Some(s) = self.pending.take() {
            return Ok(Progress::Settled(s));
        }
        let event = match self.rx.recv().await {
            Ok(e) => e,
            Err(RecvError::Lagged(n)) => return Ok(Progress::Lagged(n)),
            Err(RecvError::Closed) => return Ok(Progress::Closed),
        };
        match self.observe(&event, goal) {
            Ok(rest) => self.pending = rest,
            Err(e) => self.failed = Some(e),
        }
        Ok(Progress::Event(event))
    }

    /// Notes what `event` says of the run, and whether the session rests after it.
    fn observe(&mut self, event: &Event, goal: GoalOf<'_>) -> Result<Option<Settled>> {
        Ok(match &event.kind {
            EventKind::TurnStarted { .. } => {
                self.resting_on_goal = false;
                None
            }
            EventKind::TurnFinished { error, reason, .. } => {
                self.failure = match (error.as_deref(), reason) {
                    (Some(e), _) => Some(e.clone()),
                    (None, waymark_protocol::TurnEndReason::Aborted) => Some(ErrorInfo::new(
                        "turn_aborted",
                        "the turn was stopped before it finished",
                    )),
                    (None, _) => None,
                };
                None
            }
            EventKind::SessionError { error } => {
                self.failure = Some(error.clone());
                None
            }
            EventKind::SessionWaiting {
                questionnaire_id, ..
            } => Some(Settled::Waiting {
                questionnaire_id: questionnaire_id.clone(),
            }),
            EventKind::SessionIdle {} => Some(self.at_rest(goal(&self.session)?)),
            // A goal that stops while the session rests on its wait or limit (past its
            // longest wait, its time budget spent, paused from elsewhere) settles it again.
            EventKind::GoalUpdate { status, .. }
                if self.resting_on_goal && *status != GoalStatus::Active =>
            {
                Some(self.at_rest(goal(&self.session)?))
            }
            _ => None,
        })
    }

    /// Where an idle session rests, by its goal.
    fn at_rest(&mut self, goal: Option<GoalSnapshot>) -> Settled {
        let failure = self.failure.clone();
        let Some(g) = goal else {
            return Settled::Idle { failure };
        };
        let settled = match g.status {
            GoalStatus::UsageLimited => Settled::Limited {
                resumes_at: g
                    .usage_limit
                    .as_ref()
                    .filter(|l| l.auto_resume)
                    .map(|l| l.resets_at),
                goal: Box::new(g),
            },
            GoalStatus::Active if g.wait.is_some() => Settled::GoalWaiting { goal: Box::new(g) },
            GoalStatus::Active => Settled::Idle { failure },
            GoalStatus::Complete
            | GoalStatus::Blocked
            | GoalStatus::BudgetLimited
            | GoalStatus::Paused => Settled::Finished {
                goal: Box::new(g),
                failure,
            },
        };
        self.resting_on_goal = matches!(
            settled,
            Settled::Limited { .. } | Settled::GoalWaiting { .. }
        );
        settled
    }
}

/// Submits `op` (if any) and has the session look for work, following it from before the
/// op went in. A refused op is the error, with the follower (what the op printed so far is
/// in its events).
pub async fn submit_and_follow(
    handle: &SessionHandle,
    op: Option<Op>,
) -> std::result::Result<(Follow, Option<OpOutcome>), (Follow, crate::Error)> {
    let follow = Follow::on(handle);
    let outcome = match op {
        Some(op) => match handle.submit(op).await {
            Ok(o) => Some(o),
            Err(e) => return Err((follow, e)),
        },
        None => None,
    };
    if let Err(e) = handle.submit(Op::Resume).await {
        return Err((follow, e));
    }
    Ok((follow, outcome))
}

/// The session's slash commands, as its front ends offer them.
pub fn commands(handle: &SessionHandle) -> Vec<CommandSpec> {
    handle.commands()
}

impl Runtime {
    /// The follower's view of a session's goal (see [`Follow::next`]).
    pub fn goal_of(&self) -> impl Fn(&str) -> Result<Option<GoalSnapshot>> + Send + Sync + '_ {
        move |id| self.goal(id)
    }
}

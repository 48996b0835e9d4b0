//! Thread goals on the wire: statuses, the closed table of reasons, actors, and the snapshot
//! front ends show (spec G-1 … G-7).

use serde::{Deserialize, Serialize};

/// Where a goal stands. Only `active` continues; `complete` is terminal.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    Active,
    Paused,
    Blocked,
    Complete,
    BudgetLimited,
    UsageLimited,
}

impl GoalStatus {
    pub const ALL: [GoalStatus; 6] = [
        GoalStatus::Active,
        GoalStatus::Paused,
        GoalStatus::Blocked,
        GoalStatus::Complete,
        GoalStatus::BudgetLimited,
        GoalStatus::UsageLimited,
    ];

    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }

    /// The variant whose serde name is `s`.
    pub fn parse(s: &str) -> Option<Self> {
        crate::wire::parse(s)
    }

    /// Terminal: no further transition.
    pub fn is_terminal(self) -> bool {
        match self {
            GoalStatus::Complete => true,
            GoalStatus::Active
            | GoalStatus::Paused
            | GoalStatus::Blocked
            | GoalStatus::BudgetLimited
            | GoalStatus::UsageLimited => false,
        }
    }
}

/// Why a goal reached its status (the closed table of G-3).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum GoalReason {
    Created,
    Resumed,
    BudgetRaised,
    Edited,
    VerifierMet,
    WorkerProposal,
    WorkerReported,
    UserRequested,
    NoProgress,
    NoProgressAfterCompletionClaim,
    VerifierPartial,
    VerifierError,
    TurnError,
    ProviderError,
    AppClosed,
    Tokens,
    MainTurns,
    ActiveSeconds,
    RateLimited,
    QuotaExhausted,
    /// The cost budget is used up (G-32).
    Cost,
    /// The daily spending cap of `limits.daily_cost_usd` is reached (G-33).
    SpendCap,
    /// The model declined to answer (a refusal or a content filter, G-41): the user decides
    /// what to change before it goes on.
    ProviderRefusal,
    /// The agent waits for a time or a check (the `wait` tool, G-47): the goal stays active
    /// and no model call happens until it wakes.
    Waiting,
    /// The wait is over (the time came, the check passed, "Wake now", or a message).
    Woke,
    /// The wait reached `goal.max_wait` without waking: the user decides what next.
    WaitExpired,
    /// Every check of the goal exits 0 (and the reviewer, where one is configured, agreed):
    /// complete on the project's own tests, not on a model's word (G-49).
    ChecksPassed,
    /// The checks pass, but they were weakened since the goal started (fewer tests ran, a
    /// test file deleted, skip markers added, assertions removed, a protected file changed):
    /// the user decides (G-51).
    ChecksWeakened,
}

impl GoalReason {
    pub const ALL: [GoalReason; 28] = [
        GoalReason::Created,
        GoalReason::Resumed,
        GoalReason::BudgetRaised,
        GoalReason::Edited,
        GoalReason::VerifierMet,
        GoalReason::WorkerProposal,
        GoalReason::WorkerReported,
        GoalReason::UserRequested,
        GoalReason::NoProgress,
        GoalReason::NoProgressAfterCompletionClaim,
        GoalReason::VerifierPartial,
        GoalReason::VerifierError,
        GoalReason::TurnError,
        GoalReason::ProviderError,
        GoalReason::AppClosed,
        GoalReason::Tokens,
        GoalReason::MainTurns,
        GoalReason::ActiveSeconds,
        GoalReason::RateLimited,
        GoalReason::QuotaExhausted,
        GoalReason::Cost,
        GoalReason::SpendCap,
        GoalReason::ProviderRefusal,
        GoalReason::Waiting,
        GoalReason::Woke,
        GoalReason::WaitExpired,
        GoalReason::ChecksPassed,
        GoalReason::ChecksWeakened,
    ];

    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }

    /// What happened, in plain words, for notifications and front ends (the serde name is
    /// the exact code). `ui/src/lib/goal.ts` says the same (a test compares the two).
    pub fn words(self) -> &'static str {
        match self {
            GoalReason::Created => "Set",
            GoalReason::Resumed => "Resumed",
            GoalReason::BudgetRaised => "Resumed with a larger budget",
            GoalReason::Edited => "Changed",
            GoalReason::VerifierMet => "Done: the reviewer confirmed it",
            GoalReason::WorkerProposal => "Done: the agent says it is complete",
            GoalReason::WorkerReported => "The agent says it is blocked",
            GoalReason::UserRequested => "Paused by you",
            GoalReason::NoProgress => "Paused: no progress in the last turns",
            GoalReason::NoProgressAfterCompletionClaim => {
                "Paused: the agent keeps claiming it is done without progress"
            }
            GoalReason::VerifierPartial => "Paused: the reviewer found it partly done",
            GoalReason::VerifierError => "Paused: the reviewer could not check it",
            GoalReason::TurnError => "Paused: a turn failed",
            GoalReason::ProviderError => "Paused: the model could not be reached",
            GoalReason::AppClosed => "Stopped: Waymark closed",
            GoalReason::Tokens => "Stopped: the token budget is used up",
            GoalReason::MainTurns => "Stopped: the turn budget is used up",
            GoalReason::ActiveSeconds => "Stopped: the time budget is used up",
            GoalReason::RateLimited => "Waiting: the provider's rate limit",
            GoalReason::QuotaExhausted => "Stopped: the provider's quota is used up",
            GoalReason::Cost => "Stopped: the cost budget is used up",
            GoalReason::SpendCap => "Waiting: today's spending cap is reached",
            GoalReason::ProviderRefusal => "Paused: the model declined to answer",
            GoalReason::Waiting => "Waiting",
            GoalReason::Woke => "Woke from its wait",
            GoalReason::WaitExpired => "Paused: the wait went on past its longest time",
            GoalReason::ChecksPassed => "Done: the goal's checks pass",
            GoalReason::ChecksWeakened => "Paused: the checks pass, but they were weakened",
        }
    }

    /// The variant whose serde name is `s`.
    pub fn parse(s: &str) -> Option<Self> {
        crate::wire::parse(s)
    }

    /// The status this reason belongs to in the table of G-3.
    pub fn status(self) -> GoalStatus {
        match self {
            GoalReason::Created
            | GoalReason::Resumed
            | GoalReason::BudgetRaised
            | GoalReason::Edited
            | GoalReason::Waiting
            | GoalReason::Woke => GoalStatus::Active,
            GoalReason::VerifierMet | GoalReason::WorkerProposal | GoalReason::ChecksPassed => {
                GoalStatus::Complete
            }
            GoalReason::WorkerReported => GoalStatus::Blocked,
            GoalReason::UserRequested
            | GoalReason::NoProgress
            | GoalReason::NoProgressAfterCompletionClaim
            | GoalReason::VerifierPartial
            | GoalReason::VerifierError
            | GoalReason::TurnError
            | GoalReason::ProviderError
            | GoalReason::ProviderRefusal
            | GoalReason::WaitExpired
            | GoalReason::ChecksWeakened
            | GoalReason::AppClosed => GoalStatus::Paused,
            GoalReason::Tokens
            | GoalReason::MainTurns
            | GoalReason::ActiveSeconds
            | GoalReason::Cost => GoalStatus::BudgetLimited,
            GoalReason::RateLimited | GoalReason::QuotaExhausted | GoalReason::SpendCap => {
                GoalStatus::UsageLimited
            }
        }
    }
}

/// A change to one budget dimension.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// No limit in this dimension.
    Clear,
    /// This many tokens, turns or seconds.
    To(u64),
}

/// Budget changes; a dimension left `None` keeps its limit (G-8, G-9).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BudgetChange {
    #[serde(default)]
    pub tokens: Option<Limit>,
    #[serde(default)]
    pub turns: Option<Limit>,
    #[serde(default)]
    pub seconds: Option<Limit>,
    /// In micro-dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Limit>,
}

impl BudgetChange {
    pub fn is_empty(&self) -> bool {
        self.tokens.is_none()
            && self.turns.is_none()
            && self.seconds.is_none()
            && self.cost.is_none()
    }
}

/// What a user does to the session's goal. The desktop sends these (`Op::Goal`) and
/// `/goal …` parses into them, so both take one path.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum GoalOp {
    /// Describe the goal (and the queued ones).
    Show,
    /// Set a goal; `replace` clears one that is not complete first.
    Set {
        objective: String,
        #[serde(default)]
        budget: BudgetChange,
        #[serde(default)]
        replace: bool,
        /// How to tell it is done (a draft's criteria, kept with the goal).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        criteria: Option<String>,
        /// Commands that define done, run by the runtime (`check="…"`, G-49); none: the
        /// folder's `goal.checks`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        checks: Vec<String>,
    },
    /// Queue an objective to become the goal when the current one completes or is cleared
    /// (at once when none is unfinished), with the budgets it starts with (G-46).
    Queue {
        objective: String,
        #[serde(default)]
        budget: BudgetChange,
    },
    Pause,
    Resume,
    Clear,
    EditBudget {
        budget: BudgetChange,
    },
    EditObjective {
        objective: String,
    },
    /// Answer a goal the worker reported blocked: `text` goes to the agent as the user's
    /// message and the goal is active again (by the user).
    Reply {
        text: String,
    },
    /// Take a goal out of the queue (G-46).
    Unqueue {
        id: i64,
    },
    /// Move a queued goal to `to` (0 = first in line, past the end = last).
    MoveQueued {
        id: i64,
        to: u32,
    },
    /// Change a queued goal's objective and budgets (checked as when it was queued).
    EditQueued {
        id: i64,
        objective: String,
        #[serde(default)]
        budget: BudgetChange,
    },
    /// Start a queued goal now; an unfinished goal it replaces is cleared (kept for the
    /// record, as `replace` does).
    StartQueued {
        id: i64,
    },
    /// End the agent's wait now: the goal carries on at once (G-47).
    WakeNow,
}

/// A goal drafted from the user's rough words (`/goal draft`, "Help me write this goal",
/// G-48): shown for the user to edit; nothing starts until they set it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GoalDraft {
    pub objective: String,
    /// Measurable completion criteria, one per item.
    pub criteria: Vec<String>,
    /// The suggested budget (None: no suggestion in that dimension).
    pub tokens: Option<u64>,
    pub turns: Option<u64>,
    pub seconds: Option<u64>,
    /// Why that budget, in one line.
    pub reasoning: String,
}

/// A goal waiting in the session's queue, in line order (G-46).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct QueuedGoal {
    pub id: i64,
    pub objective: String,
    /// The budgets it starts with (None: no limit in that dimension).
    pub tokens: Option<u64>,
    pub turns: Option<u64>,
    pub seconds: Option<u64>,
    /// In micro-dollars.
    pub cost_micros: Option<u64>,
}

/// What a `goal.update` event reports.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum GoalUpdateKind {
    /// The user or the model changed the goal (pause, resume, edit, budget).
    Lifecycle,
    /// Settlement or the runtime moved it (met, blocked, limited, stopped).
    Completion,
}

/// Who caused a goal transition.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum GoalActor {
    User,
    Model,
    Runtime,
    System,
}

impl GoalActor {
    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }

    /// The variant whose serde name is `s`.
    pub fn parse(s: &str) -> Option<Self> {
        crate::wire::parse(s)
    }
}

/// One budget dimension in a report (G-7).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BudgetLine {
    pub limit: Option<u64>,
    pub used: u64,
    pub remaining: Option<u64>,
    pub reached: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Default for BudgetLine {
    fn default() -> Self {
        BudgetLine::new(None, 0)
    }
}

impl BudgetLine {
    /// No limit and nothing used.
    pub fn is_unused(&self) -> bool {
        self.limit.is_none() && self.used == 0
    }

    pub fn new(limit: Option<u64>, used: u64) -> Self {
        BudgetLine {
            limit,
            used,
            remaining: limit.map(|l| l.saturating_sub(used)),
            reached: limit.is_some_and(|l| used >= l),
        }
    }
}

/// The budget report: one line per dimension.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BudgetReport {
    pub tokens: BudgetLine,
    pub main_turns: BudgetLine,
    pub active_seconds: BudgetLine,
    /// In micro-dollars (G-32). What calls without a price cost is not in it. Left out
    /// while it has no limit and nothing is spent (as in logs from before costs).
    #[serde(default, skip_serializing_if = "BudgetLine::is_unused")]
    pub cost: BudgetLine,
    /// Calls of the goal whose model had no price: its cost is then not fully known.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost_unpriced_calls: u64,
}

/// The full snapshot of a goal pushed to front ends after every change (`goal.updated`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GoalSnapshot {
    pub goal_id: String,
    pub objective: String,
    pub criteria: Option<String>,
    pub status: GoalStatus,
    pub reason: GoalReason,
    pub actor: GoalActor,
    pub revision: u32,
    pub budget: BudgetReport,
    pub over_budget: bool,
    /// What the worker asked when it reported the goal blocked; the user answers it with
    /// [`GoalOp::Reply`]. None once the goal moves on.
    #[serde(default)]
    pub question: Option<String>,
    /// While the goal is `usage_limited`: when the limit resets and whether the runtime
    /// resumes the goal then by itself.
    #[serde(default)]
    pub usage_limit: Option<UsageLimit>,
    /// A goal implementing an approved plan: the plan's steps and the verifier's latest
    /// verdict on each (PM-27). Empty for other goals.
    #[serde(default)]
    pub steps: Vec<GoalStep>,
    /// While the agent waits (G-47): for what, and until when at the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<GoalWait>,
    /// The goal's checks (G-49): each one's baseline and its runs since. Empty without
    /// checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<GoalCheckState>,
    /// What weakened the checks since the goal started, in plain words, as the last
    /// completion claim found it (G-51). Empty when nothing did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weakened: Vec<String>,
}

/// One check of a goal: its command, its run when the goal started, and its runs since
/// (oldest first, the newest [`GoalCheckState::MAX_RUNS`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GoalCheckState {
    pub command: String,
    pub baseline: Option<CheckResult>,
    pub runs: Vec<CheckResult>,
}

impl GoalCheckState {
    /// The most runs a snapshot carries.
    pub const MAX_RUNS: usize = 50;
}

/// One run of a goal's check.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CheckResult {
    /// Unix ms it ended.
    pub at: i64,
    /// `None`: killed at its time limit, or it did not run.
    pub exit_code: Option<i32>,
    /// Tests passed and failed, where the runner says.
    pub passed: Option<u64>,
    pub failed: Option<u64>,
}

/// What an active goal waits for (the `wait` tool, G-47). No model call happens until it
/// wakes: at `until`, when `check` exits 0, on "Wake now" or a message; past `deadline`
/// (`goal.max_wait` after it began) the goal pauses instead.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GoalWait {
    /// Why the agent waits, in its words (redacted).
    pub reason: String,
    /// Unix ms it began.
    pub since: i64,
    /// Unix ms it wakes at, when it waits for a time.
    pub until: Option<i64>,
    /// The command whose success wakes it, run by the runtime in the read-only sandbox.
    pub check: Option<String>,
    /// Seconds between two runs of the check.
    pub every_seconds: u32,
    /// Unix ms past which the goal pauses (`wait_expired`) if nothing woke it.
    pub deadline: i64,
    /// The newest run of the check.
    pub last_check: Option<WaitCheck>,
    /// Unix ms the check runs next (at once when a process opens the session again).
    #[serde(default)]
    pub next_check: i64,
    /// Unix ms up to which its time counts toward the goal's time budget (waiting counts
    /// only while a process runs the session).
    #[serde(default)]
    pub counted_to: i64,
}

/// One run of a wait's check.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct WaitCheck {
    /// Unix ms it ended.
    pub at: i64,
    pub passed: bool,
    /// The exit code (None: it timed out or could not start).
    pub exit_code: Option<i32>,
    /// The last line it printed (redacted, cut to 300 characters).
    pub line: String,
}

/// One step of the plan a goal implements, and whether the verifier last found it met
/// (None: not checked yet).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GoalStep {
    pub text: String,
    pub met: Option<bool>,
    /// The command that judges this step (a plan step's ``check: `…` ``): its exit code is
    /// the step's verdict, not the reviewer's reading (G-49).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

/// A goal stopped by a provider's usage limit: when the limit resets, and whether the
/// runtime resumes the goal then (actor `system`). A quota or billing limit never resumes by
/// itself.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UsageLimit {
    /// When the limit resets, in Unix milliseconds.
    pub resets_at: i64,
    /// The provider named the reset (`Retry-After` or its rate-limit headers); otherwise the
    /// time is the runtime's backoff of 1, 5, 15 or 60 minutes.
    pub from_provider: bool,
    /// The runtime resumes the goal at `resets_at`. False once the user cancelled it, the
    /// automatic resumes are used up, or the process that would resume it stopped.
    pub auto_resume: bool,
    /// Automatic resumes since the goal last got through a turn without hitting the limit
    /// (or the user resumed it), and how many the settings allow (`goal.usage_limit.auto_resumes`).
    pub auto_resumes_used: u32,
    pub auto_resumes_max: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_reasons_map_to_their_status() {
        for s in GoalStatus::ALL {
            assert_eq!(GoalStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for r in GoalReason::ALL {
            assert_eq!(GoalReason::parse(r.as_str()), Some(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
        assert_eq!(GoalReason::Tokens.status(), GoalStatus::BudgetLimited);
        assert_eq!(GoalReason::AppClosed.status(), GoalStatus::Paused);
        assert_eq!(GoalReason::VerifierMet.status(), GoalStatus::Complete);
    }

    #[test]
    fn budget_lines() {
        let l = BudgetLine::new(Some(100), 120);
        assert_eq!((l.remaining, l.reached), (Some(0), true));
        let open = BudgetLine::new(None, 5);
        assert_eq!((open.remaining, open.reached), (None, false));
    }
}

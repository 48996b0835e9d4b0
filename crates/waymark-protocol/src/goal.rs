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

    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Paused => "paused",
            GoalStatus::Blocked => "blocked",
            GoalStatus::Complete => "complete",
            GoalStatus::BudgetLimited => "budget_limited",
            GoalStatus::UsageLimited => "usage_limited",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.as_str() == s)
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
}

impl GoalReason {
    pub const ALL: [GoalReason; 20] = [
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
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GoalReason::Created => "created",
            GoalReason::Resumed => "resumed",
            GoalReason::BudgetRaised => "budget_raised",
            GoalReason::Edited => "edited",
            GoalReason::VerifierMet => "verifier_met",
            GoalReason::WorkerProposal => "worker_proposal",
            GoalReason::WorkerReported => "worker_reported",
            GoalReason::UserRequested => "user_requested",
            GoalReason::NoProgress => "no_progress",
            GoalReason::NoProgressAfterCompletionClaim => "no_progress_after_completion_claim",
            GoalReason::VerifierPartial => "verifier_partial",
            GoalReason::VerifierError => "verifier_error",
            GoalReason::TurnError => "turn_error",
            GoalReason::ProviderError => "provider_error",
            GoalReason::AppClosed => "app_closed",
            GoalReason::Tokens => "tokens",
            GoalReason::MainTurns => "main_turns",
            GoalReason::ActiveSeconds => "active_seconds",
            GoalReason::RateLimited => "rate_limited",
            GoalReason::QuotaExhausted => "quota_exhausted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The status this reason belongs to in the table of G-3.
    pub fn status(self) -> GoalStatus {
        match self {
            GoalReason::Created
            | GoalReason::Resumed
            | GoalReason::BudgetRaised
            | GoalReason::Edited => GoalStatus::Active,
            GoalReason::VerifierMet | GoalReason::WorkerProposal => GoalStatus::Complete,
            GoalReason::WorkerReported => GoalStatus::Blocked,
            GoalReason::UserRequested
            | GoalReason::NoProgress
            | GoalReason::NoProgressAfterCompletionClaim
            | GoalReason::VerifierPartial
            | GoalReason::VerifierError
            | GoalReason::TurnError
            | GoalReason::ProviderError
            | GoalReason::AppClosed => GoalStatus::Paused,
            GoalReason::Tokens | GoalReason::MainTurns | GoalReason::ActiveSeconds => {
                GoalStatus::BudgetLimited
            }
            GoalReason::RateLimited | GoalReason::QuotaExhausted => GoalStatus::UsageLimited,
        }
    }
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
    pub fn as_str(self) -> &'static str {
        match self {
            GoalActor::User => "user",
            GoalActor::Model => "model",
            GoalActor::Runtime => "runtime",
            GoalActor::System => "system",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user" => Some(GoalActor::User),
            "model" => Some(GoalActor::Model),
            "runtime" => Some(GoalActor::Runtime),
            "system" => Some(GoalActor::System),
            _ => None,
        }
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

impl BudgetLine {
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

//! Settlement (G-15): when a turn of an active goal ends, ten stages decide the goal's fate,
//! in this order, each able to stop the pipeline:
//!   1 usage · 2 staleness · 3 anomaly · 4 budget wrap-up · 5 dependencies ·
//!   6 blocked proposal · 7 verification · 8 breaker · 9 commit · 10 continuation.
//! Stages 1–8 are pure functions of the goal and the turn's facts (unit-tested one by one);
//! verification's verdict is obtained beforehand (it needs model calls); 9 and 10 write.

use super::Dimension;
use super::prompts::Nudge;
use crate::goal::db::{GoalCounters, GoalRow};
use waymark_protocol::GoalUpdateKind;
use waymark_protocol::{GoalActor, GoalReason, GoalStatus, TurnEndReason, UsageLimit};

/// Waits before resuming after a rate limit the provider gave no reset time for: the first,
/// second, third and every later time in a row.
pub const LIMIT_BACKOFF_MS: [u64; 4] = [60_000, 300_000, 900_000, 3_600_000];
/// The longest wait taken from a provider's headers (a larger figure is a broken header).
pub const MAX_LIMIT_WAIT_MS: u64 = 7 * 24 * 3_600_000;

/// What the model proposed with `update_goal` (mode `status`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Proposal {
    pub status: ProposedStatus,
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposedStatus {
    Complete,
    Blocked,
}

/// The verifier's answer to a completion claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail {
        gaps: String,
    },
    Partial,
    /// No verdict line, a crash, or malformed output.
    Error(String),
}

/// How completion claims are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    None,
    Subagent,
    Evaluator,
}

/// What settlement knows about the turn that just ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnFacts {
    pub reason: TurnEndReason,
    pub error_code: Option<String>,
    /// With a usage-limit error: how long the provider said the limit lasts.
    pub resets_in_ms: Option<u64>,
    /// When settlement runs (Unix ms): the base of a usage limit's reset time.
    pub now_ms: i64,
    pub final_reply: String,
    pub used_tools: bool,
    pub user_started: bool,
    pub proposal: Option<Proposal>,
    /// The goal's revision when the turn started.
    pub revision_at_start: u32,
    pub pending_questionnaire: bool,
}

/// Limits from the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub repeated_reply_limit: u32,
    pub repeated_not_met_limit: u32,
    /// Automatic resumes in a row after rate limits (`goal.usage_limit.auto_resumes`).
    pub auto_resumes: u32,
}

/// The pipeline's state as it goes through the stages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    /// The goal with this turn's usage already added (stage 1 runs in the turn's transaction).
    pub goal: GoalRow,
    pub facts: TurnFacts,
    pub proposal: Option<Proposal>,
    /// The new status, when a stage decided one.
    pub outcome: Option<(GoalReason, GoalActor)>,
    pub budget_stop: Option<Dimension>,
    pub schedule_summary: bool,
    /// Settlement waits for a dependency; no continuation now.
    pub suspended: bool,
    pub nudge: Option<Nudge>,
    pub counters: GoalCounters,
    /// With a usage-limit outcome: when it resets and whether the goal resumes then.
    pub usage_limit: Option<UsageLimit>,
}

/// Whether the pipeline goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Next,
    Stop,
}

impl Pipeline {
    pub fn new(goal: GoalRow, facts: TurnFacts) -> Self {
        let mut counters = goal.counters.clone();
        // A turn that did not run into a rate limit ends the run of automatic resumes.
        if facts.error_code.as_deref() != Some("rate_limited") {
            counters.limit_resumes = 0;
        }
        Pipeline {
            proposal: facts.proposal.clone(),
            goal,
            facts,
            outcome: None,
            budget_stop: None,
            schedule_summary: false,
            suspended: false,
            nudge: None,
            counters,
            usage_limit: None,
        }
    }

    /// 1 — usage: a dimension over budget stops the goal as `budget_limited(dimension)`.
    pub fn usage(&mut self) -> Flow {
        match super::exhausted(&super::report(&self.goal, 0, 0, 0)) {
            Some(d) => {
                self.budget_stop = Some(d);
                self.outcome = Some((d.reason(), GoalActor::Runtime));
                Flow::Next // the wrap-up stage still runs
            }
            None => Flow::Next,
        }
    }

    /// 2 — staleness: the goal was edited or replaced during the turn; its proposal is void.
    pub fn staleness(&mut self) -> Flow {
        if self.goal.revision != self.facts.revision_at_start {
            self.proposal = None;
        }
        Flow::Next
    }

    /// 3 — anomaly: errors, provider limits and Stop end the goal's run.
    pub fn anomaly(&mut self) -> Flow {
        if self.budget_stop.is_some() {
            return Flow::Next;
        }
        let decided = match self.facts.reason {
            TurnEndReason::Aborted => Some(GoalReason::UserRequested),
            TurnEndReason::Error => Some(match self.facts.error_code.as_deref() {
                Some("rate_limited") => GoalReason::RateLimited,
                Some("quota_exhausted") => GoalReason::QuotaExhausted,
                Some(
                    "auth" | "server_error" | "bad_response" | "timeout" | "network"
                    | "request_rejected" | "context_too_long" | "script_exhausted",
                ) => GoalReason::ProviderError,
                _ => GoalReason::TurnError,
            }),
            TurnEndReason::Completed | TurnEndReason::Terminated | TurnEndReason::StepCapped => {
                None
            }
        };
        match decided {
            Some(r) => {
                let actor = if r == GoalReason::UserRequested {
                    GoalActor::User
                } else {
                    GoalActor::Runtime
                };
                self.outcome = Some((r, actor));
                Flow::Stop
            }
            None => {
                if self.facts.reason == TurnEndReason::StepCapped {
                    self.nudge = Some(Nudge::StepLimit);
                }
                Flow::Next
            }
        }
    }

    /// 4 — budget wrap-up: after a budget stop, one summary turn is scheduled.
    pub fn budget_wrap_up(&mut self) -> Flow {
        if self.budget_stop.is_some() {
            self.schedule_summary = !self.counters.summary_due;
            self.counters.summary_due = true;
            return Flow::Stop;
        }
        Flow::Next
    }

    /// 5 — dependencies: a pending questionnaire suspends settlement (nothing is lost; the
    /// continuation follows once it is answered).
    pub fn dependencies(&mut self) -> Flow {
        if self.facts.pending_questionnaire {
            self.suspended = true;
            return Flow::Stop;
        }
        Flow::Next
    }

    /// 6 — a `blocked` proposal blocks the goal without verification.
    pub fn blocked(&mut self) -> Flow {
        if matches!(
            self.proposal,
            Some(Proposal {
                status: ProposedStatus::Blocked,
                ..
            })
        ) {
            self.outcome = Some((GoalReason::WorkerReported, GoalActor::Model));
            return Flow::Stop;
        }
        Flow::Next
    }

    /// Whether stage 7 needs a verdict from the verifier.
    pub fn wants_verdict(&self, mode: Mode) -> bool {
        mode != Mode::None
            && matches!(
                self.proposal,
                Some(Proposal {
                    status: ProposedStatus::Complete,
                    ..
                })
            )
    }

    /// 7 — verification of a `complete` proposal.
    pub fn verification(&mut self, mode: Mode, verdict: Option<Verdict>, limits: Limits) -> Flow {
        if !matches!(
            self.proposal,
            Some(Proposal {
                status: ProposedStatus::Complete,
                ..
            })
        ) {
            return Flow::Next;
        }
        self.counters.completion_claimed = true;
        if mode == Mode::None {
            self.outcome = Some((GoalReason::WorkerProposal, GoalActor::Model));
            return Flow::Stop;
        }
        match verdict {
            Some(Verdict::Pass) => {
                self.outcome = Some((GoalReason::VerifierMet, GoalActor::Runtime));
                Flow::Stop
            }
            Some(Verdict::Partial) => {
                self.outcome = Some((GoalReason::VerifierPartial, GoalActor::Runtime));
                Flow::Stop
            }
            Some(Verdict::Error(_)) | None => {
                self.outcome = Some((GoalReason::VerifierError, GoalActor::Runtime));
                Flow::Stop
            }
            Some(Verdict::Fail { gaps }) => {
                let same = self.counters.last_gaps.as_deref() == Some(gaps.as_str());
                self.counters.not_met_count = if same {
                    self.counters.not_met_count + 1
                } else {
                    1
                };
                self.counters.last_gaps = Some(gaps.clone());
                if self.counters.not_met_count >= limits.repeated_not_met_limit {
                    self.outcome = Some((GoalReason::NoProgress, GoalActor::Runtime));
                    return Flow::Stop;
                }
                self.nudge = Some(Nudge::Gaps(gaps));
                Flow::Next
            }
        }
    }

    /// 8 — breaker: repeated final replies and turns without tool calls.
    pub fn breaker(&mut self, limits: Limits) -> Flow {
        let c = &mut self.counters;
        if self.facts.user_started {
            c.repeated_replies = 0;
            c.toolless_turns = 0;
            c.last_reply = None;
        }
        let reply = self.facts.final_reply.trim().to_string();
        c.repeated_replies = if !reply.is_empty() && c.last_reply.as_deref() == Some(reply.as_str())
        {
            c.repeated_replies + 1
        } else {
            1
        };
        c.last_reply = Some(reply);
        c.toolless_turns = if self.facts.used_tools {
            0
        } else {
            c.toolless_turns + 1
        };
        let count = c.repeated_replies.max(c.toolless_turns);
        if count >= limits.repeated_reply_limit {
            let reason = if c.completion_claimed {
                GoalReason::NoProgressAfterCompletionClaim
            } else {
                GoalReason::NoProgress
            };
            self.outcome = Some((reason, GoalActor::Runtime));
            return Flow::Stop;
        }
        if count >= 2 && self.nudge.is_none() {
            self.nudge = Some(Nudge::Repetition);
        }
        Flow::Next
    }

    /// Stages 1–8 in order; `verdict` is consulted by stage 7 only. A usage-limit outcome
    /// then gets its reset time.
    pub fn run(&mut self, mode: Mode, verdict: Option<Verdict>, limits: Limits) {
        self.stages(mode, verdict, limits);
        self.usage_limit = self.limit_reset(limits);
    }

    /// When a usage limit resets: the provider's word, else the backoff for this many limits
    /// in a row. A rate limit resumes by itself while the automatic resumes last; a quota or
    /// billing limit never does (it keeps a reset time only when the provider named one).
    fn limit_reset(&self, limits: Limits) -> Option<UsageLimit> {
        let (reason, _) = self.outcome?;
        let used = self.counters.limit_resumes;
        let wait = match reason {
            GoalReason::RateLimited => self
                .facts
                .resets_in_ms
                .unwrap_or(LIMIT_BACKOFF_MS[(used as usize).min(LIMIT_BACKOFF_MS.len() - 1)]),
            GoalReason::QuotaExhausted => self.facts.resets_in_ms?,
            _ => return None,
        }
        .min(MAX_LIMIT_WAIT_MS);
        Some(UsageLimit {
            resets_at: self.facts.now_ms.saturating_add(wait as i64),
            from_provider: self.facts.resets_in_ms.is_some(),
            auto_resume: reason == GoalReason::RateLimited && used < limits.auto_resumes,
            auto_resumes_used: used,
            auto_resumes_max: limits.auto_resumes,
        })
    }

    fn stages(&mut self, mode: Mode, verdict: Option<Verdict>, limits: Limits) {
        let stages: [&mut dyn FnMut(&mut Pipeline) -> Flow; 7] = [
            &mut |p| p.usage(),
            &mut |p| p.staleness(),
            &mut |p| p.anomaly(),
            &mut |p| p.budget_wrap_up(),
            &mut |p| p.dependencies(),
            &mut |p| p.blocked(),
            &mut |p| p.verification(mode, verdict.clone(), limits),
        ];
        for stage in stages {
            if stage(self) == Flow::Stop {
                return;
            }
        }
        self.breaker(limits);
    }

    /// Whether the goal is still active after the stages (then stage 10 continues it).
    pub fn continues(&self) -> bool {
        self.outcome.is_none() && !self.suspended && self.goal.status == GoalStatus::Active
    }

    /// The short prompt of the next continuation (G-21), or the full contract on the first.
    pub fn next_prompt(&self) -> Nudge {
        if let Some(n) = &self.nudge {
            return n.clone();
        }
        if (self.counters.continuations + 1).is_multiple_of(5) {
            return Nudge::Audit;
        }
        Nudge::Plain
    }
}

/// 9 — commit: the status change (with its `goal.update` event) and the counters, in the
/// caller's transaction.
pub fn commit(tx: &mut crate::store::Tx<'_>, p: &Pipeline) -> crate::error::Result<GoalRow> {
    let mut g = p.goal.clone();
    g.counters = p.counters.clone();
    g.usage_limit = p.usage_limit;
    if let Some((reason, actor)) = p.outcome {
        super::runner::transition(tx, &mut g, reason, actor, GoalUpdateKind::Completion)?;
        if reason == GoalReason::WorkerReported
            && let Some(asked) = p
                .proposal
                .as_ref()
                .map(|p| p.message.trim())
                .filter(|m| !m.is_empty())
        {
            tx.set_goal_question(&g.id, asked)?;
            g.question = Some(asked.to_string());
        }
    }
    tx.set_goal_counters(&g.id, &g.counters)?;
    Ok(g)
}

/// 10 — continuation: the summary turn after a budget stop, or the next continuation while
/// the goal is still active.
pub fn continuation(
    tx: &mut crate::store::Tx<'_>,
    g: &mut GoalRow,
    p: &Pipeline,
) -> crate::error::Result<()> {
    if p.schedule_summary {
        let key = format!("{}{}:{}", super::runner::SUMMARY_KEY, g.id, g.revision);
        super::runner::enqueue(tx, g, &super::prompts::continuation_summary(), &key)?;
    }
    if p.continues() {
        super::runner::continue_goal(tx, g, p.next_prompt())?;
    }
    Ok(())
}

/// Reads the verdict line of a verifier reply.
pub fn parse_verdict(reply: &str) -> Verdict {
    let Some(last) = reply.lines().rev().map(str::trim).find(|l| !l.is_empty()) else {
        return Verdict::Error("the verifier gave no reply".into());
    };
    let body = reply
        .trim_end()
        .strip_suffix(last)
        .unwrap_or("")
        .trim()
        .to_string();
    match last.trim_matches('`') {
        "VERDICT: PASS" => Verdict::Pass,
        "VERDICT: PARTIAL" => Verdict::Partial,
        "VERDICT: FAIL" => Verdict::Fail {
            gaps: if body.is_empty() {
                "(the reviewer listed no gaps)".into()
            } else {
                body
            },
        },
        other => Verdict::Error(format!(
            "the verifier's last line is not a verdict: `{}`",
            other.chars().take(80).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal() -> GoalRow {
        GoalRow {
            id: "g".into(),
            session_id: "s".into(),
            objective: "o".into(),
            criteria: None,
            status: GoalStatus::Active,
            reason: GoalReason::Created,
            actor: GoalActor::User,
            revision: 1,
            token_budget: Some(10_000),
            turn_budget: None,
            time_budget_ms: None,
            tokens_used: 100,
            turns_used: 1,
            active_ms: 1000,
            counters: GoalCounters::default(),
            question: None,
            usage_limit: None,
            steps: Vec::new(),
        }
    }

    fn facts() -> TurnFacts {
        TurnFacts {
            reason: TurnEndReason::Completed,
            error_code: None,
            resets_in_ms: None,
            now_ms: 1_000_000,
            final_reply: "did things".into(),
            used_tools: true,
            user_started: false,
            proposal: None,
            revision_at_start: 1,
            pending_questionnaire: false,
        }
    }

    const LIMITS: Limits = Limits {
        repeated_reply_limit: 3,
        repeated_not_met_limit: 5,
        auto_resumes: 3,
    };

    fn complete() -> Option<Proposal> {
        Some(Proposal {
            status: ProposedStatus::Complete,
            message: "done".into(),
        })
    }

    #[test]
    fn g_15_stage_1_usage_over_budget_is_budget_limited() {
        let mut g = goal();
        g.tokens_used = 10_001;
        let mut p = Pipeline::new(g, facts());
        p.run(Mode::None, None, LIMITS);
        assert_eq!(p.outcome, Some((GoalReason::Tokens, GoalActor::Runtime)));
        assert!(p.schedule_summary, "stage 4 schedules the summary turn");
    }

    #[test]
    fn g_15_stage_2_staleness_drops_the_proposal() {
        let mut g = goal();
        g.revision = 2;
        let mut p = Pipeline::new(
            g,
            TurnFacts {
                proposal: complete(),
                ..facts()
            },
        );
        p.run(Mode::None, None, LIMITS);
        assert_eq!(p.outcome, None);
        assert!(p.continues());
    }

    #[test]
    fn g_15_stage_3_anomalies() {
        let cases = [
            (TurnEndReason::Aborted, None, GoalReason::UserRequested),
            (
                TurnEndReason::Error,
                Some("rate_limited"),
                GoalReason::RateLimited,
            ),
            (
                TurnEndReason::Error,
                Some("quota_exhausted"),
                GoalReason::QuotaExhausted,
            ),
            (
                TurnEndReason::Error,
                Some("server_error"),
                GoalReason::ProviderError,
            ),
            (
                TurnEndReason::Error,
                Some("tool_failed"),
                GoalReason::TurnError,
            ),
        ];
        for (reason, code, expect) in cases {
            let mut p = Pipeline::new(
                goal(),
                TurnFacts {
                    reason,
                    error_code: code.map(str::to_string),
                    ..facts()
                },
            );
            p.run(Mode::None, None, LIMITS);
            assert_eq!(p.outcome.map(|o| o.0), Some(expect));
        }
        let mut capped = Pipeline::new(
            goal(),
            TurnFacts {
                reason: TurnEndReason::StepCapped,
                ..facts()
            },
        );
        capped.run(Mode::None, None, LIMITS);
        assert!(capped.continues());
        assert_eq!(capped.next_prompt(), Nudge::StepLimit);
    }

    fn limited(code: &str, resets_in_ms: Option<u64>, resumes_so_far: u32) -> Pipeline {
        let mut g = goal();
        g.counters.limit_resumes = resumes_so_far;
        let mut p = Pipeline::new(
            g,
            TurnFacts {
                reason: TurnEndReason::Error,
                error_code: Some(code.into()),
                resets_in_ms,
                ..facts()
            },
        );
        p.run(Mode::None, None, LIMITS);
        p
    }

    #[test]
    fn a_rate_limit_resets_when_the_provider_says_else_after_a_growing_backoff() {
        let l = limited("rate_limited", Some(42_000), 0)
            .usage_limit
            .unwrap();
        assert_eq!(
            (l.resets_at, l.from_provider, l.auto_resume),
            (1_042_000, true, true)
        );
        let waits: Vec<i64> = (0..6)
            .map(|n| {
                limited("rate_limited", None, n)
                    .usage_limit
                    .unwrap()
                    .resets_at
                    - 1_000_000
            })
            .collect();
        assert_eq!(
            waits,
            [60_000, 300_000, 900_000, 3_600_000, 3_600_000, 3_600_000]
        );
        // A header naming a century is a broken header: the wait stops at a week.
        let far = limited("rate_limited", Some(u64::MAX), 0)
            .usage_limit
            .unwrap();
        assert_eq!(far.resets_at, 1_000_000 + MAX_LIMIT_WAIT_MS as i64);
    }

    #[test]
    fn automatic_resumes_stop_at_the_cap_and_never_follow_a_quota() {
        let third = limited("rate_limited", Some(1000), 2).usage_limit.unwrap();
        assert!(third.auto_resume);
        assert_eq!((third.auto_resumes_used, third.auto_resumes_max), (2, 3));
        let capped = limited("rate_limited", Some(1000), 3).usage_limit.unwrap();
        assert!(!capped.auto_resume, "three in a row is the cap");
        let quota = limited("quota_exhausted", Some(1000), 0);
        assert_eq!(quota.outcome.map(|o| o.0), Some(GoalReason::QuotaExhausted));
        assert!(!quota.usage_limit.unwrap().auto_resume);
        assert_eq!(limited("quota_exhausted", None, 0).usage_limit, None);
        assert_eq!(limited("server_error", Some(1000), 0).usage_limit, None);
    }

    #[test]
    fn a_turn_that_gets_through_starts_the_count_again() {
        let mut g = goal();
        g.counters.limit_resumes = 3;
        let p = Pipeline::new(g.clone(), facts());
        assert_eq!(p.counters.limit_resumes, 0);
        assert_eq!(limited("rate_limited", None, 3).counters.limit_resumes, 3);
    }

    #[test]
    fn g_15_stage_4_summary_is_scheduled_once() {
        let mut g = goal();
        g.tokens_used = 20_000;
        g.counters.summary_due = true;
        let mut p = Pipeline::new(g, facts());
        p.run(Mode::None, None, LIMITS);
        assert!(!p.schedule_summary);
    }

    #[test]
    fn g_15_stage_5_a_pending_questionnaire_suspends() {
        let mut p = Pipeline::new(
            goal(),
            TurnFacts {
                pending_questionnaire: true,
                proposal: complete(),
                ..facts()
            },
        );
        p.run(Mode::None, None, LIMITS);
        assert!(p.suspended && p.outcome.is_none() && !p.continues());
    }

    #[test]
    fn g_15_stage_6_blocked_needs_no_verification() {
        let mut p = Pipeline::new(
            goal(),
            TurnFacts {
                proposal: Some(Proposal {
                    status: ProposedStatus::Blocked,
                    message: "need a key".into(),
                }),
                ..facts()
            },
        );
        assert!(!p.wants_verdict(Mode::Subagent));
        p.run(Mode::Subagent, None, LIMITS);
        assert_eq!(
            p.outcome,
            Some((GoalReason::WorkerReported, GoalActor::Model))
        );
    }

    #[test]
    fn g_15_stage_7_verification_outcomes() {
        let run = |mode, verdict| {
            let mut p = Pipeline::new(
                goal(),
                TurnFacts {
                    proposal: complete(),
                    ..facts()
                },
            );
            p.run(mode, verdict, LIMITS);
            p
        };
        assert_eq!(
            run(Mode::None, None).outcome.unwrap().0,
            GoalReason::WorkerProposal
        );
        assert_eq!(
            run(Mode::Subagent, Some(Verdict::Pass)).outcome.unwrap().0,
            GoalReason::VerifierMet
        );
        assert_eq!(
            run(Mode::Subagent, Some(Verdict::Partial))
                .outcome
                .unwrap()
                .0,
            GoalReason::VerifierPartial
        );
        assert_eq!(
            run(Mode::Evaluator, Some(Verdict::Error("x".into())))
                .outcome
                .unwrap()
                .0,
            GoalReason::VerifierError
        );
        let fail = run(
            Mode::Subagent,
            Some(Verdict::Fail {
                gaps: "- tests".into(),
            }),
        );
        assert!(fail.continues());
        assert_eq!(fail.next_prompt(), Nudge::Gaps("- tests".into()));
        // The same gaps five times in a row: no progress.
        let mut g = goal();
        g.counters.last_gaps = Some("- tests".into());
        g.counters.not_met_count = 4;
        let mut p = Pipeline::new(
            g,
            TurnFacts {
                proposal: complete(),
                ..facts()
            },
        );
        p.run(
            Mode::Subagent,
            Some(Verdict::Fail {
                gaps: "- tests".into(),
            }),
            LIMITS,
        );
        assert_eq!(p.outcome.unwrap().0, GoalReason::NoProgress);
    }

    #[test]
    fn g_15_stage_8_breaker_nudges_then_pauses_and_user_messages_reset_it() {
        let mut g = goal();
        let mut kinds = Vec::new();
        for _ in 0..3 {
            let mut p = Pipeline::new(
                g.clone(),
                TurnFacts {
                    final_reply: "same".into(),
                    ..facts()
                },
            );
            p.run(Mode::None, None, LIMITS);
            kinds.push((p.outcome.map(|o| o.0), p.nudge.clone()));
            g.counters = p.counters;
        }
        assert_eq!(kinds[0], (None, None));
        assert_eq!(kinds[1], (None, Some(Nudge::Repetition)));
        assert_eq!(kinds[2].0, Some(GoalReason::NoProgress));
        // After a completion claim the reason says so.
        let mut g = goal();
        g.counters = GoalCounters {
            repeated_replies: 2,
            last_reply: Some("same".into()),
            completion_claimed: true,
            ..Default::default()
        };
        let mut p = Pipeline::new(
            g.clone(),
            TurnFacts {
                final_reply: "same".into(),
                ..facts()
            },
        );
        p.run(Mode::None, None, LIMITS);
        assert_eq!(
            p.outcome.unwrap().0,
            GoalReason::NoProgressAfterCompletionClaim
        );
        // A user message resets the counters.
        let mut p = Pipeline::new(
            g,
            TurnFacts {
                final_reply: "same".into(),
                user_started: true,
                ..facts()
            },
        );
        p.run(Mode::None, None, LIMITS);
        assert!(p.continues());
        // Turns without tool calls count too.
        let mut g = goal();
        g.counters.toolless_turns = 2;
        let mut p = Pipeline::new(
            g,
            TurnFacts {
                used_tools: false,
                final_reply: "new".into(),
                ..facts()
            },
        );
        p.run(Mode::None, None, LIMITS);
        assert_eq!(p.outcome.unwrap().0, GoalReason::NoProgress);
    }

    #[test]
    fn every_fifth_continuation_is_an_audit() {
        let mut g = goal();
        g.counters.continuations = 4;
        let mut p = Pipeline::new(g, facts());
        p.run(Mode::None, None, LIMITS);
        assert_eq!(p.next_prompt(), Nudge::Audit);
    }

    #[test]
    fn g_15_stages_9_and_10_commit_and_continue() {
        use crate::goal::db::{Budgets, current_goal};
        use crate::store::Store;
        let store = Store::open_test().unwrap();
        store
            .write(1, |tx| {
                tx.create_session("s", "/ws", None, waymark_protocol::PermissionMode::Auto)?;
                tx.create_goal(
                    "g",
                    "s",
                    "o",
                    None,
                    Budgets {
                        tokens: Some(10),
                        ..Budgets::default()
                    },
                    GoalActor::User,
                )
            })
            .unwrap();
        let g = store.read(|c| current_goal(c, "s")).unwrap().unwrap();
        // Still active: counters written, the first continuation carries the contract.
        let mut p = Pipeline::new(g.clone(), facts());
        p.run(Mode::None, None, LIMITS);
        let (_, events) = store
            .write(2, |tx| {
                let mut g = commit(tx, &p)?;
                continuation(tx, &mut g, &p)
            })
            .unwrap();
        let admitted: Vec<String> = events
            .iter()
            .filter_map(|e| match &e.kind {
                waymark_protocol::EventKind::MessageAdmitted { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(admitted.len(), 1);
        assert!(admitted[0].contains("A goal is set for this session"));
        // Over budget: status written with its event, and the summary turn queued instead.
        let mut over = store.read(|c| current_goal(c, "s")).unwrap().unwrap();
        over.tokens_used = 50;
        let mut p = Pipeline::new(over, facts());
        p.run(Mode::None, None, LIMITS);
        let (_, events) = store
            .write(3, |tx| {
                let mut g = commit(tx, &p)?;
                continuation(tx, &mut g, &p)
            })
            .unwrap();
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.type_name()).collect();
        assert_eq!(kinds, ["goal.update", "message.admitted"]);
        let g = store.read(|c| current_goal(c, "s")).unwrap().unwrap();
        assert_eq!(
            (g.status, g.reason),
            (GoalStatus::BudgetLimited, GoalReason::Tokens)
        );
        assert!(g.counters.summary_due);
    }

    #[test]
    fn verdict_lines() {
        assert_eq!(parse_verdict("All good.\nVERDICT: PASS"), Verdict::Pass);
        assert_eq!(parse_verdict("x\n`VERDICT: PARTIAL`\n"), Verdict::Partial);
        assert_eq!(
            parse_verdict("- no tests\n- no docs\nVERDICT: FAIL"),
            Verdict::Fail {
                gaps: "- no tests\n- no docs".into()
            }
        );
        assert!(matches!(
            parse_verdict("looks fine to me"),
            Verdict::Error(_)
        ));
        assert!(matches!(parse_verdict(""), Verdict::Error(_)));
    }
}

//! Settlement (G-15): when a turn of an active goal ends, ten stages decide the goal's fate,
//! in this order, each able to stop the pipeline:
//!   1 usage · 2 staleness · 3 anomaly · 4 budget wrap-up · 5 dependencies ·
//!   6 blocked proposal · 7 verification · 8 breaker · 9 commit · 10 continuation.
//! Stages 1–8 are pure functions of the goal and the turn's facts (unit-tested one by one);
//! verification's verdict is obtained beforehand (it needs model calls); 9 and 10 write.

use super::Dimension;
use super::prompts::Nudge;
use crate::db::GoalWrites;
use crate::db::{GoalCounters, GoalRow};
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
    /// The goal's checks pass, but weaker than at its start (G-51): what changed.
    Weakened {
        findings: Vec<String>,
    },
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
    /// The turn's last step was a reply with text and no tool call.
    pub ended_with_reply: bool,
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
    /// The breaker counts turns without progress: the continuation ends with the nudge to
    /// change approach.
    pub stalled: bool,
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
        // A turn that did not run into a rate limit (or the day's cap) ends the run of
        // automatic resumes.
        if !matches!(
            facts.error_code.as_deref(),
            Some("rate_limited" | "spend_cap")
        ) {
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
            stalled: false,
            counters,
            usage_limit: None,
        }
    }

    /// 1 — usage: a dimension over budget stops the goal as `budget_limited(dimension)`.
    pub fn usage(&mut self) -> Flow {
        match super::exhausted(&super::report(&self.goal, super::Extra::default())) {
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
                Some("spend_cap") => GoalReason::SpendCap,
                // The next call could not be paid for within the goal's cost budget.
                Some("cost_budget") => GoalReason::Cost,
                // Declined, not failed: never settled as a normal turn, never retried.
                Some("provider_refusal") => GoalReason::ProviderRefusal,
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

    /// 4 — budget wrap-up: after a budget stop, one summary turn is scheduled, unless the
    /// model already wrote its summary: told by a refused call to reply with one (its grace,
    /// G-22), it ended the turn with a reply.
    pub fn budget_wrap_up(&mut self) -> Flow {
        if self.budget_stop.is_some() {
            let summarized = self.counters.grace_used > 0
                && self.facts.ended_with_reply
                && self.facts.reason == TurnEndReason::Completed;
            self.schedule_summary = !self.counters.summary_due && !summarized;
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

    /// Whether the turn proposed `complete`.
    pub fn claims_complete(&self) -> bool {
        matches!(
            self.proposal,
            Some(Proposal {
                status: ProposedStatus::Complete,
                ..
            })
        )
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
            Some(Verdict::Weakened { .. }) => {
                self.outcome = Some((GoalReason::ChecksWeakened, GoalActor::Runtime));
                Flow::Stop
            }
            Some(Verdict::Error(_)) | None => {
                self.outcome = Some((GoalReason::VerifierError, GoalActor::Runtime));
                Flow::Stop
            }
            Some(Verdict::Fail { gaps }) => {
                // Failing checks are the same gap while the same checks fail, whatever
                // their output says this time.
                let key = |g: &str| crate::checks::failing_key(g).to_string();
                let same = self.counters.last_gaps.as_deref().map(key) == Some(key(&gaps));
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
        // Turns in a row without progress (a reply said again, or no tool used): the nudge
        // goes after whatever the continuation says first.
        self.stalled = c.repeated_replies.saturating_sub(1).max(c.toolless_turns) > 0;
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
            // The day's cap lifts at the next local midnight (the engine says when).
            GoalReason::SpendCap => self.facts.resets_in_ms.unwrap_or(MAX_LIMIT_WAIT_MS),
            _ => return None,
        }
        .min(MAX_LIMIT_WAIT_MS);
        let lifts = matches!(reason, GoalReason::RateLimited | GoalReason::SpendCap);
        Some(UsageLimit {
            resets_at: self.facts.now_ms.saturating_add(wait as i64),
            from_provider: self.facts.resets_in_ms.is_some(),
            auto_resume: lifts && used < limits.auto_resumes,
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
    pub fn next_prompt(&self) -> Vec<Nudge> {
        // The primary prompt: the reviewer's gaps, the step limit, or the short one; every
        // fifth continuation is the audit, which no nudge crowds out; the no-progress nudge
        // goes last, added to whichever came first (G-21).
        let audit = (self.counters.continuations + 1).is_multiple_of(5);
        let mut parts = match (&self.nudge, audit) {
            (Some(n), true) => vec![n.clone(), Nudge::Audit],
            (Some(n), false) => vec![n.clone()],
            (None, true) => vec![Nudge::Audit],
            (None, false) => vec![Nudge::Plain],
        };
        if self.stalled {
            parts.push(Nudge::Repetition);
        }
        parts
    }
}

/// 9 — commit: the status change (with its `goal.update` event) and the counters, in the
/// caller's transaction.
pub fn commit(
    tx: &mut waymark_store::Tx<'_>,
    p: &Pipeline,
) -> waymark_extension::error::Result<GoalRow> {
    let mut g = p.goal.clone();
    g.counters = p.counters.clone();
    g.usage_limit = p.usage_limit;
    if let Some((reason, actor)) = p.outcome {
        super::lifecycle::transition(tx, &mut g, reason, actor, GoalUpdateKind::Completion)?;
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
    tx: &mut waymark_store::Tx<'_>,
    g: &mut GoalRow,
    p: &Pipeline,
) -> waymark_extension::error::Result<()> {
    if p.schedule_summary {
        let key = format!("{}{}:{}", super::lifecycle::SUMMARY_KEY, g.id, g.revision);
        super::lifecycle::enqueue(tx, g, &super::prompts::continuation_summary(), &key)?;
    }
    if p.continues() {
        super::lifecycle::continue_goal_with(tx, g, &p.next_prompt())?;
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
#[path = "settlement_tests.rs"]
mod tests;

//! A goal as people and the model read it: its budget report and the dimension that ran
//! out, its snapshot for the front ends, and the lines `/goal` and `waymark goal show` print.

use crate::db::GoalRow;
use crate::{check_records, wait_terms};
use waymark_extension::error::Result;
use waymark_protocol::{BudgetLine, BudgetReport, GoalReason, GoalSnapshot, GoalStatus};

/// Which budget dimension a `budget_limited` goal ran out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    Tokens,
    MainTurns,
    ActiveSeconds,
    /// Micro-dollars (G-32).
    Cost,
}

impl Dimension {
    /// The dimension a `budget_limited` reason names.
    pub fn of(reason: GoalReason) -> Option<Dimension> {
        match reason {
            GoalReason::Tokens => Some(Dimension::Tokens),
            GoalReason::MainTurns => Some(Dimension::MainTurns),
            GoalReason::ActiveSeconds => Some(Dimension::ActiveSeconds),
            GoalReason::Cost => Some(Dimension::Cost),
            GoalReason::Created
            | GoalReason::Resumed
            | GoalReason::BudgetRaised
            | GoalReason::Edited
            | GoalReason::VerifierMet
            | GoalReason::WorkerProposal
            | GoalReason::WorkerReported
            | GoalReason::UserRequested
            | GoalReason::NoProgress
            | GoalReason::NoProgressAfterCompletionClaim
            | GoalReason::VerifierPartial
            | GoalReason::VerifierError
            | GoalReason::TurnError
            | GoalReason::ProviderError
            | GoalReason::ProviderRefusal
            | GoalReason::AppClosed
            | GoalReason::RateLimited
            | GoalReason::QuotaExhausted
            | GoalReason::SpendCap
            | GoalReason::Waiting
            | GoalReason::Woke
            | GoalReason::WaitExpired
            | GoalReason::ChecksPassed
            | GoalReason::ChecksWeakened => None,
        }
    }

    pub fn reason(self) -> GoalReason {
        match self {
            Dimension::Tokens => GoalReason::Tokens,
            Dimension::MainTurns => GoalReason::MainTurns,
            Dimension::ActiveSeconds => GoalReason::ActiveSeconds,
            Dimension::Cost => GoalReason::Cost,
        }
    }
}

/// What a running turn has spent that its goal has not counted yet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extra {
    pub tokens: u64,
    pub turns: u64,
    pub ms: u64,
    pub cost: waymark_protocol::cost::Spend,
}

/// The budget report of a goal (G-7); `extra` adds usage not yet stored (the running turn).
pub fn report(g: &GoalRow, extra: Extra) -> BudgetReport {
    BudgetReport {
        tokens: BudgetLine::new(g.token_budget, g.tokens_used.saturating_add(extra.tokens)),
        main_turns: BudgetLine::new(g.turn_budget, g.turns_used.saturating_add(extra.turns)),
        active_seconds: BudgetLine::new(
            g.time_budget_ms.map(|ms| ms / 1000),
            g.active_ms.saturating_add(extra.ms) / 1000,
        ),
        cost: BudgetLine::new(
            g.cost_budget,
            g.cost.micros.saturating_add(extra.cost.micros),
        ),
        cost_unpriced_calls: g
            .cost
            .unpriced_calls
            .saturating_add(extra.cost.unpriced_calls),
    }
}

/// The first exhausted dimension, if any.
pub fn exhausted(r: &BudgetReport) -> Option<Dimension> {
    if r.tokens.reached {
        Some(Dimension::Tokens)
    } else if r.main_turns.reached {
        Some(Dimension::MainTurns)
    } else if r.active_seconds.reached {
        Some(Dimension::ActiveSeconds)
    } else if r.cost.reached {
        Some(Dimension::Cost)
    } else {
        None
    }
}

/// The snapshot front ends show, with the goal's checks and what weakened them.
pub fn snapshot_in(conn: &rusqlite::Connection, g: &GoalRow) -> Result<GoalSnapshot> {
    Ok(GoalSnapshot {
        checks: check_records::states(conn, &g.id)?,
        weakened: if g.reason == GoalReason::ChecksWeakened {
            check_records::findings(conn, &g.id)?
        } else {
            Vec::new()
        },
        ..snapshot(g)
    })
}

/// The snapshot of the goal row alone (no checks).
pub fn snapshot(g: &GoalRow) -> GoalSnapshot {
    let budget = report(g, Extra::default());
    GoalSnapshot {
        goal_id: g.id.clone(),
        objective: g.objective.clone(),
        criteria: g.criteria.clone(),
        status: g.status,
        reason: g.reason,
        actor: g.actor,
        revision: g.revision,
        question: g.question.clone(),
        usage_limit: g.usage_limit,
        steps: g.steps.clone(),
        wait: g.wait.clone(),
        over_budget: exhausted(&budget).is_some(),
        budget,
        checks: Vec::new(),
        weakened: Vec::new(),
    }
}

/// What a usage-limited goal waits for, as people read it at `now_ms`: when the limit
/// resets (with a countdown) and whether the goal resumes by itself then.
pub fn limit_line(s: &GoalSnapshot, now_ms: i64) -> Option<String> {
    use waymark_extension::clock::{span_label, utc_label};
    if s.status != GoalStatus::UsageLimited {
        return None;
    }
    let when = |l: &waymark_protocol::UsageLimit| {
        let left = l.resets_at.saturating_sub(now_ms);
        let source = if l.from_provider {
            "as the provider said"
        } else {
            "the provider named no time: backoff"
        };
        if left > 0 {
            format!(
                "resets at {} (in {}; {source})",
                utc_label(l.resets_at),
                span_label(left as u64)
            )
        } else {
            format!("reset at {} ({source})", utc_label(l.resets_at))
        }
    };
    Some(match (s.reason, s.usage_limit) {
        (GoalReason::QuotaExhausted, l) => format!(
            "Usage limit: the provider's quota or billing limit{}. It never resumes by itself: resume with /goal resume once the quota allows.",
            l.map(|l| format!(", which {}", when(&l)))
                .unwrap_or_default()
        ),
        (_, Some(l)) if l.auto_resume => format!(
            "Usage limit: {}. The goal resumes by itself then (automatic resume {} of {}). /goal resume resumes now; /goal pause cancels the automatic resume.",
            when(&l),
            l.auto_resumes_used + 1,
            l.auto_resumes_max
        ),
        (_, Some(l)) => {
            let why = if l.auto_resumes_used >= l.auto_resumes_max {
                format!(
                    "no automatic resumes left: {} in a row allowed",
                    l.auto_resumes_max
                )
            } else {
                "the automatic resume was cancelled".to_string()
            };
            format!(
                "Usage limit: {}. The goal does not resume by itself ({why}): resume it with /goal resume.",
                when(&l)
            )
        }
        (_, None) => {
            "Usage limit: the goal does not resume by itself: resume it with /goal resume.".into()
        }
    })
}

/// A passing count as people read it: `38/40 tests passing`, or the exit code alone.
fn check_result(r: &waymark_protocol::CheckResult) -> String {
    match (r.passed, r.failed) {
        (Some(p), Some(f)) => format!("{p}/{} tests passing", p.saturating_add(f)),
        _ => match r.exit_code {
            Some(0) => "passes".into(),
            Some(c) => format!("fails (exit {c})"),
            None => "did not finish".into(),
        },
    }
}

/// The goal's checks with their newest and first results, and what weakened them.
fn checks_lines(s: &GoalSnapshot) -> String {
    let mut out = String::new();
    for c in &s.checks {
        let state = match (c.runs.last(), &c.baseline) {
            (Some(l), Some(b)) => {
                format!("{} (at the start: {})", check_result(l), check_result(b))
            }
            (Some(l), None) => check_result(l),
            (None, Some(b)) => format!("{} at the start", check_result(b)),
            (None, None) => "not run yet".into(),
        };
        out.push_str(&format!("\nCheck: {} — {state}", c.command));
    }
    if !s.weakened.is_empty() {
        out.push_str("\nWeakened since the goal started:");
        for w in &s.weakened {
            out.push_str(&format!("\n  - {w}"));
        }
    }
    out
}

/// The goal as people read it at `now_ms`: objective, criteria, status, one line per budget,
/// and what a usage limit waits for.
pub fn describe(s: &GoalSnapshot, now_ms: i64) -> String {
    let line = |name: &str, l: BudgetLine| match l.limit {
        Some(limit) => format!(
            "  {name:<8} {} / {limit} ({} left){}",
            l.used,
            l.remaining.unwrap_or(0),
            if l.reached { " — reached" } else { "" }
        ),
        None => format!("  {name:<8} {} (no limit)", l.used),
    };
    let criteria = s
        .criteria
        .as_ref()
        .map(|c| format!("Criteria: {c}\n"))
        .unwrap_or_default();
    let question = s
        .question
        .as_ref()
        .map(|q| {
            format!(
                "\nThe agent asks: {q}\nAnswer with /goal reply <answer> (or `waymark goal reply`)."
            )
        })
        .unwrap_or_default();
    let mut limit = limit_line(s, now_ms)
        .map(|l| format!("\n{l}"))
        .unwrap_or_default();
    if let Some(w) = &s.wait {
        limit.push_str(&format!("\n{}", wait_terms::describe(w, now_ms)));
        if let Some(c) = &w.last_check {
            limit.push_str(&format!(
                "\nLast check: {} — {}",
                if c.passed { "passed" } else { "not yet" },
                c.line
            ));
        }
        limit.push_str("\nWake it now with /goal wake.");
    }
    limit.push_str(&checks_lines(s));
    format!(
        "Goal: {}\n{criteria}Status: {} ({}, by {})\n{}\n{}\n{}\n{}{question}{limit}",
        s.objective,
        s.status.as_str(),
        s.reason.as_str(),
        s.actor.as_str(),
        line("tokens", s.budget.tokens),
        line("turns", s.budget.main_turns),
        line("seconds", s.budget.active_seconds),
        cost_line(&s.budget)
    )
}

/// The cost line of `goal show` (G-32): spent, the budget and what is left, in dollars;
/// unknown when the goal's model had no price.
pub fn cost_line(b: &BudgetReport) -> String {
    use waymark_protocol::cost::{Spend, label};
    let spent = Spend {
        micros: b.cost.used,
        unpriced_calls: b.cost_unpriced_calls,
    }
    .label();
    match b.cost.limit {
        Some(limit) => format!(
            "  {:<8} {spent} / {} ({} left){}",
            "cost",
            label(limit),
            label(b.cost.remaining.unwrap_or(0)),
            if b.cost.reached { " — reached" } else { "" }
        ),
        None => format!("  {:<8} {spent} (no limit)", "cost"),
    }
}

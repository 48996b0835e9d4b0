//! Settlement, stage by stage (G-15), and usage-limit reset times.

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
        wait: None,
        wait_command: None,
        cost_budget: None,
        cost: Default::default(),
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
        ended_with_reply: false,
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
        (
            TurnEndReason::Error,
            Some("provider_refusal"),
            GoalReason::ProviderRefusal,
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
    assert_eq!(capped.next_prompt(), [Nudge::StepLimit]);
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
    assert_eq!(fail.next_prompt(), [Nudge::Gaps("- tests".into())]);
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
        kinds.push((
            p.outcome.map(|o| o.0),
            p.continues().then(|| p.next_prompt()),
        ));
        g.counters = p.counters;
    }
    assert_eq!(kinds[0], (None, Some(vec![Nudge::Plain])));
    // The reply said again: the nudge is added to the short prompt.
    assert_eq!(
        kinds[1],
        (None, Some(vec![Nudge::Plain, Nudge::Repetition]))
    );
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
            ended_with_reply: false,
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
    assert_eq!(p.next_prompt(), [Nudge::Audit]);
    // A nudge never crowds the audit out, and the no-progress nudge is added after both.
    let mut g = goal();
    g.counters.continuations = 9;
    g.counters.repeated_replies = 1;
    g.counters.last_reply = Some("same".into());
    let mut p = Pipeline::new(
        g,
        TurnFacts {
            final_reply: "same".into(),
            reason: TurnEndReason::StepCapped,
            ..facts()
        },
    );
    p.run(Mode::None, None, LIMITS);
    assert_eq!(
        p.next_prompt(),
        [Nudge::StepLimit, Nudge::Audit, Nudge::Repetition]
    );
}

#[test]
fn g_15_stages_9_and_10_commit_and_continue() {
    use crate::db::{Budgets, current_goal};
    let store = waymark_fixtures::store_with(&[std::sync::Arc::new(crate::GoalExtension)]);
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

//! Budgets tests.

#![allow(unused_imports)]

use super::*;
use waymark_runtime::goal::db::GoalTurnWrites;
use waymark_runtime::goal::db::GoalWrites;

use super::super::harness::{Harness, collect, finished, results, run, user, waiting_on};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use waymark_config::{Config, Verification};
use waymark_protocol::{
    Answer, EventKind, GoalReason, GoalSnapshot, GoalStatus, MessageSource, Op, PermissionMode,
    Position, QuestionnaireKind, ToolStatus, TurnEndReason,
};
use waymark_runtime::provider::ModelMessage;
use waymark_runtime::{Clock, SessionHandle};

#[tokio::test]
async fn g_22_token_budget_denials_then_one_summary_turn_without_tools() {
    let mut c = config(Verification::None);
    c.goal.budget.grace_steps = 1;
    let (h, rec) = Harness::recording(
        c,
        json!({"responses": [
            {"text": "big step", "usage": {"input_tokens": 900, "output_tokens": 200}, "tool_calls": [
                {"name": "list_dir", "arguments": {"path": "."}},
                {"name": "list_dir", "arguments": {"path": "."}},
                {"name": "list_dir", "arguments": {"path": "."}}
            ]},
            {"text": "Summary: listed the folder; nothing else done.", "usage": {"input_tokens": 50, "output_tokens": 20}}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    let ev = run(&s, user("/goal big job budget=1K")).await;
    let g = goal(&h, &s);
    assert_eq!(status(&g), (GoalStatus::BudgetLimited, GoalReason::Tokens));
    let r = results(&ev);
    let denials: Vec<&String> = r
        .iter()
        .filter(|x| x.1 == ToolStatus::Denied)
        .map(|x| &x.2)
        .collect();
    assert_eq!(
        denials.len(),
        3,
        "no tool runs after the budget is used up: {r:?}"
    );
    assert!(denials[0].contains("give") || denials[0].contains("short summary"));
    assert!(denials[1].contains("Tools are disabled") && denials[2].contains("Tools are disabled"));
    let reqs = rec.requests.lock().unwrap().clone();
    assert_eq!(
        reqs.len(),
        2,
        "one work call, then exactly one summary call"
    );
    assert!(reqs[1].tools.is_empty(), "the summary turn offers no tools");
    let ModelMessage::User { text, .. } = reqs[1]
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, ModelMessage::User { .. }))
        .unwrap()
    else {
        panic!()
    };
    assert!(text.contains("budget is used up"), "{text}");
    s.shutdown().await.unwrap();
}

/// Issue 38, item 8 (G-22): a budget spent in the middle of a turn gives the model its grace.
/// The next call is refused with "reply now with a short summary", the model **is** called
/// again in the same turn, and the summary it writes there is the last word: no separate
/// summary turn follows.
#[tokio::test]
async fn g_22_grace_the_model_is_called_again_and_writes_the_summary_itself() {
    let mut c = config(Verification::None);
    c.goal.budget.grace_steps = 1;
    let (h, rec) = Harness::recording(
        c,
        json!({"responses": [
            {"text": "big step", "usage": {"input_tokens": 900, "output_tokens": 200}, "tool_calls": [
                {"name": "write", "arguments": {"path": "a.txt", "content": "a"}}
            ]},
            {"text": "Summary: nothing written; the budget ran out.", "usage": {"input_tokens": 50, "output_tokens": 20}},
            {"text": "A summary turn that must never happen."}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    let ev = run(&s, user("/goal big job tokens=1K")).await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::BudgetLimited, GoalReason::Tokens)
    );
    let r = results(&ev);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("short summary"), "{r:?}");
    assert!(!h.ws.join("a.txt").exists());
    let reqs = rec.requests.lock().unwrap().clone();
    assert_eq!(
        reqs.len(),
        2,
        "the grace call, then nothing: {}",
        reqs.len()
    );
    assert!(
        !reqs[1].tools.is_empty(),
        "the grace call is in the same turn"
    );
    let replies: Vec<String> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AssistantMessage { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        replies.last().is_some_and(|t| t.starts_with("Summary:")),
        "{replies:?}"
    );
    s.shutdown().await.unwrap();
}

/// After its grace the model gets no further call in the turn: a second tool call is
/// refused with "Tools are disabled", and since it wrote no summary, the summary turn (no
/// tools offered) follows.
#[tokio::test]
async fn g_22_past_the_grace_tools_are_disabled_and_the_summary_turn_follows() {
    let mut c = config(Verification::None);
    c.goal.budget.grace_steps = 1;
    let (h, rec) = Harness::recording(
        c,
        json!({"responses": [
            {"text": "big step", "usage": {"input_tokens": 900, "output_tokens": 200}, "tool_calls": [
                {"name": "list_dir", "arguments": {"path": "."}}
            ]},
            {"text": "one more", "usage": {"input_tokens": 50, "output_tokens": 20}, "tool_calls": [
                {"name": "list_dir", "arguments": {"path": "."}}
            ]},
            {"text": "Summary: listed nothing.", "usage": {"input_tokens": 50, "output_tokens": 20}}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    let ev = run(&s, user("/goal big job tokens=1K")).await;
    let r = results(&ev);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[0].2.contains("short summary"), "{r:?}");
    assert!(r[1].2.contains("Tools are disabled"), "{r:?}");
    let reqs = rec.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 3, "work, grace, then the summary turn");
    assert!(reqs[2].tools.is_empty(), "the summary turn offers no tools");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_22_main_turns_budget() {
    let h = Harness::new(config(Verification::None));
    let script = json!({"responses": [work(1), work(2), work(3), {"text": "summary"}]});
    let (s, _) = set_goal(&h, script, Verification::None, "/goal keep going turns=2").await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::BudgetLimited, GoalReason::MainTurns)
    );
    assert_eq!(
        goal(&h, &s).budget.main_turns.used,
        3,
        "two work turns and the summary turn"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_6_g_22_active_seconds_budget_with_an_injected_clock() {
    let h = Harness::new(config(Verification::None));
    let rt = h.reopen(|o| o.clock = Arc::new(Ticking(AtomicI64::new(1_000_000))));
    let script = h.script(json!({"responses": [work(1)], "when_exhausted": "repeat_last"}));
    let s = rt
        .create_session(waymark_runtime::SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(script),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    run(&s, user("/goal keep busy time=30s")).await;
    let g = rt.goal(s.id()).unwrap().unwrap();
    assert_eq!(
        (g.status, g.reason),
        (GoalStatus::BudgetLimited, GoalReason::ActiveSeconds)
    );
    assert!(g.budget.active_seconds.used >= 30);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_3_raising_the_exhausted_dimension_reactivates_raising_another_does_not() {
    let h = Harness::new(config(Verification::None));
    let script =
        json!({"responses": [{"text": "did one step"}, {"text": "summary"}, claim("done")]});
    let (s, _) = set_goal(
        &h,
        script,
        Verification::None,
        "/goal stepwise turns=1 budget=500K",
    )
    .await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::BudgetLimited, GoalReason::MainTurns)
    );
    run(&s, user("/goal budget=900K")).await;
    assert_eq!(
        goal(&h, &s).status,
        GoalStatus::BudgetLimited,
        "raising tokens does not lift a turn limit"
    );
    run(&s, user("/goal turns=clear")).await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::Complete, GoalReason::WorkerProposal)
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_6_verifier_tokens_count_toward_the_goal() {
    let h = Harness::new(config(Verification::Evaluator));
    let script = json!({"responses": [{"text": "c", "usage": {"input_tokens": 100, "output_tokens": 10}, "tool_calls": [{"name": "update_goal", "arguments": {"mode": "status", "status": "complete"}}]}],
        "verifier": [{"text": "VERDICT: PASS", "usage": {"input_tokens": 1000, "output_tokens": 5}}]});
    let (s, _) = set_goal(&h, script, Verification::Evaluator, "/goal count").await;
    assert_eq!(goal(&h, &s).budget.tokens.used, 110 + 1005);
    s.shutdown().await.unwrap();
}

/// G-6 (issue 38, item 6): a goal turn that waits ten minutes on a permission question adds
/// none of them to the goal's active time; the work around the wait counts.
#[tokio::test]
async fn g_6_a_turn_waiting_on_a_permission_question_adds_no_active_time() {
    use waymark_runtime::ManualClock;
    let h = Harness::new(config(Verification::None));
    let clock = ManualClock::new(1_000_000);
    let rt = h.reopen(|o| o.clock = clock.clone());
    let s = super::super::harness::session_on(
        &h,
        &rt,
        &h.ws,
        json!({"responses": [
            {"text": "writing", "tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "a"}}]},
            {"text": "done"}
        ]}),
        PermissionMode::Ask,
    );
    let ev = run(&s, user("/goal write a file time=1h")).await;
    let q = waiting_on(&ev);
    // Ten minutes on the question, then the user allows it.
    clock.advance_ms(600_000);
    let answered = rt.goal(s.id()).unwrap().unwrap();
    assert!(
        answered.budget.active_seconds.used < 60,
        "the gauge counts the wait while it lasts: {}",
        answered.budget.active_seconds.used
    );
    run(
        &s,
        Op::Answer {
            questionnaire_id: q,
            answer: Answer::AllowOnce,
        },
    )
    .await;
    let g = rt.goal(s.id()).unwrap().unwrap();
    assert!(h.ws.join("a.txt").exists());
    assert!(g.budget.main_turns.used >= 1, "the turn is counted");
    assert!(
        g.budget.active_seconds.used < 60,
        "the 600 s wait is not counted: {}",
        g.budget.active_seconds.used
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_6_time_while_closed_does_not_count() {
    use waymark_protocol::GoalActor;
    use waymark_runtime::ManualClock;
    use waymark_runtime::goal::db::Budgets;
    let h = Harness::new(config(Verification::None));
    let s = h.session(json!({"responses": []}), PermissionMode::Auto);
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    // A goal turn that was running when the process died an hour before the reopen.
    h.runtime
        .store()
        .write(1_000_000, |tx| {
            tx.create_goal(
                "g1",
                &id,
                "survive",
                None,
                Budgets {
                    time_ms: Some(600_000),
                    ..Budgets::default()
                },
                GoalActor::User,
            )?;
            let (m, _) = tx.insert_message(
                &id,
                MessageSource::Goal,
                "continue",
                Position::Tail,
                Some("goal-cont:g1:1:1"),
            )?;
            let t = tx.start_turn(&id, m.id)?;
            tx.set_turn_goal(t, "g1", 1, false)?;
            // The process that held the session is gone.
            tx.acquire_lease(&id, "dead-process", 2_000_000_000, 30_000, &|_| false)?;
            Ok::<_, waymark_runtime::Error>(())
        })
        .unwrap();
    let clock = ManualClock::new(1_000_000 + 3_600_000);
    let rt = h.reopen(|o| o.clock = clock.clone());
    let s = rt
        .open_session(&id, waymark_runtime::SessionSpec::default())
        .unwrap();
    let g = rt.goal(&id).unwrap().unwrap();
    assert_eq!(
        (g.status, g.reason),
        (GoalStatus::Paused, GoalReason::AppClosed)
    );
    assert_eq!(
        g.budget.active_seconds.used, 0,
        "the hour the app was closed is not counted"
    );
    assert_eq!(g.budget.main_turns.used, 1);
    s.shutdown().await.unwrap();
}

/// Issue 37, item 3: a call the budget guard would refuse is never asked about. In `ask`
/// mode, once the tokens are used up, a write is refused at once; no permission question
/// is opened that an "Allow" would answer with "denied".
#[tokio::test]
async fn a_call_the_budget_refuses_is_never_asked_about() {
    let mut c = config(Verification::None);
    c.goal.budget.grace_steps = 1;
    let (h, _rec) = Harness::recording(
        c,
        json!({"responses": [
            {"text": "big step", "usage": {"input_tokens": 900, "output_tokens": 200}, "tool_calls": [
                {"name": "write", "arguments": {"path": "a.txt", "content": "a"}}
            ]},
            {"text": "Summary: nothing written.", "usage": {"input_tokens": 50, "output_tokens": 20}}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Ask);
    let ev = run(&s, user("/goal big job budget=1K")).await;
    let asked = super::super::harness::permission_asked(&ev);
    assert!(
        asked.is_none(),
        "asked about a call the budget refuses: {asked:?}"
    );
    let r = results(&ev);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("budget"), "{r:?}");
    assert!(!h.ws.join("a.txt").exists());
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::BudgetLimited, GoalReason::Tokens)
    );
    s.shutdown().await.unwrap();
}

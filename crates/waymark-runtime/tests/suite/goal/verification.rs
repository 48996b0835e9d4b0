//! Verification tests.

#![allow(unused_imports)]

use super::*;

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
async fn g_17_complete_by_worker_proposal_without_verification() {
    let h = Harness::new(config(Verification::None));
    let (s, _) = set_goal(
        &h,
        json!({"responses": [work(1), claim("done")]}),
        Verification::None,
        "/goal make it so",
    )
    .await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::Complete, GoalReason::WorkerProposal)
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_18_complete_when_the_verifier_passes() {
    let h = Harness::new(config(Verification::Subagent));
    let script = json!({"responses": [claim("all tests pass")], "verifier": [
        {"text": "Let me look.", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        {"text": "Everything is in place.\nVERDICT: PASS"}
    ]});
    let (s, _) = set_goal(
        &h,
        script,
        Verification::Subagent,
        "/goal finish the feature",
    )
    .await;
    let g = goal(&h, &s);
    assert_eq!(status(&g), (GoalStatus::Complete, GoalReason::VerifierMet));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_18_g_21_a_failed_check_sends_the_gaps_then_a_pass_completes() {
    let (h, rec) = Harness::recording(
        config(Verification::Subagent),
        json!({"responses": [claim("first try"), work(2), claim("second try")], "verifier": [
            {"text": "- the README is missing\nVERDICT: FAIL"},
            {"text": "VERDICT: PASS"}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    run(&s, user("/goal ship it")).await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::Complete, GoalReason::VerifierMet)
    );
    let reqs = rec.requests.lock().unwrap().clone();
    let gap_turn = reqs.iter().find(|r| {
        r.messages.iter().any(|m| matches!(m, ModelMessage::User { text, .. } if text.contains("Gaps:") && text.contains("the README is missing")))
    });
    assert!(
        gap_turn.is_some(),
        "the next continuation carries the gap list"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_18_the_same_gaps_five_times_is_no_progress() {
    let mut c = config(Verification::Subagent);
    c.goal.breaker.repeated_reply_limit = 50;
    let h = Harness::new(c);
    let script = json!({"responses": [claim("done")], "verifier": [{"text": "- no tests\nVERDICT: FAIL"}], "when_exhausted": "repeat_last"});
    let (s, _) = set_goal(&h, script, Verification::Subagent, "/goal add tests").await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::Paused, GoalReason::NoProgress)
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_18_partial_and_malformed_verdicts_pause() {
    for (verdict, reason) in [
        ("Half of it.\nVERDICT: PARTIAL", GoalReason::VerifierPartial),
        ("I think it is fine.", GoalReason::VerifierError),
    ] {
        let h = Harness::new(config(Verification::Subagent));
        let script = json!({"responses": [claim("done")], "verifier": [{"text": verdict}]});
        let (s, _) = set_goal(&h, script, Verification::Subagent, "/goal something").await;
        assert_eq!(status(&goal(&h, &s)), (GoalStatus::Paused, reason));
        s.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn g_19_the_evaluator_is_one_call_without_tools() {
    let (h, rec) = Harness::recording(
        config(Verification::Evaluator),
        json!({"responses": [claim("done")], "verifier": [{"text": "VERDICT: PASS"}]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    run(&s, user("/goal x")).await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::Complete, GoalReason::VerifierMet)
    );
    let reqs = rec.requests.lock().unwrap().clone();
    let verifier: Vec<_> = reqs
        .iter()
        .filter(|r| r.purpose == waymark_runtime::provider::CallPurpose::Verifier)
        .collect();
    assert_eq!(verifier.len(), 1);
    assert!(verifier[0].tools.is_empty());
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_20_identical_replies_pause_for_no_progress() {
    let h = Harness::new(config(Verification::None));
    let script = json!({"responses": [{"text": "I am working on it.", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}, {"text": "Still on it."}], "when_exhausted": "repeat_last"});
    let (s, _) = set_goal(&h, script, Verification::None, "/goal loop").await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::Paused, GoalReason::NoProgress)
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_20_repetition_after_a_completion_claim() {
    let mut c = config(Verification::Subagent);
    c.goal.verifier.repeated_not_met_limit = 50;
    let h = Harness::new(c);
    let script = json!({"responses": [claim("done"), {"text": "It is done."}], "verifier": [{"text": "- nothing works\nVERDICT: FAIL"}], "when_exhausted": "repeat_last"});
    let (s, _) = set_goal(&h, script, Verification::Subagent, "/goal claim").await;
    assert_eq!(
        status(&goal(&h, &s)),
        (
            GoalStatus::Paused,
            GoalReason::NoProgressAfterCompletionClaim
        )
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_16_verification_follows_the_route_unless_configured() {
    // Managed route (the scripted model): the subagent checks the claim.
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [claim("done")], "verifier": [{"text": "VERDICT: PASS"}]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    run(&s, user("/goal x")).await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::Complete, GoalReason::VerifierMet)
    );
    s.shutdown().await.unwrap();
    drop(rec);
    // The user's own key: no verification, so the bill is not doubled.
    let (h, rec) = Harness::recording(Config::default(), json!({"responses": [claim("done")]}));
    *rec.route.lock().unwrap() = waymark_protocol::RouteKind::OwnKey;
    let s = h.recorded_session(PermissionMode::Auto);
    run(&s, user("/goal x")).await;
    assert_eq!(
        status(&goal(&h, &s)),
        (GoalStatus::Complete, GoalReason::WorkerProposal)
    );
    assert!(
        rec.requests
            .lock()
            .unwrap()
            .iter()
            .all(|r| r.purpose == waymark_runtime::provider::CallPurpose::Main)
    );
    s.shutdown().await.unwrap();
}

/// G-43 (issue 38, item 11): `goal.evaluator_model` runs the evaluator check on another
/// model. The session's own model would fail the claim; the evaluator's model passes it, so
/// the goal completes by its verdict. A model that cannot be used pauses the goal, saying
/// which setting names it.
#[tokio::test]
async fn g_43_the_evaluator_runs_on_the_model_goal_evaluator_model_names() {
    let mut c = config(Verification::Evaluator);
    let h = Harness::new(c.clone());
    let evaluator =
        h.script(json!({"responses": [], "verifier": [{"text": "Checked.\nVERDICT: PASS"}]}));
    c.goal.evaluator_model = Some(evaluator);
    let rt = h.reopen(|o| o.config = c.clone());
    let own = json!({"responses": [work(1), claim("done")],
        "verifier": [{"text": "- nothing done\nVERDICT: FAIL"}], "when_exhausted": "repeat_last"});
    let s = super::super::harness::session_on(&h, &rt, &h.ws, own.clone(), PermissionMode::Auto);
    run(&s, user("/goal make it so")).await;
    let g = rt.goal(s.id()).unwrap().unwrap();
    assert_eq!(status(&g), (GoalStatus::Complete, GoalReason::VerifierMet));
    s.shutdown().await.unwrap();

    c.goal.evaluator_model = Some("nowhere:model".into());
    let rt = h.reopen(|o| o.config = c.clone());
    let s = super::super::harness::session_on(&h, &rt, &h.ws, own, PermissionMode::Auto);
    run(&s, user("/goal make it so")).await;
    let g = rt.goal(s.id()).unwrap().unwrap();
    assert_eq!(status(&g), (GoalStatus::Paused, GoalReason::VerifierError));
    s.shutdown().await.unwrap();
}

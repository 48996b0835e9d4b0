//! Item 3: the goal's verifier is a guarded, visible agent: the same guard chain under a
//! read-only policy, every call logged with actor `verifier`, its usage counted toward the
//! goal, and Stop ends it within a second.

use super::super::harness::{Harness, run, user};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use waymark_config::{Config, Verification};
use waymark_protocol::{CallActor, Event, EventKind, GoalReason, Op, PermissionMode, ToolStatus};

fn config() -> Config {
    let mut c = Config::default();
    c.goal.verification = Some(Verification::Subagent);
    c
}

fn claim() -> Value {
    json!({"text": "Done.", "usage": {"input_tokens": 100, "output_tokens": 10}, "tool_calls": [
        {"name": "update_goal", "arguments": {"mode": "status", "status": "complete", "message": "all done"}}
    ]})
}

fn verifier_calls(events: &[Event]) -> Vec<(String, Option<(ToolStatus, String)>)> {
    let mut out: Vec<(String, Option<(ToolStatus, String)>)> = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::ToolCall {
                name,
                actor: CallActor::Verifier,
                ..
            } => out.push((name.clone(), None)),
            EventKind::ToolResult {
                name,
                status,
                content,
                actor: CallActor::Verifier,
                ..
            } => {
                if let Some(slot) = out.iter_mut().rev().find(|(n, r)| n == name && r.is_none()) {
                    slot.1 = Some((*status, content.clone()));
                }
            }
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn the_verifier_goes_through_the_guards_and_is_logged() {
    let h = Harness::new(config());
    std::fs::write(h.ws.join("a.txt"), "content\n").unwrap();
    let marker = h.ws.join("verifier-wrote-this");
    let script = json!({"responses": [claim()], "verifier": [
        {"text": "Checking.", "usage": {"input_tokens": 1000, "output_tokens": 50}, "tool_calls": [
            {"name": "bash", "arguments": {"command": format!("touch {}; cat a.txt", marker.display())}},
            {"name": "write", "arguments": {"path": "a.txt", "content": "changed by the verifier"}},
            {"name": "update_goal", "arguments": {"mode": "status", "status": "complete", "message": "me too"}},
            {"name": "read_file", "arguments": {"path": "a.txt"}}
        ]},
        {"text": "Looks right.\nVERDICT: PASS", "usage": {"input_tokens": 2000, "output_tokens": 20}}
    ]});
    let s = h.session(script, PermissionMode::Auto);
    let ev = run(&s, user("/goal finish it")).await;
    let calls = verifier_calls(&h.runtime.events(s.id(), 0, 10_000).unwrap());
    let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["bash", "write", "update_goal", "read_file"],
        "{calls:?}"
    );
    let result = |i: usize| calls[i].1.clone().unwrap();
    // The shell ran in the goal's scratch layer: the write inside the command landed there
    // and the workspace has none of it; the read worked.
    assert!(
        result(0).1.contains("content") && result(0).1.contains("[exit code: 0]"),
        "{:?}",
        result(0)
    );
    assert!(!marker.exists());
    assert_eq!(result(1).0, ToolStatus::Denied);
    assert_eq!(result(2).0, ToolStatus::Denied);
    assert_eq!(result(3).0, ToolStatus::Ok);
    assert_eq!(
        std::fs::read_to_string(h.ws.join("a.txt")).unwrap(),
        "content\n"
    );
    // Its tokens count toward the goal.
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(g.reason, GoalReason::VerifierMet, "{g:?}");
    assert!(
        g.budget.tokens.used >= 110 + 1050 + 2020,
        "{:?}",
        g.budget.tokens
    );
    let _ = ev;
    s.shutdown().await.unwrap();
}

/// The budget guard stops the verifier's tools once the goal's budget is spent.
#[tokio::test]
async fn the_budget_guard_holds_the_verifier_too() {
    let h = Harness::new(config());
    let script = json!({"responses": [claim(), {"text": "summary"}], "verifier": [
        {"text": "Checking.", "usage": {"input_tokens": 5000, "output_tokens": 0}, "tool_calls": [
            {"name": "read_file", "arguments": {"path": "a.txt"}}
        ]},
        {"text": "VERDICT: PASS"}
    ]});
    std::fs::write(h.ws.join("a.txt"), "x\n").unwrap();
    let s = h.session(script, PermissionMode::Auto);
    run(&s, user("/goal finish it budget=1K")).await;
    let calls = verifier_calls(&h.runtime.events(s.id(), 0, 10_000).unwrap());
    assert_eq!(calls.len(), 1, "{calls:?}");
    let (status, content) = calls[0].1.clone().unwrap();
    assert_eq!(status, ToolStatus::Denied, "{content}");
    assert!(content.contains("budget"), "{content}");
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(g.reason, GoalReason::Tokens, "{g:?}");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn stop_ends_the_verifier_within_a_second() {
    let h = Harness::new(config());
    let script = json!({"responses": [claim()], "verifier": [
        {"text": "Running the suite.", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
        {"text": "VERDICT: PASS"}
    ]});
    let s = h.session(script, PermissionMode::Auto);
    let mut rx = s.subscribe();
    s.submit(user("/goal finish it")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    loop {
        if let EventKind::ToolCall {
            actor: CallActor::Verifier,
            ..
        } = rx.recv().await.unwrap().kind
        {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    s.submit(Op::Stop).await.unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "Stop took {took:?}");
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(g.reason, GoalReason::UserRequested, "{g:?}");
    s.shutdown().await.unwrap();
}

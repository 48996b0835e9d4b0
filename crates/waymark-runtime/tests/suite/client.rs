//! The client seam (issue 40, step 6): submit, then follow the session until it settles,
//! with a typed rest. The CLI's `exec` and the desktop follow sessions through it; each of
//! the ways a run comes to rest is driven here as a front end sees it.

use super::harness::{Harness, user};
use serde_json::{Value, json};
use waymark_config::{Config, Verification};
use waymark_protocol::{GoalReason, GoalStatus, PermissionMode};
use waymark_runtime::SessionHandle;
use waymark_runtime::client::{Follow, Progress, Settled, submit_and_follow};

/// Submits `text` to a held session and follows it to its first rest: the rest, and the
/// types of the events seen before it.
async fn to_rest(h: &Harness, s: &SessionHandle, text: &str) -> (Settled, Vec<&'static str>) {
    let (follow, _) = submit_and_follow(s, Some(user(text)))
        .await
        .map_err(|(_, e)| e)
        .unwrap();
    rest_of(h, follow).await
}

async fn rest_of(h: &Harness, mut follow: Follow) -> (Settled, Vec<&'static str>) {
    let goal_of = h.runtime.goal_of();
    let mut seen = Vec::new();
    loop {
        match follow.next(&goal_of).await.unwrap() {
            Progress::Event(e) => seen.push(e.kind.type_name()),
            Progress::Settled(s) => return (s, seen),
            other => panic!("the session did not settle: {other:?} after {seen:?}"),
        }
    }
}

fn held(h: &Harness, responses: Value, mode: PermissionMode) -> SessionHandle {
    h.held_session(json!({ "responses": responses }), mode)
}

#[tokio::test]
async fn a_turn_that_ends_well_settles_idle() {
    let h = Harness::new(Config::default());
    let s = held(&h, json!([{"text": "hello"}]), PermissionMode::Ask);
    let (rest, seen) = to_rest(&h, &s, "hi").await;
    assert_eq!(rest, Settled::Idle { failure: None });
    // Everything before the rest came through, in order.
    let at = |t: &str| seen.iter().position(|s| *s == t).unwrap();
    assert!(at("turn.started") < at("turn.finished"), "{seen:?}");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_failed_turn_settles_idle_with_its_error() {
    let h = Harness::new(Config::default());
    let s = held(&h, json!([{"error": "bad_response"}]), PermissionMode::Ask);
    let (rest, _) = to_rest(&h, &s, "hi").await;
    let Settled::Idle { failure: Some(e) } = rest else {
        panic!("{rest:?}");
    };
    assert_eq!(e.code, "bad_response");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_question_settles_waiting_on_it_and_the_answer_follows_on() {
    let h = Harness::new(Config::default());
    let s = held(
        &h,
        json!([
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "a"}}]},
            {"text": "written"}
        ]),
        PermissionMode::Ask,
    );
    let (rest, _) = to_rest(&h, &s, "write it").await;
    let Settled::Waiting { questionnaire_id } = rest else {
        panic!("{rest:?}");
    };
    // Answered (from anywhere), the same follower sees the session run on and rest again.
    let follow = Follow::on(&s);
    s.submit(waymark_protocol::Op::Answer {
        questionnaire_id,
        answer: waymark_protocol::Answer::AllowOnce,
    })
    .await
    .unwrap();
    let (rest, seen) = rest_of(&h, follow).await;
    assert_eq!(rest, Settled::Idle { failure: None }, "{seen:?}");
    assert!(seen.contains(&"tool.result"), "{seen:?}");
    assert_eq!(std::fs::read_to_string(h.ws.join("a.txt")).unwrap(), "a");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_goal_out_of_budget_settles_finished_with_its_reason() {
    let mut c = Config::default();
    c.goal.verification = Some(Verification::None);
    c.goal.budget.grace_steps = 1;
    let h = Harness::new(c);
    let s = held(
        &h,
        json!([
            {"text": "big step", "usage": {"input_tokens": 900, "output_tokens": 200},
             "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
            {"text": "Summary: listed the folder.", "usage": {"input_tokens": 50, "output_tokens": 20}}
        ]),
        PermissionMode::Auto,
    );
    let (rest, seen) = to_rest(&h, &s, "/goal big job budget=1K").await;
    let Settled::Finished { goal, failure } = rest else {
        panic!("{rest:?} after {seen:?}");
    };
    assert_eq!(
        (goal.status, goal.reason),
        (GoalStatus::BudgetLimited, GoalReason::Tokens)
    );
    assert_eq!(failure, None);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_session_lists_its_slash_commands() {
    let h = Harness::new(Config::default());
    let s = held(&h, json!([]), PermissionMode::Ask);
    let names: Vec<&str> = waymark_runtime::client::commands(&s)
        .iter()
        .map(|c| c.name)
        .collect();
    for expected in ["compact", "goal", "plan", "rewind", "mcp", "help"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_goal_that_cannot_be_read_never_loses_the_event_that_showed_the_rest() {
    let h = Harness::new(Config::default());
    let s = held(&h, json!([{"text": "hello"}]), PermissionMode::Ask);
    let (mut follow, _) = submit_and_follow(&s, Some(user("hi")))
        .await
        .map_err(|(_, e)| e)
        .unwrap();
    let broken = |_: &str| -> waymark_runtime::Result<Option<waymark_protocol::GoalSnapshot>> {
        Err(waymark_runtime::Error::Corrupt(
            "the goals table is unreadable".into(),
        ))
    };
    // The idle event comes through first; the error is the next thing the follower says.
    loop {
        match follow.next(&broken).await {
            Ok(Progress::Event(e)) if e.kind.type_name() == "session.idle" => break,
            Ok(Progress::Event(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    let e = follow.next(&broken).await.unwrap_err();
    assert_eq!(e.code(), "corrupt_data");
    s.shutdown().await.unwrap();
}

//! Item 1: a permission answer binds to exactly one call.

use super::super::harness::{results, run, waiting_on};
use super::{harness, openai_session, openai_stream};
use waymark_protocol::{Answer, Op, PermissionMode, ToolStatus};

fn answer(q: &str, a: Answer) -> Op {
    Op::Answer {
        questionnaire_id: q.to_string(),
        answer: a,
    }
}

/// A provider that sends no call ids (or the same one every time) must not get a second
/// command run on the strength of one "allow once".
#[tokio::test]
async fn one_allow_once_runs_one_call_when_the_provider_sends_no_ids() {
    let h = harness();
    let marker = h.ws.join("second-ran");
    let second = format!("{{\"command\":\"touch {}\"}}", marker.display());
    let (server, _rt, s) = openai_session(
        &h,
        vec![
            openai_stream("", &[("", "bash", r#"{"command":"echo first"}"#)]),
            openai_stream("", &[("", "bash", &second)]),
            openai_stream(
                "",
                &[
                    ("dup", "bash", r#"{"command":"echo third"}"#),
                    ("dup", "bash", r#"{"command":"echo fourth"}"#),
                ],
            ),
            openai_stream("done", &[]),
        ],
        PermissionMode::Ask,
    )
    .await;
    let ev = run(&s, super::super::harness::user("go")).await;
    let q1 = waiting_on(&ev);
    let ev = run(&s, answer(&q1, Answer::AllowOnce)).await;
    let q2 = waiting_on(&ev);
    assert_ne!(q1, q2, "the second call asks on its own");
    assert!(!marker.exists(), "the second command ran without asking");
    let ev = run(&s, answer(&q2, Answer::Deny { message: None })).await;
    // Two calls in one reply with the same provider id: each asks.
    let q3 = waiting_on(&ev);
    let ev = run(&s, answer(&q3, Answer::AllowOnce)).await;
    let q4 = waiting_on(&ev);
    assert_ne!(q3, q4, "a repeated provider id does not share an answer");
    let ev = run(&s, answer(&q4, Answer::AllowOnce)).await;
    let r = results(&ev);
    assert!(r.iter().all(|(_, st, _)| *st == ToolStatus::Ok), "{r:?}");
    assert!(!marker.exists());
    // On the wire, every call id the model is sent is unique and results point at them.
    let last = &server.recorded()[3].body;
    let mut ids = Vec::new();
    for m in last["messages"].as_array().unwrap() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            ids.push(c["id"].as_str().unwrap().to_string());
        }
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), 4);
    assert_eq!(unique.len(), ids.len(), "wire ids are unique: {ids:?}");
    for m in last["messages"].as_array().unwrap() {
        if m["role"] == "tool" {
            assert!(ids.contains(&m["tool_call_id"].as_str().unwrap().to_string()));
        }
    }
    s.shutdown().await.unwrap();
}

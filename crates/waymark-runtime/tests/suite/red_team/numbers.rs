//! Item 8: numbers from the model cannot overflow, and no panic is reachable from them.

use super::super::harness::{finished, results, run, user};
use super::super::mock_server::MockResponse;
use super::{harness, openai_session, openai_stream};
use serde_json::json;
use waymark_protocol::{EventKind, PermissionMode, ToolStatus, TurnEndReason};

/// A reply claiming u64::MAX tokens is a `bad_response`, not arithmetic; the session goes on.
#[tokio::test]
async fn absurd_usage_from_the_wire_is_a_bad_response() {
    let h = harness();
    let huge = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":18446744073709551615,\"completion_tokens\":18446744073709551615}}\n\n",
        "data: [DONE]\n\n"
    );
    let negative = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":1e300}}\n\n",
        "data: [DONE]\n\n"
    );
    let (_server, _rt, s) = openai_session(
        &h,
        vec![
            MockResponse::sse(huge),
            MockResponse::sse(negative),
            openai_stream("fine", &[]),
        ],
        PermissionMode::Auto,
    )
    .await;
    for _ in 0..2 {
        let ev = run(&s, user("go")).await;
        let (reason, code) = finished(&ev).pop().unwrap();
        assert_eq!(reason, TurnEndReason::Error);
        assert_eq!(code.as_deref(), Some("bad_response"));
        let msg = ev
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::TurnFinished { error: Some(e), .. } => Some(e.message.clone()),
                _ => None,
            })
            .unwrap();
        assert!(msg.contains("absurd usage"), "{msg}");
    }
    let ev = run(&s, user("again")).await;
    assert_eq!(finished(&ev), vec![(TurnEndReason::Completed, None)]);
    let snap = h.runtime.snapshot(s.id()).unwrap();
    assert!(snap.usage.input_tokens < 1_000_000, "{:?}", snap.usage);
    s.shutdown().await.unwrap();
}

/// Tool arguments at the edges of their integer types are refused or clamped with a clear
/// message; none of them panics the turn (which would then be retried in a loop).
#[tokio::test]
async fn extreme_numbers_in_tool_arguments_never_panic() {
    let h = harness();
    std::fs::write(h.ws.join("a.txt"), "one\ntwo\n").unwrap();
    let max = u64::MAX;
    let calls = json!([
        {"name": "read_file", "arguments": {"path": "a.txt", "offset": max, "limit": max}},
        {"name": "read_file", "arguments": {"path": "a.txt", "offset": 2, "limit": max}},
        {"name": "create_goal", "arguments": {"objective": "x", "time_budget_seconds": max}},
        {"name": "create_goal", "arguments": {"objective": "x", "token_budget": max}},
        {"name": "create_goal", "arguments": {"objective": "x", "turn_budget": 1e300}},
        {"name": "apply_patch", "arguments": {"patch": format!("--- a/a.txt\n+++ b/a.txt\n@@ -{max},{max} +{max},{max} @@\n one\n-two\n+2\n")}},
        {"name": "apply_patch", "arguments": {"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -99999999999999999999999 +1 @@\n-one\n+1\n"}},
    ]);
    let s = h.session(
        json!({"responses": [{"tool_calls": calls}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("go")).await;
    assert_eq!(finished(&ev), vec![(TurnEndReason::Completed, None)]);
    let r = results(&ev);
    assert_eq!(r.len(), 7, "{r:?}");
    assert!(r[0].2.contains("past the end"), "{:?}", r[0]);
    assert_eq!(r[1].1, ToolStatus::Ok);
    assert!(r[1].2.contains("two"), "{:?}", r[1]);
    for i in [2, 3] {
        assert_eq!(r[i].1, ToolStatus::Error, "{:?}", r[i]);
        assert!(r[i].2.contains("must be between 1 and"), "{:?}", r[i]);
    }
    assert_eq!(r[4].1, ToolStatus::Error);
    // A hunk whose line numbers are absurd is still found by its content (drift tolerance),
    // and one whose numbers do not fit is refused.
    assert_eq!(r[5].1, ToolStatus::Ok, "{:?}", r[5]);
    assert_eq!(r[6].1, ToolStatus::Error, "{:?}", r[6]);
    assert!(r[6].2.contains("hunk header"), "{:?}", r[6]);
    assert_eq!(
        std::fs::read_to_string(h.ws.join("a.txt")).unwrap(),
        "one\n2\n"
    );
    assert!(h.runtime.goal(s.id()).unwrap().is_none());
    s.shutdown().await.unwrap();
}

/// `/goal` budgets out of range are refused with the accepted range named.
#[tokio::test]
async fn absurd_goal_budgets_from_the_user_are_refused_with_the_range() {
    let h = harness();
    let s = h.session(json!({"responses": []}), PermissionMode::Auto);
    for (cmd, range) in [
        ("/goal x budget=99999999999999999999", "1000000000000"),
        ("/goal x turns=99999999999999999999", "1000000"),
        ("/goal x time=9999999999999h", "31536000"),
    ] {
        let e = s.submit(user(cmd)).await.unwrap_err().to_string();
        assert!(e.contains(&format!("between 1 and {range}")), "{cmd}: {e}");
    }
    assert!(h.runtime.goal(s.id()).unwrap().is_none());
    s.shutdown().await.unwrap();
}

/// A budget key given twice is an error naming it, not "the last one wins": `budget=5K
/// budget=6K` could hide a raise behind a value the reader saw first.
#[tokio::test]
async fn a_goal_budget_key_given_twice_is_refused() {
    let h = harness();
    let s = h.session(json!({"responses": []}), PermissionMode::Auto);
    for (cmd, key) in [
        ("/goal fix it budget=5K budget=6K", "tokens"),
        ("/goal fix it tokens=5K budget=6K", "tokens"),
        ("/goal fix it turns=3 time=1h turns=30", "turns"),
        ("/goal fix it time=1h time=clear", "time"),
    ] {
        let e = s.submit(user(cmd)).await.unwrap_err().to_string();
        assert!(
            e.contains(&format!("`{key}=` is given twice")),
            "{cmd}: {e}"
        );
    }
    assert!(h.runtime.goal(s.id()).unwrap().is_none());
    s.shutdown().await.unwrap();
}

/// Whatever panics inside a turn (here a tool with a bug), the turn is closed as an error
/// and its goal stops: the failure is not re-run in a loop.
#[tokio::test]
async fn a_panicking_turn_is_closed_once_not_retried_in_a_loop() {
    use futures_util::future::BoxFuture;
    use std::sync::Arc;
    use waymark_runtime::extension::Extension;
    use waymark_runtime::tools::{FreeTool, Tool, ToolContext, ToolError, ToolOutput};

    struct Explode;
    impl Tool for Explode {
        fn name(&self) -> &'static str {
            "explode"
        }
        fn description(&self) -> &'static str {
            "panics"
        }
        fn schema(&self) -> serde_json::Value {
            json!({"type": "object"})
        }
        fn effects(&self) -> waymark_tools::Effects {
            waymark_tools::Effects::READS
        }
    }

    impl FreeTool for Explode {
        fn handle<'a>(
            &'a self,
            _: &'a ToolContext,
            _: serde_json::Value,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async { panic!("a bug in a tool") })
        }
    }
    struct WithExplode;
    impl Extension for WithExplode {
        fn name(&self) -> &'static str {
            "explode"
        }
        fn tools(&self) -> Vec<Arc<dyn FreeTool>> {
            vec![Arc::new(Explode)]
        }
    }
    let (h, rec) = super::super::harness::Harness::recording(
        waymark_config::Config::default(),
        json!({"responses": [{"tool_calls": [{"name": "explode"}]}], "when_exhausted": "repeat_last"}),
    );
    let rt = h.reopen(|o| o.extensions.push(Arc::new(WithExplode)));
    let s = rt
        .create_session(waymark_runtime::SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("scripted:rec".into()),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    let ev = run(&s, user("/goal keep exploding")).await;
    assert!(
        finished(&ev).contains(&(TurnEndReason::Error, Some("turn_panicked".into()))),
        "{:?}",
        finished(&ev)
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        rec.requests.lock().unwrap().len(),
        1,
        "the failing turn ran again"
    );
    let g = rt.goal(s.id()).unwrap().unwrap();
    assert_eq!(g.reason, waymark_protocol::GoalReason::TurnError);
    s.shutdown().await.unwrap();
}

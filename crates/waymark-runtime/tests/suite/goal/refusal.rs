//! A model that declines to answer (G-41): OpenAI's `finish_reason: "content_filter"` or a
//! `refusal` in the reply, Anthropic's `stop_reason: "refusal"`, from mock servers speaking
//! each wire protocol. The turn ends with its own error code, the goal pauses with its own
//! reason, and nothing is tried again.

use super::super::mock_server::{Flavor, MockResponse, MockServer, on_mock};
use super::*;

/// An OpenAI stream stopped by the content filter, with a refusal or without one.
fn openai_declined(refusal: Option<&str>) -> MockResponse {
    let mut s = String::new();
    let mut ev = |v: Value| s.push_str(&format!("data: {v}\n\n"));
    ev(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}));
    let finish = match refusal {
        Some(r) => {
            ev(json!({"choices": [{"index": 0, "delta": {"refusal": r}}]}));
            "stop"
        }
        None => "content_filter",
    };
    ev(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
    ev(json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 5}}));
    s.push_str("data: [DONE]\n\n");
    MockResponse::sse(&s)
}

/// An Anthropic stream that stops with `refusal`.
fn anthropic_declined() -> MockResponse {
    let mut s = String::new();
    let mut ev = |name: &str, v: Value| s.push_str(&format!("event: {name}\ndata: {v}\n\n"));
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {"output_tokens": 3}}),
    );
    ev("message_stop", json!({"type": "message_stop"}));
    MockResponse::sse(&s)
}

#[tokio::test]
async fn g_41_a_refusal_pauses_the_goal_with_its_own_reason_on_both_wires() {
    let cases = [
        (Flavor::OpenAi, openai_declined(None), "content filter"),
        (
            Flavor::OpenAi,
            openai_declined(Some("I can't help with that.")),
            "I can't help with that.",
        ),
        (Flavor::Anthropic, anthropic_declined(), "content filter"),
    ];
    for (flavor, reply, said) in cases {
        let h = Harness::new(config(Verification::None));
        let server = MockServer::start_with(move |_| reply.clone()).await;
        let (_rt, s) = on_mock(&h, flavor, &server, |_| {});
        let ev = run(&s, user("/goal write the report")).await;
        let errors: Vec<waymark_protocol::ErrorInfo> = ev
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::TurnFinished { error: Some(e), .. } => Some((**e).clone()),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 1, "{flavor:?}: {errors:?}");
        assert_eq!(errors[0].code, "provider_refusal", "{flavor:?}");
        assert!(
            errors[0].message.contains(said),
            "{flavor:?}: {}",
            errors[0].message
        );
        assert_eq!(
            status(&goal(&h, &s)),
            (GoalStatus::Paused, GoalReason::ProviderRefusal),
            "{flavor:?}"
        );
        // Declined once: not retried, not continued.
        assert_eq!(server.recorded().len(), 1, "{flavor:?}");
        s.shutdown().await.unwrap();
    }
}

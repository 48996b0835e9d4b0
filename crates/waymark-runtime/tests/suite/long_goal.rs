//! A 300-turn goal in a 16k window against a mock provider that speaks the real wire
//! protocol (OpenAI and Anthropic) and, like the real ones, refuses a request longer than
//! its window with the real error shape. The provider counts tokens its own way (denser than
//! our estimate), so the runtime must learn the difference from the reported usage.

use super::harness::{Harness, run, user};
use super::mock_server::{Flavor, MockResponse, MockServer, Recorded, on_mock, reply};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use waymark_config::{Config, Verification};
use waymark_protocol::{CompactReason, EventKind, GoalStatus};

const WINDOW: u64 = 16_000;
const TURNS: usize = 300;
const OBJECTIVE: &str = "Walk through notes.txt section by section and check each one";
/// The main call the mock refuses once although it fits: the retry path.
const REFUSE_ONCE_AT: usize = 333;

#[derive(Default)]
struct Seen {
    main: AtomicUsize,
    compactions: AtomicUsize,
    /// Requests longer than the window (each refused), by main-call number.
    oversize: Mutex<Vec<usize>>,
    /// Main requests right after a compaction call.
    after_compaction: Mutex<Vec<Value>>,
    last_was_compaction: Mutex<bool>,
}

/// The provider's own count: denser than our four bytes per token.
fn provider_tokens(body: &Value) -> u64 {
    (body.to_string().len() as u64).div_ceil(3)
}

fn too_long(flavor: Flavor, n: u64) -> MockResponse {
    let body = match flavor {
        Flavor::OpenAi => json!({"error": {
            "message": format!("This model's maximum context length is {WINDOW} tokens. However, your messages resulted in {n} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
        Flavor::Anthropic => json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": format!("prompt is too long: {n} tokens > {WINDOW} maximum")}}),
    };
    MockResponse::status(
        400,
        &body.to_string(),
        &[("content-type", "application/json")],
    )
}

fn is_compaction(flavor: Flavor, body: &Value) -> bool {
    let system = match flavor {
        Flavor::OpenAi => body["messages"][0]["content"].as_str().unwrap_or(""),
        Flavor::Anthropic => body["system"].as_str().unwrap_or(""),
    };
    system.starts_with("You are compacting")
}

/// The mock model: a turn is a read of notes.txt, then a short report; after `TURNS`
/// turns it claims the goal complete.
fn respond(flavor: Flavor, seen: &Seen, r: &Recorded) -> MockResponse {
    let n = provider_tokens(&r.body);
    if is_compaction(flavor, &r.body) {
        if n > WINDOW {
            seen.oversize.lock().unwrap().push(usize::MAX);
            return too_long(flavor, n);
        }
        let k = seen.compactions.fetch_add(1, Ordering::SeqCst) + 1;
        *seen.last_was_compaction.lock().unwrap() = true;
        return reply(
            flavor,
            &format!(
                "Summary {k}: the agent has been checking notes.txt section by section; every section so far was fine."
            ),
            None,
            n,
        );
    }
    let call = seen.main.fetch_add(1, Ordering::SeqCst) + 1;
    if std::mem::take(&mut *seen.last_was_compaction.lock().unwrap()) {
        seen.after_compaction.lock().unwrap().push(r.body.clone());
    }
    if n > WINDOW {
        seen.oversize.lock().unwrap().push(call);
        return too_long(flavor, n);
    }
    if call == REFUSE_ONCE_AT {
        return too_long(flavor, WINDOW + 1);
    }
    // The refused call is sent again: it does not move the script on.
    let idx = call - usize::from(call > REFUSE_ONCE_AT);
    let turn = idx.div_ceil(2);
    if turn > TURNS {
        let args = json!({"mode": "status", "status": "complete", "message": format!("all {TURNS} sections checked")});
        return reply(
            flavor,
            "Every section is checked.",
            Some(("update_goal", args)),
            n,
        );
    }
    if idx % 2 == 1 {
        reply(
            flavor,
            &format!("Reading section {turn}."),
            Some(("read_file", json!({"path": "notes.txt"}))),
            n,
        )
    } else {
        reply(
            flavor,
            &format!("Section {turn} checked: it is in order."),
            None,
            n,
        )
    }
}

/// Runs the goal; the main requests sent right after each compaction, and the run's
/// temporary folder.
async fn long_goal(flavor: Flavor) -> (Vec<Value>, String) {
    let seen = Arc::new(Seen::default());
    let s2 = seen.clone();
    let server = MockServer::start_with(move |r| respond(flavor, &s2, r)).await;
    let mut config = Config::default();
    config.turn.context_tokens = Some(WINDOW);
    config.goal.verification = Some(Verification::None);
    config.goal.breaker.repeated_reply_limit = 1000;
    let h = Harness::new(config);
    let line = "A section of the notes, with enough words to weigh on the context window.\n";
    std::fs::write(h.ws.join("notes.txt"), line.repeat(24)).unwrap(); // ~1.8 KB
    let (runtime, s) = on_mock(&h, flavor, &server, |_| {});
    let events = run(
        &s,
        user(&format!("/goal {OBJECTIVE} budget=100000000 turns=400")),
    )
    .await;
    let goal = runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(goal.status, GoalStatus::Complete, "{:?}", goal);
    assert_eq!(goal.budget.main_turns.used as usize, TURNS + 1);

    // Never an oversize request; one refusal (the deliberate one), answered by a compaction
    // and the same request sent again, shorter.
    assert_eq!(*seen.oversize.lock().unwrap(), Vec::<usize>::new());
    let compacted: Vec<CompactReason> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContextCompacted { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect();
    assert!(compacted.len() >= 10, "{compacted:?}");
    assert_eq!(
        compacted
            .iter()
            .filter(|r| **r == CompactReason::ProviderLimit)
            .count(),
        1,
        "{compacted:?}"
    );
    assert_eq!(compacted.len(), seen.compactions.load(Ordering::SeqCst));

    // After every compaction the goal contract is still there, and the summary comes first.
    let after = seen.after_compaction.lock().unwrap().clone();
    assert_eq!(after.len(), compacted.len());
    for body in &after {
        let text = body.to_string();
        assert!(text.contains(OBJECTIVE), "goal contract lost: {text}");
        assert!(text.contains("conversation_summary"), "{text}");
    }
    s.shutdown().await.unwrap();
    let root = h.ws.parent().unwrap().display().to_string();
    (after, root)
}

/// The first post-compaction request of a run, with what varies between runs (the
/// temporary folder, the session id, the tool list) taken out.
async fn first_post_compaction_request(flavor: Flavor) -> String {
    let (after, root) = long_goal(flavor).await;
    let mut body = after[0].clone();
    body["tools"] = json!("<tools>");
    let text = serde_json::to_string_pretty(&body)
        .unwrap()
        .replace(&root, "<tmp>");
    regex_lite_sessions(&text)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_300_turn_goal_stays_in_a_16k_window_openai() {
    let text = first_post_compaction_request(Flavor::OpenAi).await;
    insta::assert_snapshot!("post_compaction_request_openai", text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_300_turn_goal_stays_in_a_16k_window_anthropic() {
    let text = first_post_compaction_request(Flavor::Anthropic).await;
    insta::assert_snapshot!("post_compaction_request_anthropic", text);
}

/// Session folders and ids differ per run.
fn regex_lite_sessions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("/sessions/s-") {
        out.push_str(&rest[..i]);
        out.push_str("/sessions/<session>");
        let tail = &rest[i + "/sessions/s-".len()..];
        let end = tail
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

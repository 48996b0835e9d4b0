//! Context compaction end to end on the scripted model, which refuses (as real providers
//! do) any request larger than its window.

use super::harness::{Harness, finished, run, user};
use serde_json::json;
use waymark_config::Config;
use waymark_protocol::{CompactReason, EventKind, PermissionMode, TurnEndReason};
use waymark_runtime::provider::{CallPurpose, ModelMessage};

fn compactions(events: &[waymark_protocol::Event]) -> Vec<(CompactReason, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContextCompacted {
                reason,
                before_tokens,
                after_tokens,
                ..
            } => Some((*reason, *before_tokens, *after_tokens)),
            _ => None,
        })
        .collect()
}

/// A long turn of big tool outputs in a 7k window: the session compacts before the window
/// fills, never sends a request the model refuses, and finishes; after a compaction the
/// model sees the summary with the files touched, and the newest results verbatim.
#[tokio::test]
async fn a_long_turn_compacts_before_the_window_fills() {
    long_turn(Config::default()).await;
}

/// The share of the window that triggers a compaction is a setting: at 60% the same turn
/// compacts more often, and earlier, than at the default 85%.
#[tokio::test]
async fn the_compaction_threshold_is_a_setting() {
    let default = long_turn(Config::default()).await;
    let mut config = Config::default();
    config.turn.compact_at_percent = 60;
    config.turn.compact_keep_percent = 20;
    let early = long_turn(config).await;
    assert!(
        early.len() > default.len(),
        "60%: {early:?}, 85%: {default:?}"
    );
    assert!(early[0] < default[0], "60%: {early:?}, 85%: {default:?}");
    let mut config = Config::default();
    config.turn.compact_keep_percent = 70;
    let e = config.validate().unwrap_err();
    assert_eq!(e.key, "turn.compact_keep_percent", "{e}");
}

/// Sixty big reads in one turn in a 7k window; each compaction's size before, in tokens.
/// The model's window in [`long_turn`]: small, so a few reads fill it, but with room for the
/// system prompt and every built-in tool's schema beside what compaction keeps.
const WINDOW: u64 = 7000;

async fn long_turn(mut config: Config) -> Vec<u64> {
    config.turn.max_steps = 200;
    let read = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]});
    let mut responses = vec![read; 60];
    responses.push(json!({"text": "All read."}));
    let script = json!({
        "context_tokens": WINDOW,
        "reject_over_window": true,
        "responses": responses,
    });
    let (h, rec) = Harness::recording(config, script);
    let line = "0123456789 abcdefghij 0123456789 abcdefghij 0123456789 abcdefghij\n";
    std::fs::write(h.ws.join("big.txt"), line.repeat(30)).unwrap(); // ~2 KB, ~500 tokens
    let s = h.recorded_session(PermissionMode::Auto);
    let events = run(&s, user("Read big.txt sixty times.")).await;
    assert_eq!(finished(&events), [(TurnEndReason::Completed, None)]);
    let done = compactions(&events);
    assert!(done.len() >= 3, "{done:?}");
    for (reason, before, after) in &done {
        assert_eq!(*reason, CompactReason::Threshold);
        assert!(before > after, "{before} -> {after}");
    }
    let requests = rec.requests.lock().unwrap().clone();
    let main: Vec<_> = requests
        .iter()
        .filter(|r| r.purpose == CallPurpose::Main)
        .collect();
    assert_eq!(main.len(), 61, "every step made once: no refused request");
    for r in &requests {
        assert!(
            r.estimated_tokens() <= WINDOW,
            "an oversize request was sent"
        );
    }
    // The last request: the summary first (with the file read), then verbatim results.
    let last = main.last().unwrap();
    let ModelMessage::User { text, .. } = &last.messages[0] else {
        panic!("starts with {:?}", last.messages[0])
    };
    assert!(text.contains("<conversation_summary>"), "{text}");
    assert!(text.contains("- big.txt (read)"), "{text}");
    assert!(text.contains("Scripted summary of the"), "{text}");
    assert!(
        matches!(last.messages.last(), Some(ModelMessage::ToolResult { content, .. }) if content.contains("abcdefghij"))
    );
    // The compaction calls counted on the turn.
    let turn = h.runtime.snapshot(s.id()).unwrap();
    let compact_calls = requests
        .iter()
        .filter(|r| r.purpose == CallPurpose::Compact)
        .count();
    assert_eq!(compact_calls, done.len());
    assert!(turn.usage.input_tokens > 0);
    s.shutdown().await.unwrap();
    done.iter().map(|(_, before, _)| *before).collect()
}

/// The provider refuses a request as too long (its count is higher than ours): the session
/// compacts once and sends it again; a second refusal in a row ends the turn with the error.
#[tokio::test]
async fn a_refused_request_compacts_once_and_is_sent_again() {
    let read = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]});
    let script = json!({
        "context_tokens": 100000,
        "responses": [read, read, read, {"error": "context_too_long"}, {"text": "Done."},
                      read, {"error": "context_too_long"}, {"error": "context_too_long"}],
    });
    let (h, rec) = Harness::recording(Config::default(), script);
    std::fs::write(h.ws.join("big.txt"), "z".repeat(4000)).unwrap();
    let s = h.recorded_session(PermissionMode::Auto);
    let events = run(&s, user("go")).await;
    assert_eq!(finished(&events), [(TurnEndReason::Completed, None)]);
    let done = compactions(&events);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0, CompactReason::ProviderLimit);
    // The request sent again starts from the summary.
    let requests = rec.requests.lock().unwrap().clone();
    let resent = requests
        .iter()
        .rev()
        .find(|r| r.purpose == CallPurpose::Main)
        .unwrap();
    assert!(
        matches!(&resent.messages[0], ModelMessage::User { text, .. } if text.contains("<conversation_summary>"))
    );

    let events = run(&s, user("again")).await;
    let ended = finished(&events);
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].0, TurnEndReason::Error);
    assert_eq!(ended[0].1.as_deref(), Some("context_too_long"));
    s.shutdown().await.unwrap();
}

/// `/compact` between turns summarizes at once (a compaction of no turn, in the log right
/// after the command), and the next turn's request starts from the summary with its own
/// message after it; a second `/compact` with nothing new to summarize says so.
#[tokio::test]
async fn slash_compact_between_turns_summarizes_at_once() {
    let script = json!({"responses": [{"text": "one"}, {"text": "two"}, {"text": "three"}]});
    let (h, rec) = Harness::recording(Config::default(), script);
    let s = h.recorded_session(PermissionMode::Auto);
    run(&s, user("first")).await;
    run(&s, user("second")).await;
    let shown = run(&s, user("/compact")).await;
    assert!(shown.iter().any(|e| matches!(&e.kind, EventKind::CommandOutput { text, .. } if text.contains("Summarizing the older part of the conversation now"))), "{shown:?}");
    let done: Vec<_> = shown
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContextCompacted {
                turn_id, reason, ..
            } => Some((*turn_id, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(done, [(None, CompactReason::Manual)], "{shown:?}");
    let compact_calls = |rec: &super::harness::Recording| {
        rec.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.purpose == CallPurpose::Compact)
            .count()
    };
    assert_eq!(compact_calls(&rec), 1);
    let again = run(&s, user("/compact")).await;
    assert!(again.iter().any(|e| matches!(&e.kind, EventKind::CommandOutput { text, .. } if text.contains("not enough conversation"))), "{again:?}");
    let events = run(&s, user("third")).await;
    assert!(compactions(&events).is_empty(), "{events:?}");
    let requests = rec.requests.lock().unwrap().clone();
    let last = requests.last().unwrap();
    assert_eq!(last.purpose, CallPurpose::Main);
    let ModelMessage::User { text, .. } = &last.messages[0] else {
        panic!()
    };
    assert!(text.contains("<conversation_summary>"));
    assert!(
        matches!(last.messages.last(), Some(ModelMessage::User { text, .. }) if text.ends_with("third"))
    );
    s.shutdown().await.unwrap();
}

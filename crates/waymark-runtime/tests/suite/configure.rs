//! Switching an open session's permission mode and model (the desktop header's pickers):
//! the switch is logged, stored, and decides the next tool call and the next model call; a
//! model that cannot be used changes nothing.

use super::harness::{Harness, results, run, user};
use serde_json::json;
use waymark_config::Config;
use waymark_protocol::{EventKind, Op, PermissionMode, ToolStatus};

fn write(path: &str) -> serde_json::Value {
    json!({"text": "", "tool_calls": [{"name": "write", "arguments": {"path": path, "content": "x\n"}}]})
}

fn configured(events: &[waymark_protocol::Event]) -> Vec<(String, PermissionMode)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SessionConfigured {
                model,
                permission_mode,
                ..
            } => Some((model.clone(), *permission_mode)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn read_only_chosen_between_turns_refuses_the_next_write() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [write("a.txt"), {"text": "Wrote a."}, write("b.txt"), {"text": "Tried b."}]}),
        PermissionMode::Auto,
    );
    run(&s, user("write a")).await;
    assert!(h.ws.join("a.txt").exists());

    let mut rx = s.subscribe();
    s.submit(Op::SetPermissionMode {
        mode: PermissionMode::ReadOnly,
    })
    .await
    .unwrap();
    let said = rx.recv().await.unwrap();
    assert!(!said.transient, "the switch is logged");
    assert_eq!(configured(&[said])[0].1, PermissionMode::ReadOnly);

    let events = run(&s, user("write b")).await;
    let r = results(&events);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(!h.ws.join("b.txt").exists(), "read-only wrote a file");
    // Stored: the lists and a reopened session have it too.
    let listed = h.runtime.list_sessions().unwrap();
    assert_eq!(listed[0].permission_mode, PermissionMode::ReadOnly);
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    let again = h.runtime.open_session(&id, Default::default()).unwrap();
    match &again.startup.last().unwrap().kind {
        EventKind::SessionStarted {
            permission_mode, ..
        } => assert_eq!(*permission_mode, PermissionMode::ReadOnly),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn another_model_answers_from_the_next_call_and_a_bad_spec_changes_nothing() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [{"text": "Model A here."}]}),
        PermissionMode::Ask,
    );
    run(&s, user("hello")).await;
    let b = h
        .script(json!({"responses": [{"text": "Model B here."}], "when_exhausted": "repeat_last"}));

    let mut rx = s.subscribe();
    s.submit(Op::SetModel { model: b.clone() }).await.unwrap();
    let said = configured(&[rx.recv().await.unwrap()]);
    assert_eq!(said, [(b.clone(), PermissionMode::Ask)]);
    let events = run(&s, user("who is there?")).await;
    let replies: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AssistantMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(replies, ["Model B here."]);
    assert_eq!(
        h.runtime.list_sessions().unwrap()[0].model.as_deref(),
        Some(b.as_str())
    );

    // A spec naming no model, and a script that is not there: refused, nothing logged, and
    // the session stays on B.
    let fifo = h.ws.join("planted.json");
    super::harness::mkfifo(&fifo);
    let fifo = format!("scripted:{}", fifo.display());
    // Specs that would resolve but for the check: a script whose name carries a
    // right-to-left override, and a working path padded past the length allowed.
    let hidden = h.ws.join("gpt\u{202e}4.json");
    std::fs::copy(b.trim_start_matches("scripted:"), &hidden).unwrap();
    let hidden = format!("scripted:{}", hidden.display());
    let long = format!(
        "scripted:{}{}",
        "/.".repeat(600),
        b.trim_start_matches("scripted:")
    );
    for (bad, why) in [
        ("nonsense:x", "invalid model spec"),
        ("scripted:/no/such/script.json", "No such file"),
        ("", "a model spec is"),
        // A FIFO the model planted never blocks the session (opening one would).
        (fifo.as_str(), "not a regular file"),
        ("scripted:/dev/zero", "not a regular file"),
        (long.as_str(), "at most 1024 characters"),
        (hidden.as_str(), "no control or invisible"),
    ] {
        let e = s
            .submit(Op::SetModel { model: bad.into() })
            .await
            .unwrap_err();
        assert!(e.to_string().contains(why), "{bad}: {e}");
    }
    let events = run(&s, user("still there?")).await;
    assert!(configured(&events).is_empty());
    assert!(
        events.iter().any(|e| matches!(&e.kind, EventKind::AssistantMessage { text, .. } if text == "Model B here.")),
        "the session left model B"
    );
    assert_eq!(
        h.runtime.list_sessions().unwrap()[0].model.as_deref(),
        Some(b.as_str())
    );
}

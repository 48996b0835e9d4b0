//! Acceptance 1 of issue 23: a session changes files with every tool (write, edit,
//! apply_patch, bash: create, modify, delete, mkdir, chmod, links); rewinding to the start
//! of each turn brings back exactly that state, the conversation rewind keeps the later
//! turns out of the next request, undoing brings the later state back, and the project's
//! own `.git` is untouched byte for byte.

use super::harness::{Harness, Recording, run, user};
use super::{bytes_under, manifest, rewind, tree_now, tree_of, turn_starts, undo_of};
use serde_json::json;
use waymark_config::Config;
use waymark_protocol::checkpoint::{CheckpointTrigger, RewindScope};
use waymark_protocol::{EventKind, PermissionMode};

fn call(name: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({"name": name, "arguments": arguments})
}

fn script() -> serde_json::Value {
    let patch = "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+bee\n";
    json!({"responses": [
        // Turn 1.
        {"tool_calls": [
            call("write", json!({"path": "a.txt", "content": "alpha\n"})),
            call("write", json!({"path": "src/lib.rs", "content": "fn a() {}\n"})),
        ]},
        {"tool_calls": [call("bash", json!({"command": "mkdir -p dir/sub empty && echo x > dir/sub/x.txt"}))]},
        {"text": "MARK-T1-DONE"},
        // Turn 2.
        {"tool_calls": [call("edit", json!({"path": "a.txt", "old_string": "alpha", "new_string": "beta"}))]},
        {"tool_calls": [call("apply_patch", json!({"patch": patch}))]},
        {"tool_calls": [call("bash", json!({"command": "chmod +x src/lib.rs && ln -s a.txt link && rmdir empty"}))]},
        {"text": "MARK-T2-DONE"},
        // Turn 3.
        {"tool_calls": [call("bash", json!({"command": "rm b.txt && rm -r dir && ln -s src link2 && mv a.txt a2.txt"}))]},
        {"tool_calls": [call("write", json!({"path": "c.txt", "content": "see\n"}))]},
        {"text": "MARK-T3-DONE"},
        // Probes after rewinds.
        {"text": "probe one"},
        {"text": "probe two"},
        {"text": "probe three"},
    ]})
}

fn git(ws: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(ws)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// What the newest request to the model carried, as text.
fn last_request(rec: &Recording) -> String {
    format!(
        "{:?}",
        rec.requests.lock().unwrap().last().unwrap().messages
    )
}

#[tokio::test]
async fn every_tool_rewinds_exactly_per_turn_with_the_conversation_and_undo() {
    let (h, rec) = Harness::recording(Config::default(), script());
    std::fs::write(h.ws.join("keep.txt"), "kept\n").unwrap();
    git(&h.ws, &["init", "-q"]);
    git(&h.ws, &["add", "-A"]);
    git(&h.ws, &["commit", "-qm", "seed"]);
    let git_before = bytes_under(&h.ws.join(".git"));
    let s = h.recorded_session(PermissionMode::Auto);
    let sid = s.id().to_string();
    let mut states = vec![manifest(&h.ws)];
    for text in ["MARK-U1 one", "MARK-U2 two", "MARK-U3 three"] {
        run(&s, user(text)).await;
        states.push(manifest(&h.ws));
    }
    // Each turn changed something, with every tool.
    assert!(states.windows(2).all(|w| w[0] != w[1]), "{states:#?}");
    assert_eq!(states[2]["link"], "link a.txt");
    assert!(states[2]["src/lib.rs"].starts_with("file x=true"));
    assert_eq!(states[1]["empty"], "dir");
    assert_eq!(states[3]["link2"], "link src");

    let all = h.runtime.checkpoints(&sid).unwrap();
    let starts = turn_starts(&h.runtime, &sid);
    assert_eq!(starts.len(), 3);
    // A checkpoint before every call that may write, named by its tool; one whose state
    // is the checkpoint's just before it (the first call of a turn: the turn's start) is
    // that one, not recorded twice.
    let tools: Vec<&str> = all
        .iter()
        .filter(|c| c.trigger == CheckpointTrigger::BeforeTool)
        .filter_map(|c| c.tool.as_deref())
        .collect();
    assert_eq!(tools, ["write", "bash", "apply_patch", "bash", "write"]);
    assert!(
        all.iter()
            .skip(1)
            .all(|c| c.trigger == CheckpointTrigger::TurnStart || !c.changed.is_empty())
    );
    // The listing says what changed since the one before: turn 2's start has what turn 1's
    // shell made after the checkpoint taken before it.
    let changed: Vec<&str> = starts[1].changed.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(changed, ["dir/sub/x.txt", "empty"]);

    // Back to the start of turn 2: turn 1's state, files and conversation.
    let ev = rewind(&s, &starts[1].id, RewindScope::Both).await.unwrap();
    assert_eq!(manifest(&h.ws), states[1]);
    assert_eq!(tree_now(&h.ws), tree_of(&h.runtime, &sid, &starts[1].id));
    let EventKind::SessionRewound { rewound_turns, .. } = &ev.kind else {
        unreachable!()
    };
    assert_eq!(
        rewound_turns.len(),
        2,
        "turns 2 and 3 leave the conversation"
    );
    run(&s, user("MARK-P1")).await;
    let req = last_request(&rec);
    assert!(
        req.contains("MARK-U1") && req.contains("MARK-T1-DONE"),
        "{req}"
    );
    for later in ["MARK-U2", "MARK-T2-DONE", "MARK-U3", "MARK-T3-DONE"] {
        assert!(!req.contains(later), "{later} is still sent: {req}");
    }
    // The transcript keeps them: the log still has their events.
    let log = h.runtime.events(&sid, 0, 10_000).unwrap();
    assert!(log.iter().any(
        |e| matches!(&e.kind, EventKind::AssistantMessage { text, .. } if text == "MARK-T3-DONE")
    ));

    // Undo: the later state comes back, files and conversation (the probe turn leaves).
    rewind(&s, &undo_of(&ev), RewindScope::Both).await.unwrap();
    assert_eq!(manifest(&h.ws), states[3]);
    run(&s, user("MARK-P2")).await;
    let req = last_request(&rec);
    for kept in ["MARK-U1", "MARK-U2", "MARK-U3", "MARK-T3-DONE", "MARK-P2"] {
        assert!(
            req.contains(kept),
            "{kept} is missing after the undo: {req}"
        );
    }
    assert!(
        !req.contains("MARK-P1"),
        "the probe made after the rewind is undone too: {req}"
    );

    // Before each turn, exactly that turn's starting state (tree hash equal).
    for (i, cp) in starts.iter().enumerate() {
        rewind(&s, &cp.id, RewindScope::Files).await.unwrap();
        assert_eq!(manifest(&h.ws), states[i], "before turn {}", i + 1);
        assert_eq!(tree_now(&h.ws), tree_of(&h.runtime, &sid, &cp.id));
    }
    assert_eq!(
        bytes_under(&h.ws.join(".git")),
        git_before,
        "the project's .git changed"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn files_only_and_conversation_only_rewind_one_half() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [
            {"tool_calls": [call("write", json!({"path": "a.txt", "content": "one\n"}))]},
            {"text": "MARK-T1-DONE"},
            {"tool_calls": [call("write", json!({"path": "b.txt", "content": "two\n"}))]},
            {"text": "MARK-T2-DONE"},
            {"text": "probe one"},
            {"text": "probe two"},
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    let sid = s.id().to_string();
    let mut states = vec![manifest(&h.ws)];
    for text in ["MARK-U1", "MARK-U2"] {
        run(&s, user(text)).await;
        states.push(manifest(&h.ws));
    }
    let starts = turn_starts(&h.runtime, &sid);

    // Files only: the files of turn 2's start; the conversation keeps turn 2.
    let ev = rewind(&s, &starts[1].id, RewindScope::Files).await.unwrap();
    let EventKind::SessionRewound {
        rewound_turns,
        files,
        ..
    } = &ev.kind
    else {
        unreachable!()
    };
    assert!(rewound_turns.is_empty());
    assert!(!files.is_empty());
    assert_eq!(manifest(&h.ws), states[1]);
    run(&s, user("MARK-P1")).await;
    assert!(last_request(&rec).contains("MARK-U2"));

    // Conversation only: turn 2 (and the probe) leave, the files stay as they are.
    let before = manifest(&h.ws);
    let ev = rewind(&s, &starts[1].id, RewindScope::Conversation)
        .await
        .unwrap();
    let EventKind::SessionRewound {
        rewound_turns,
        files,
        ..
    } = &ev.kind
    else {
        unreachable!()
    };
    assert_eq!(rewound_turns.len(), 2);
    assert!(files.is_empty());
    assert_eq!(manifest(&h.ws), before);
    run(&s, user("MARK-P2")).await;
    let req = last_request(&rec);
    assert!(
        req.contains("MARK-U1") && !req.contains("MARK-U2") && !req.contains("MARK-P1"),
        "{req}"
    );
    s.shutdown().await.unwrap();
}

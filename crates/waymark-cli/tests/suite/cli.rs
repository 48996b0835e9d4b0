//! Scenarios through the CLI with the scripted model.

use super::support::*;
use serde_json::{Value, json};

#[test]
fn write_edit_bash_with_json_events() {
    let env = Env::new();
    let model = env.script("s.json", json!({"responses": [
        {"text": "Creating.", "tool_calls": [{"name": "write", "arguments": {"path": "src/lib.txt", "content": "one\ntwo\n"}}]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "src/lib.txt", "old_string": "two", "new_string": "three"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "grep -c . src/lib.txt"}}]},
        {"text": "Finished: two lines."}
    ]}));
    let out = env.exec(&model, &["--permission", "auto", "--json", "build it"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(read(env.ws.join("src/lib.txt")), "one\nthree\n");
    let ev = json_lines(&out);
    let t = types(&ev);
    for needed in [
        "session.started",
        "message.admitted",
        "turn.started",
        "assistant.delta",
        "assistant.message",
        "tool.call",
        "tool.result",
        "turn.finished",
        "session.idle",
    ] {
        assert!(t.iter().any(|x| x == needed), "missing {needed} in {t:?}");
    }
    for e in &ev {
        assert!(
            e["session_id"].is_string() && e["seq"].is_u64() && e["ts"].is_i64(),
            "{e}"
        );
    }
    let calls: Vec<&str> = ev
        .iter()
        .filter(|e| e["type"] == "tool.call")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["write", "edit", "bash"]);
    let bash = ev
        .iter()
        .filter(|e| e["type"] == "tool.result")
        .nth(2)
        .unwrap();
    assert_eq!(bash["status"], "ok");
    assert!(
        bash["content"].as_str().unwrap().starts_with("2\n"),
        "{bash}"
    );
    let fin = ev.iter().find(|e| e["type"] == "turn.finished").unwrap();
    assert_eq!(fin["reason"], "completed");
    assert!(fin["usage"]["input_tokens"].as_u64().unwrap() > 0);
    let sid = env.only_session();
    let all = env.events(&sid);
    assert_contiguous(&all);
    let out = env.run(&["events", "--session", &sid, "--after", "3"]);
    assert_eq!(json_lines(&out), all[3..], "--after skips the first events");
}

#[test]
fn human_output_streams_text_and_one_line_per_tool_call() {
    let env = Env::new();
    let model = env.script("s.json", json!({"responses": [
        {"text": "Looking around.", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}, {"name": "glob", "arguments": {"pattern": "*.md"}}]},
        {"text": "Nothing here yet."}
    ]}));
    let out = env.exec(&model, &["look"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("Looking around.\n"), "{s}");
    assert!(
        s.contains("  ✓ list_dir .\n") && s.contains("  ✓ glob *.md\n"),
        "{s}"
    );
    assert!(s.contains("Nothing here yet."));
}

#[test]
fn ask_mode_exits_3_then_answer_and_exec_session_complete() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "hello"}}]},
            {"text": "Wrote a.txt."}
        ]}),
    );
    let out = env.exec(&model, &["write a file"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("Permission needed to write a.txt"), "{s}");
    let sid = env.only_session();
    let q = pending_questionnaire(&env, &sid);
    assert!(
        s.contains(&format!("waymark answer --session {sid} {q} allow_once")),
        "{s}"
    );
    assert!(!env.ws.join("a.txt").exists());
    let ans = env.run(&["answer", "--session", &sid, &q, "allow_once", "--no-run"]);
    assert_eq!(ans.status.code(), Some(0), "{}", text(&ans));
    let out = env.run(&["exec", "--session", &sid, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(read(env.ws.join("a.txt")), "hello");
    let ev = json_lines(&out);
    assert!(
        ev.iter()
            .any(|e| e["type"] == "turn.finished" && e["reason"] == "completed")
    );
    assert_contiguous(&env.events(&sid));
}

#[test]
fn deny_reaches_the_model_as_a_denial() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "touch x"}}]},
            {"text": "OK, I will not."}
        ]}),
    );
    let out = env.exec(&model, &["touch x"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let sid = env.only_session();
    let q = pending_questionnaire(&env, &sid);
    let out = env.run(&[
        "answer",
        "--session",
        &sid,
        &q,
        "deny",
        "--text",
        "no new files",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ev = json_lines(&out);
    let r = ev.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(r["status"], "denied");
    assert_eq!(r["content"], "The user denied this call: no new files");
    assert!(!env.ws.join("x").exists());
    assert!(
        ev.iter()
            .any(|e| e["type"] == "assistant.message" && e["text"] == "OK, I will not.")
    );
}

#[test]
fn slash_help_and_unknown_command() {
    let env = Env::new();
    let model = env.script("s.json", json!({"responses": []}));
    let out = env.exec(&model, &["/help"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("/help"));
    let sid = env.only_session();
    let out = env.run(&["exec", "--session", &sid, "/nope"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown command `/nope`") && err.contains("not sent to the model"),
        "{err}"
    );
    assert_eq!(env.show(&sid)["messages"].as_array().unwrap().len(), 0);
}

#[test]
fn usage_and_config_errors_have_their_exit_codes() {
    let env = Env::new();
    let out = env.run(&["exec", "--permission", "yolo", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a permission mode"));
    env.settings(r#"{"turn": {"max_steps": 0}}"#);
    let out = env.run(&["sessions"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`turn.max_steps`"),
        "{}",
        text(&out)
    );
    env.settings("{}");
    let out = env.run(&[
        "exec",
        "--workspace",
        env.ws.to_str().unwrap(),
        "--model",
        "gpt-9",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid model spec `gpt-9`"),
        "{}",
        text(&out)
    );
    let out = env.run(&["show", "--session", "s-missing"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session with id `s-missing`"));
}

#[test]
fn broken_model_responses_end_the_turn_clearly() {
    let env = Env::new();
    let model = env.script("s.json", json!({"responses": [{"error": "server_error"}]}));
    let out = env.exec(&model, &["go"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("turn failed: server_error"));
    std::fs::write(env.dir.path().join("bad.json"), "{\"responses\": [").unwrap();
    let bad = format!("scripted:{}", env.dir.path().join("bad.json").display());
    let out = env.exec(&bad, &["go"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.json is invalid"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_log_has_spans_for_sessions_turns_model_and_tool_calls_with_durations() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"text": "looking", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
            {"error": "bad_response"}
        ]}),
    );
    let out = env.exec(
        &model,
        &["--permission", "auto", "--log-level", "info", "look"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let log = std::fs::read_to_string(env.data.join("logs/waymark.log")).unwrap();
    for needle in [
        "session{id=",
        "turn{turn_id=1}",
        "model_call{step=0}",
        "tool{name=list_dir call_id=tc_1_0_0}",
        "turn ended",
        "model call failed",
    ] {
        assert!(log.contains(needle), "{needle} missing from:\n{log}");
    }
    // Each span's duration when it closed: two model calls, the tool, the turn, the session.
    assert!(log.matches("close time.busy=").count() >= 5, "{log}");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(env.data.join("logs/waymark.log"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // `off` writes nothing; a bad level is named.
    let quiet = Env::new();
    let out = quiet.exec(
        &model,
        &["--permission", "auto", "--log-level", "off", "look"],
    );
    assert!(
        !quiet.data.join("logs/waymark.log").exists(),
        "{}",
        text(&out)
    );
    let out = quiet.run(&["--log-level", "loud=[", "sessions"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("invalid log level `loud=[`"),
        "{}",
        text(&out)
    );
}

/// `/compact` in its own `exec` summarizes then and there: nothing is left for a later
/// process to remember (it used to be lost when the process that ran it ended).
#[test]
fn slash_compact_in_its_own_exec_compacts_at_once() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [{"text": "one"}, {"text": "two"}, {"text": "three"}],
               "compact": [{"text": "The user said first and second."}]}),
    );
    let out = env.exec(&model, &["--permission", "auto", "first"]);
    assert!(out.status.success(), "{}", text(&out));
    let sid = env.only_session();
    let out = env.exec_session(&sid, &["second"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = env.exec_session(&sid, &["/compact"]);
    assert!(out.status.success(), "{}", text(&out));
    let compacted: Vec<Value> = env
        .events(&sid)
        .into_iter()
        .filter(|e| e["type"] == "context.compacted")
        .collect();
    assert_eq!(compacted.len(), 1, "{}", text(&out));
    assert_eq!(compacted[0]["summary"], "The user said first and second.");
    assert!(compacted[0]["turn_id"].is_null(), "{compacted:?}");
}

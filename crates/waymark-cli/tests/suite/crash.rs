//! SIGKILL of `waymark exec` mid-turn, then reopen: the turn is aborted, no message is lost
//! or duplicated, the event log stays contiguous; a live process's session is busy.

use super::support::*;
use serde_json::json;

#[test]
fn sigkill_mid_turn_then_reopen() {
    let env = Env::new();
    let model = env.script("s.json", json!({"responses": [
        {"text": "step one", "tool_calls": [{"name": "write", "arguments": {"path": "one.txt", "content": "1"}}]},
        {"text": "this reply is slow to stream", "delay_ms": 20000},
        {"text": "after restart"}
    ]}));
    let (mut child, sid, _lines) = spawn_until_tool_result(&env, &model, "go");
    // While it runs, a second process is refused.
    let busy = env.run(&["exec", "--session", &sid, "hello"]);
    assert_eq!(busy.status.code(), Some(1), "{}", text(&busy));
    assert!(
        String::from_utf8_lossy(&busy.stderr).contains("driven by another process"),
        "{}",
        text(&busy)
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    // Reopen: the interrupted turn is closed as aborted, nothing else runs.
    let out = env.run(&["exec", "--session", &sid, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ev = json_lines(&out);
    let fin = ev
        .iter()
        .find(|e| e["type"] == "turn.finished")
        .expect("recovery event");
    assert_eq!(fin["reason"], "aborted");
    assert_eq!(fin["recovered"], true);

    let show = env.show(&sid);
    let msgs = show["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 1, "{show}");
    assert_eq!(msgs[0]["status"], "done");
    assert_eq!(read(env.ws.join("one.txt")), "1");
    let log = env.events(&sid);
    assert_contiguous(&log);
    assert_eq!(
        log.iter()
            .filter(|e| e["type"] == "message.admitted")
            .count(),
        1
    );
    assert_eq!(
        log.iter().filter(|e| e["type"] == "turn.started").count(),
        1
    );

    // The session goes on normally.
    let out = env.run(&["exec", "--session", &sid, "--json", "continue"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ev = json_lines(&out);
    assert!(
        ev.iter()
            .any(|e| e["type"] == "assistant.message" && e["text"] == "after restart"),
        "{}",
        text(&out)
    );
    assert_contiguous(&env.events(&sid));
}

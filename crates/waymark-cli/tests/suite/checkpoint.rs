//! `waymark checkpoints` and `waymark rewind` through the binary (G-28, G-29): the list,
//! a rewind of the files and the conversation, its undo, and a rewind refused while another
//! process runs a turn of the session.

use super::support::{Env, json_lines, spawn_until_tool_result, text};
use serde_json::{Value, json};

fn write(path: &str, content: &str) -> Value {
    json!({"tool_calls": [{"name": "write", "arguments": {"path": path, "content": content}}]})
}

fn checkpoints(env: &Env, sid: &str) -> Vec<Value> {
    let out = env.run(&["checkpoints", "--session", sid, "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn checkpoints_list_and_rewind_undoes_and_is_undone() {
    let env = Env::new();
    let model = env.script(
        "m.json",
        json!({"responses": [
            write("a.txt", "first\n"), {"text": "one"},
            write("a.txt", "second\n"), {"text": "two"},
        ]}),
    );
    let out = env.exec(&model, &["--permission", "auto", "first"]);
    assert!(out.status.success(), "{}", text(&out));
    let sid = env.only_session();
    let out = env.exec_session(&sid, &["second"]);
    assert!(out.status.success(), "{}", text(&out));
    let list = checkpoints(&env, &sid);
    let starts: Vec<&Value> = list
        .iter()
        .filter(|c| c["trigger"] == "turn_start")
        .collect();
    assert_eq!(starts.len(), 2, "{list:?}");
    assert_eq!(
        starts[1]["changed"],
        json!([{"path": "a.txt", "change": "added"}])
    );
    // The text listing says the same, with how to rewind.
    let out = env.run(&["checkpoints", "--session", &sid]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("before turn") && shown.contains("+a.txt"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("waymark rewind --session {sid} --to")),
        "{shown}"
    );

    let to = starts[1]["id"].as_str().unwrap();
    let out = env.run(&["rewind", "--session", &sid, "--to", to]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains("reverted  a.txt"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "first\n"
    );
    let undo = shown
        .lines()
        .find_map(|l| l.strip_prefix(&format!("Undo with: waymark rewind --session {sid} --to ")))
        .expect("how to undo")
        .to_string();
    // Undo, with the event as JSON.
    let out = env.run(&["rewind", "--session", &sid, "--to", &undo, "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let ev = &json_lines(&out)[0];
    assert_eq!(ev["type"], "session.rewound");
    assert_eq!(ev["rewound_turns"], json!([]));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "second\n"
    );
    // An unknown checkpoint is named, with where to find them.
    let out = env.run(&["rewind", "--session", &sid, "--to", "cp-nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no checkpoint `cp-nope`") && err.contains("waymark checkpoints"),
        "{err}"
    );
}

#[test]
fn a_rewind_while_another_process_runs_a_turn_is_refused_and_changes_nothing() {
    let env = Env::new();
    let model = env.script(
        "slow.json",
        json!({"responses": [
            write("a.txt", "made\n"),
            {"text": "slow", "delay_ms": 30000},
        ]}),
    );
    let (mut child, sid, _rest) = spawn_until_tool_result(&env, &model, "go");
    let to = checkpoints(&env, &sid)[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.run(&["rewind", "--session", &sid, "--to", &to]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("driven by another process"), "{err}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "made\n"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// Second red-team: the workspace folder replaced between two processes (a link to another
/// folder put in its place, or a new folder) must not be rewound into: the rewind named the
/// new folder's files as "came since" and deleted them. Each checkpoint records the folder it
/// was taken of.
#[test]
fn a_rewind_into_a_workspace_replaced_since_is_refused() {
    let env = Env::new();
    let model = env.script(
        "m.json",
        json!({"responses": [
            write("a.txt", "first\n"), {"text": "one"},
            write("a.txt", "second\n"), {"text": "two"},
        ]}),
    );
    let out = env.exec(&model, &["--permission", "auto", "first"]);
    assert!(out.status.success(), "{}", text(&out));
    let sid = env.only_session();
    let out = env.exec_session(&sid, &["second"]);
    assert!(out.status.success(), "{}", text(&out));
    let to = checkpoints(&env, &sid)
        .iter()
        .find(|c| c["trigger"] == "turn_start")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ws = env.ws.clone();
    let moved = ws.with_file_name("ws-moved");
    let other = ws.with_file_name("other");
    std::fs::rename(&ws, &moved).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("z.txt"), "someone else's\n").unwrap();
    for replacement in ["link", "folder"] {
        if replacement == "link" {
            std::os::unix::fs::symlink(&other, &ws).unwrap();
        } else {
            std::fs::remove_file(&ws).unwrap();
            std::fs::create_dir(&ws).unwrap();
            std::fs::write(ws.join("q.txt"), "new\n").unwrap();
        }
        let out = env.run(&["rewind", "--session", &sid, "--to", &to, "--files"]);
        assert!(!out.status.success(), "{replacement}: {}", text(&out));
        assert!(
            text(&out).contains("not the folder"),
            "{replacement}: {}",
            text(&out)
        );
    }
    assert!(other.join("z.txt").exists() && ws.join("q.txt").exists());
}

/// Fourth red-team: a checkpoint from before the folder was recorded (its row has no root)
/// let a rewind into a replaced workspace through. It is held to the session's first
/// checkpoint that recorded one.
#[test]
fn a_checkpoint_from_before_roots_were_recorded_is_held_to_the_sessions_first() {
    let env = Env::new();
    let model = env.script(
        "m.json",
        json!({"responses": [
            write("a.txt", "first\n"), {"text": "one"},
            write("a.txt", "second\n"), {"text": "two"},
        ]}),
    );
    let out = env.exec(&model, &["--permission", "auto", "first"]);
    assert!(out.status.success(), "{}", text(&out));
    let sid = env.only_session();
    let out = env.exec_session(&sid, &["second"]);
    assert!(out.status.success(), "{}", text(&out));
    let to = checkpoints(&env, &sid)
        .iter()
        .find(|c| c["trigger"] == "turn_start")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let db = rusqlite::Connection::open(env.data.join("waymark.db")).unwrap();
    db.execute("UPDATE checkpoints SET root = NULL WHERE id = ?1", [&to])
        .unwrap();
    drop(db);
    let ws = env.ws.clone();
    std::fs::rename(&ws, ws.with_file_name("ws-moved")).unwrap();
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("other.txt"), "someone else's\n").unwrap();
    let out = env.run(&["rewind", "--session", &sid, "--to", &to, "--files"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("not the folder"), "{}", text(&out));
    assert!(ws.join("other.txt").exists());
}

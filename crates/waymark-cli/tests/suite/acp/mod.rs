//! `waymark acp` as editors run it: the real binary driven by real ACP clients, which
//! scripts/setup.sh installs in tests/acp with the Node 22 they need (acpx, and a small editor
//! on the official TypeScript SDK, tests/acp/client.mjs); over SSH; and under hostile input.

mod acpx;
mod auth;
mod hostile;
mod raw;
mod sdk;
mod ssh;

use super::support::Env;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;

/// tests/acp, where the clients are.
fn clients_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/acp");
    assert!(
        dir.join("node_modules/.bin/acpx").exists()
            && dir.join("node_modules/@agentclientprotocol/sdk").exists(),
        "the ACP clients are missing from {}: run scripts/setup.sh",
        dir.display()
    );
    dir
}

/// `PATH` with the clients' Node first.
fn node_path() -> String {
    format!(
        "{}:{}",
        clients_dir().join("node_modules/.bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The command line that starts `waymark acp` on `env`'s data and settings with `model`.
fn agent_argv(env: &Env, model: &str, extra: &[&str]) -> Vec<String> {
    if !env.dir.path().join("settings.json").exists() {
        env.settings("{}");
    }
    let mut argv = vec![
        env!("CARGO_BIN_EXE_waymark").to_string(),
        "--data-dir".into(),
        env.data.display().to_string(),
        "--config".into(),
        env.dir.path().join("settings.json").display().to_string(),
        "acp".into(),
        "--model".into(),
        model.to_string(),
    ];
    argv.extend(extra.iter().map(|s| s.to_string()));
    argv
}

/// Runs the SDK editor (tests/acp/client.mjs) on `agent` in `env`'s workspace through
/// `connections` (lists of steps, one agent process each): the lines it printed.
fn sdk(env: &Env, agent: &[String], connections: Value) -> Vec<Value> {
    let program = json!({
        "agent": agent,
        "cwd": env.ws,
        "connections": connections,
    });
    let out = Command::new("node")
        .env("PATH", node_path())
        .env("HOME", env.dir.path())
        .current_dir(clients_dir())
        .arg("client.mjs")
        .arg(program.to_string())
        .output()
        .unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        out.status.success(),
        "the SDK client failed: {}\n{lines:#?}",
        String::from_utf8_lossy(&out.stderr)
    );
    let errors: Vec<&Value> = lines.iter().filter(|l| l["seen"] == "error").collect();
    assert!(errors.is_empty(), "steps failed: {errors:#?}");
    lines
}

/// The lines the SDK client printed of one kind (`stop`, `asked`, `update`, …).
fn seen<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["seen"] == kind).collect()
}

/// The updates of kind `kind` (`plan`, `tool_call`, …).
fn updates<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["seen"] == "update" && l["update"]["sessionUpdate"] == kind)
        .map(|l| &l["update"])
        .collect()
}

/// All the agent's message text, in order.
fn said(lines: &[Value]) -> String {
    updates(lines, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// A model turn that writes `path`.
fn write(path: &str, content: &str) -> Value {
    json!({"tool_calls": [{"name": "write", "arguments": {"path": path, "content": content}}]})
}

/// A goal with no reviewer whose model works three turns, then says it is complete: `env`'s
/// settings and the model for it.
fn three_turn_goal(env: &Env) -> String {
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let look = |i: u32| json!({"text": format!("looking {i}. "), "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]});
    env.script(
        "s.json",
        json!({"responses": [
            look(1), {"text": "turn 1 done. "},
            look(2), {"text": "turn 2 done. "},
            look(3), {"text": "turn 3 done. "},
            {"text": "all done", "tool_calls": [{"name": "update_goal", "arguments": {"mode": "status", "status": "complete", "message": "done"}}]}
        ]}),
    )
}

/// What the editor was told of [`three_turn_goal`] says each turn and the goal's end.
fn assert_three_turns_and_done(said: &str) {
    for n in 1..=3 {
        assert!(said.contains(&format!("turn {n} done")), "{said}");
    }
    assert!(said.contains("Goal complete"), "{said}");
}

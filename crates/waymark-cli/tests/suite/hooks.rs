//! Hooks and subagents through the real `waymark` binary (issue 42): a Claude Code hook
//! script blocks `rm` in `exec`, its run is one line of the transcript and a `hook.ran`
//! event; a hook that exits without reading its input does not kill the process (the CLI
//! restores SIGPIPE's default action); a subagent's calls are prefixed `[task:<agent>]` and
//! its `--json` events carry the `task` call's id.

use super::support::{Env, json_lines, text};
use serde_json::json;

const NO_RM: &str = r#"import json, sys
event = json.load(sys.stdin)
if event["tool_name"] == "Bash" and "rm " in event["tool_input"]["command"]:
    print("rm is not allowed here", file=sys.stderr)
    sys.exit(2)
"#;

fn bash(c: &str) -> serde_json::Value {
    json!({"name": "bash", "arguments": {"command": c}})
}

#[test]
fn a_claude_code_hook_blocks_rm_and_the_transcript_says_so() {
    let env = Env::new();
    let script = env.dir.path().join("no_rm.py");
    std::fs::write(&script, NO_RM).unwrap();
    env.settings(
        &json!({"hooks": {"import_claude": false, "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": format!("python3 {}", script.display())}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "exit 0"}]}
        ]}})
        .to_string(),
    );
    std::fs::write(env.ws.join("keep.txt"), "x").unwrap();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [bash("ls")]},
            {"tool_calls": [bash("rm keep.txt")]},
            {"text": "done"}
        ]}),
    );
    let out = env.exec(&model, &["--permission", "auto", "tidy"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(env.ws.join("keep.txt").exists(), "the rm ran: {said}");
    assert!(said.contains("[hook PreToolUse]"), "{said}");
    assert!(said.contains("blocked (exit 2"), "{said}");
    assert!(said.contains("rm is not allowed here"), "{said}");

    let out = env.exec(&model, &["--permission", "auto", "--json", "tidy"]);
    let events = json_lines(&out);
    let ran: Vec<_> = events.iter().filter(|e| e["type"] == "hook.ran").collect();
    assert_eq!(ran.len(), 4, "{ran:?}");
    assert!(
        ran.iter()
            .any(|e| e["outcome"] == "blocked" && e["exit_code"] == 2),
        "{ran:?}"
    );
}

#[test]
fn a_subagents_calls_are_marked_with_their_task() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [{"name": "task", "arguments": {"description": "survey", "prompt": "List the files.", "agent": "explore"}}]},
            {"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
            {"text": "There are no files."},
            {"text": "done"}
        ]}),
    );
    let out = env.exec(&model, &["--permission", "auto", "survey"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("[task:explore] list_dir"), "{said}");

    let out = env.exec(&model, &["--permission", "auto", "--json", "survey"]);
    let events = json_lines(&out);
    let task_id = events
        .iter()
        .find(|e| e["type"] == "tool.call" && e["name"] == "task")
        .map(|e| e["call_id"].clone())
        .expect("the task call");
    let child: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool.call" && e["name"] == "list_dir")
        .collect();
    assert_eq!(child.len(), 1, "{events:?}");
    assert_eq!(child[0]["parent_call_id"], task_id);
    assert_eq!(child[0]["agent"], "explore");
}

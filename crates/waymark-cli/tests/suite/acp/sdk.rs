//! The acceptance scenarios with an editor written on the official TypeScript SDK
//! (tests/acp/client.mjs) against the real `waymark acp`: a write allowed and one rejected, a
//! plan reviewed from the editor, a goal's continuation turns in one prompt, a session loaded
//! in a new process, and a cancel.

use super::super::support::Env;
use super::{
    agent_argv, assert_three_turns_and_done, said, sdk, seen, three_turn_goal, updates, write,
};
use serde_json::{Value, json};

#[test]
fn a_write_the_editor_allows_is_made_and_one_it_rejects_is_not() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            write("a.txt", "allowed"), {"text": "Wrote a.txt."},
            write("b.txt", "rejected"), {"text": "Left b.txt alone."}
        ]}),
    );
    let lines = sdk(
        &env,
        &agent_argv(&env, &model, &[]),
        json!([[
            {"new": true},
            {"prompt": "write a.txt", "pick": ["allow_once"]},
            {"prompt": "write b.txt", "pick": ["reject_once"]}
        ]]),
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "allowed"
    );
    assert!(!env.ws.join("b.txt").exists(), "{lines:#?}");
    let asked = seen(&lines, "asked");
    assert_eq!(asked.len(), 2, "{lines:#?}");
    for a in &asked {
        assert_eq!(
            a["options"],
            json!(["allow_once", "allow_always", "reject_once"])
        );
    }
    let stops: Vec<&Value> = seen(&lines, "stop").iter().map(|s| &s["reason"]).collect();
    assert_eq!(stops, [&json!("end_turn"), &json!("end_turn")]);
}

const PLAN_PATH: &str = "${session_dir}/artifacts/plan.md";

/// A model turn that writes the plan and asks for its review.
fn submit(plan: &str) -> Value {
    json!({"text": "Plan written.", "tool_calls": [
        {"name": "write", "arguments": {"path": PLAN_PATH, "content": plan}},
        {"name": "ExitPlanMode", "arguments": {}}
    ]})
}

/// Plan mode switched on from the editor; the plan it writes is shown with its steps and
/// reviewed with Waymark's four choices. "Revise" takes its feedback from the next prompt;
/// "Approve & implement" then implements the revised plan.
#[test]
fn a_plan_set_from_the_editor_is_revised_then_approved_and_implemented() {
    let env = Env::new();
    std::fs::write(env.ws.join("greet.txt"), "hello\n").unwrap();
    let v1 = "## Summary\nMake the greeting louder.\n\n## Steps\n- Uppercase greet.txt\n";
    let v2 = "## Summary\nMake the greeting louder, docs too.\n\n## Steps\n- Uppercase greet.txt\n- Say so in the README\n";
    let model = env.script(
        "s.json",
        json!({"responses": [
            submit(v1),
            submit(v2),
            write("greet.txt", "HELLO\n"),
            {"text": "Implemented."}
        ]}),
    );
    let lines = sdk(
        &env,
        &agent_argv(&env, &model, &[]),
        json!([[
            {"new": true},
            {"set_mode": "plan"},
            {"prompt": "make the greeting louder", "pick": ["revise"]},
            {"prompt": "mention it in the README too", "pick": ["approve", "allow_once"]}
        ]]),
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join("greet.txt")).unwrap(),
        "HELLO\n"
    );
    let asked = seen(&lines, "asked");
    let chose: Vec<&Value> = asked.iter().map(|a| &a["chose"]).collect();
    assert_eq!(
        chose,
        [&json!("revise"), &json!("approve"), &json!("allow_once")],
        "{lines:#?}"
    );
    for review in &asked[..2] {
        assert_eq!(
            review["options"],
            json!(["approve", "approve_goal", "defer", "revise"])
        );
    }
    // The plan was shown, each revision with its steps as the editor's plan.
    let text = said(&lines);
    assert!(
        text.contains("Make the greeting louder.") && text.contains("docs too."),
        "{text}"
    );
    assert!(text.contains("Send what the plan should change"), "{text}");
    let plans = updates(&lines, "plan");
    assert!(
        plans
            .iter()
            .any(|p| p["entries"].as_array().unwrap().len() == 2
                && p["entries"][1]["content"] == "Say so in the README"),
        "{plans:#?}"
    );
    // The feedback reached the agent as the plan's revision.
    let sid = seen(&lines, "session")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let revised = env.events(&sid).into_iter().any(|e| {
        e["type"] == "questionnaire.answered"
            && e["answer"]["answer"] == "revise"
            && e["answer"]["text"] == "mention it in the README too"
    });
    assert!(
        revised,
        "the feedback was not the plan's revision: {:#?}",
        env.events(&sid)
            .into_iter()
            .filter(|e| e["type"] == "questionnaire.answered")
            .collect::<Vec<_>>()
    );
    // Out of plan mode once approved, and the editor was told.
    let modes: Vec<&Value> = updates(&lines, "current_mode_update")
        .iter()
        .map(|u| &u["currentModeId"])
        .collect();
    assert_eq!(modes.first(), Some(&&json!("plan")), "{modes:?}");
    assert_eq!(modes.last(), Some(&&json!("default")), "{modes:?}");
    let stops: Vec<&Value> = seen(&lines, "stop").iter().map(|s| &s["reason"]).collect();
    assert_eq!(stops, [&json!("end_turn"), &json!("end_turn")]);
}

/// One prompt that sets a goal covers its continuation turns, the goal's progress streamed as
/// the editor's plan, and ends with the goal's last word.
#[test]
fn a_goal_runs_three_continuation_turns_in_one_prompt() {
    let env = Env::new();
    let model = three_turn_goal(&env);
    let lines = sdk(
        &env,
        &agent_argv(&env, &model, &[]),
        json!([[{"new": true}, {"prompt": "/goal tidy the folder"}]]),
    );
    let stops = seen(&lines, "stop");
    assert_eq!(stops.len(), 1, "{lines:#?}");
    assert_eq!(stops[0]["reason"], "end_turn");
    assert_three_turns_and_done(&said(&lines));
    let plans = updates(&lines, "plan");
    assert!(plans.len() >= 3, "{plans:#?}");
    assert_eq!(plans[0]["entries"][0]["content"], "tidy the folder");
    assert_eq!(plans.last().unwrap()["entries"][0]["status"], "completed");
}

/// A session made in one agent process is loaded in the next, its history replayed: the
/// user's message, the agent's reply and its tool call with the result.
#[test]
fn a_session_loaded_in_a_new_process_replays_its_history() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [write("a.txt", "one"), {"text": "Wrote a.txt for you."}]}),
    );
    let lines = sdk(
        &env,
        &agent_argv(&env, &model, &["--permission", "auto"]),
        json!([
            [{"new": true}, {"prompt": "please write a.txt"}],
            [{"load": true}]
        ]),
    );
    let first_exit = lines.iter().position(|l| l["seen"] == "exit").unwrap();
    assert_eq!(lines[first_exit]["code"], 0);
    let replayed = &lines[first_exit + 1..];
    let user: String = updates(replayed, "user_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(user, "please write a.txt");
    assert!(
        said(replayed).contains("Wrote a.txt for you."),
        "{replayed:#?}"
    );
    let calls = updates(replayed, "tool_call");
    assert_eq!(calls.len(), 1, "{replayed:#?}");
    assert_eq!(calls[0]["kind"], "edit");
    assert!(
        !updates(replayed, "tool_call_update").is_empty(),
        "the call's result was not replayed: {replayed:#?}"
    );
    // The history came before the load's answer.
    let loaded = replayed.iter().position(|l| l["seen"] == "loaded").unwrap();
    assert!(replayed[..loaded].iter().any(|l| l["seen"] == "update"));
}

/// `session/cancel` during a long command stops the prompt at once as `cancelled`, and the
/// agent's next step never runs.
#[test]
fn a_cancel_stops_a_running_command_and_ends_the_prompt() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
            write("after.txt", "should not be written")
        ]}),
    );
    let lines = sdk(
        &env,
        &agent_argv(&env, &model, &["--permission", "auto"]),
        json!([[{"new": true}, {"prompt": "wait a while", "cancel_on": "tool_call"}]]),
    );
    let stops = seen(&lines, "stop");
    assert_eq!(stops.len(), 1, "{lines:#?}");
    assert_eq!(stops[0]["reason"], "cancelled");
    // Well under the command's 30 s: the command was stopped, not waited for (the 1 s the
    // issue asks for is measured by scripts/bench_acp.py; a test bound stays loose).
    let ms = stops[0]["cancel_ms"].as_u64().unwrap();
    assert!(ms < 10_000, "the cancel took {ms} ms");
    assert!(!env.ws.join("after.txt").exists());
}

/// The reference MCP server-everything, which scripts/setup.sh installs in tests/mcp.
fn everything() -> std::path::PathBuf {
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/.bin/mcp-server-everything");
    assert!(
        server.exists(),
        "scripts/setup.sh installs the MCP test servers"
    );
    server
}

/// The prompts of the MCP servers that serve the session (the reference server-everything,
/// from tests/mcp) are offered among its slash commands, once the servers have started.
#[test]
fn mcp_prompts_are_offered_as_commands() {
    let env = Env::new();
    let server = everything();
    env.settings(
        &json!({"mcp_servers": {"everything": {"command": server, "args": ["stdio"]}}}).to_string(),
    );
    let model = env.script("s.json", json!({"responses": [{"text": "unused"}]}));
    let lines = sdk(
        &env,
        &agent_argv(&env, &model, &[]),
        json!([[
            {"new": true},
            {"until": "available_commands_update", "containing": "mcp__everything__"}
        ]]),
    );
    let offered: Vec<&Value> =
        updates(&lines, "available_commands_update").last().unwrap()["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .collect();
    let names: Vec<&str> = offered
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"goal"), "{names:?}");
    let prompt = offered
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with("mcp__everything__"))
        .unwrap();
    assert!(
        !prompt["description"].as_str().unwrap().is_empty(),
        "{prompt}"
    );
}

/// A project's `.mcp.json` runs commands from the repository: an editor that allows whatever
/// it is asked must not start them. The question is never put to the editor; the prompt ends
/// saying where to answer it, and the server has not started.
#[test]
fn a_projects_servers_are_never_approved_from_the_editor() {
    let env = Env::new();
    let log = env.dir.path().join("started.log");
    std::fs::write(
        env.ws.join(".mcp.json"),
        json!({"mcpServers": {"proj": {
            "type": "stdio", "command": "sh",
            "args": ["-c", format!("echo started >> {}; sleep 5", log.display())]
        }}})
        .to_string(),
    )
    .unwrap();
    let model = env.script("s.json", json!({"responses": [{"text": "Hello."}]}));
    let lines = sdk(
        &env,
        &agent_argv(&env, &model, &[]),
        json!([[
            {"new": true},
            {"prompt": "hi", "pick": ["approve", "approve_goal", "allow_always", "allow_once"]}
        ]]),
    );
    assert!(seen(&lines, "asked").is_empty(), "{lines:#?}");
    assert_eq!(seen(&lines, "stop")[0]["reason"], "end_turn");
    assert!(said(&lines).contains("waymark answer"), "{}", said(&lines));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!log.exists(), "the project's server started");
}

/// An MCP server the editor names joins that session alone: its tool runs there (the
/// reference server-everything's `echo`), and another session of the same connection has no
/// such tool.
#[test]
fn the_editors_mcp_server_joins_its_session_alone() {
    let env = Env::new();
    let server = everything();
    let echo = json!({"tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "from the editor's server"}}]});
    // Each session plays the script from its start: the tool, then a resource of the server.
    let read = json!({"tool_calls": [{"name": "read_mcp_resource", "arguments": {"server": "everything", "uri": "demo://resource/static/document/architecture.md"}}]});
    let model = env.script(
        "s.json",
        json!({"responses": [echo, read, {"text": "Done."}]}),
    );
    let everything = json!({"name": "everything", "command": server, "args": ["stdio"], "env": []});
    let lines = sdk(
        &env,
        &agent_argv(&env, &model, &["--permission", "auto"]),
        json!([[
            {"new": true, "mcp_servers": [everything]},
            {"prompt": "echo something"},
            {"new": true},
            {"prompt": "echo again"}
        ]]),
    );
    let results: Vec<String> = updates(&lines, "tool_call_update")
        .iter()
        .filter(|u| u["status"].is_string())
        .map(|u| u.to_string())
        .collect();
    assert_eq!(results.len(), 4, "{results:#?}");
    assert!(
        results[0].contains("from the editor's server") && results[0].contains("completed"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("[resource ") && results[1].contains("completed"),
        "{}",
        results[1]
    );
    // The second session never had the tool, nor the server's resources.
    for other in &results[2..] {
        assert!(other.contains("failed"), "{other}");
        assert!(!other.contains("Echo: from the editor"), "{other}");
        assert!(!other.contains("[resource "), "{other}");
    }
}

/// A key the editor gives its MCP server (here in the server's environment, which the
/// reference server's `get-env` tool prints back) is redacted like the user's own: neither
/// the editor nor the stored session sees it.
#[test]
fn a_key_the_editor_gives_its_server_is_redacted() {
    let env = Env::new();
    let token = "tok-5f3a9c1e7b2d4068aa91";
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [{"name": "mcp__everything__get-env", "arguments": {}}]},
            {"text": "Printed."}
        ]}),
    );
    let everything = json!({"name": "everything", "command": everything(), "args": ["stdio"],
        "env": [{"name": "EVERYTHING_TOKEN", "value": token}]});
    let lines = sdk(
        &env,
        &agent_argv(&env, &model, &["--permission", "auto"]),
        json!([[{"new": true, "mcp_servers": [everything]}, {"prompt": "print the environment"}]]),
    );
    let shown = updates(&lines, "tool_call_update")
        .iter()
        .map(|u| u.to_string())
        .collect::<String>();
    assert!(shown.contains("[REDACTED:EVERYTHING_TOKEN]"), "{shown}");
    assert!(!shown.contains(token), "{shown}");
    for f in std::fs::read_dir(&env.data).unwrap().flatten() {
        if f.path().is_file() {
            let stored = std::fs::read(f.path()).unwrap();
            assert!(
                !stored.windows(token.len()).any(|w| w == token.as_bytes()),
                "{} holds the key",
                f.path().display()
            );
        }
    }
}

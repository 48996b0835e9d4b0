//! The acceptance scenarios with acpx, a headless ACP client on npm, against the real
//! `waymark acp`: a write it approves or denies, and a goal's continuation turns in one prompt.

use super::super::support::Env;
use super::{
    agent_argv, assert_three_turns_and_done, clients_dir, node_path, three_turn_goal, write,
};
use serde_json::{Value, json};
use std::process::Command;

/// acpx on `waymark acp` with `model`, in `env`'s workspace, with `args`: its JSON lines and
/// its exit code. Its queue owner (which keeps the agent for a persistent session) leaves a
/// second after its last prompt.
fn run_acpx(env: &Env, model: &str, agent: &[&str], args: &[&str]) -> (Vec<Value>, Option<i32>) {
    let out = acpx_command(env, model, agent, args).output().unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (lines, out.status.code())
}

/// The acpx command line for `args` on `waymark acp` with `model` and `agent` (its options).
fn acpx_command(env: &Env, model: &str, agent: &[&str], args: &[&str]) -> Command {
    let agent = agent_argv(env, model, agent).join(" ");
    let mut c = Command::new(clients_dir().join("node_modules/.bin/acpx"));
    c.env("PATH", node_path())
        .env("HOME", env.dir.path())
        .current_dir(&env.ws)
        .args(["--agent", &agent, "--cwd"])
        .arg(&env.ws)
        .args(["--ttl", "1", "--format", "json", "--timeout", "60"])
        .args(args);
    c
}

/// The prompt's answer among acpx's lines said `end_turn`.
fn assert_ended_its_turn(lines: &[Value]) {
    assert!(
        lines
            .iter()
            .any(|l| l["result"]["stopReason"] == "end_turn"),
        "{lines:#?}"
    );
}

/// One prompt through `acpx exec` under `policy`.
fn acpx(env: &Env, model: &str, policy: &str, prompt: &str) -> (Vec<Value>, Option<i32>) {
    run_acpx(env, model, &[], &[policy, "exec", prompt])
}

#[test]
fn acpx_runs_a_prompt_whose_write_it_approves() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            write("a.txt", "hello"),
            {"text": "Wrote a.txt."}
        ]}),
    );
    let (lines, code) = acpx(&env, &model, "--approve-all", "write a file");
    assert_eq!(code, Some(0), "{lines:#?}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "hello"
    );
    // The question offered exactly Waymark's options, the call is shown at its absolute
    // path, and the prompt ended its turn.
    let asked = lines
        .iter()
        .find(|l| l["method"] == "session/request_permission")
        .unwrap_or_else(|| panic!("no question: {lines:#?}"));
    let options: Vec<&str> = asked["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
    let call = lines
        .iter()
        .find(|l| l["params"]["update"]["sessionUpdate"] == "tool_call")
        .unwrap_or_else(|| panic!("no tool call: {lines:#?}"));
    assert_eq!(call["params"]["update"]["kind"], "edit");
    assert_eq!(
        call["params"]["update"]["locations"][0]["path"],
        env.ws.join("a.txt").display().to_string()
    );
    assert_ended_its_turn(&lines);
}

#[test]
fn acpx_denying_the_question_leaves_the_file_unwritten() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            write("a.txt", "hello"),
            {"text": "I will not write it."}
        ]}),
    );
    let (lines, _) = acpx(&env, &model, "--deny-all", "write a file");
    assert!(!env.ws.join("a.txt").exists(), "{lines:#?}");
    assert_ended_its_turn(&lines);
}

/// A goal set by one `exec` runs its continuation turns within that one prompt, its progress
/// sent as the editor's plan.
#[test]
fn acpx_follows_a_goal_through_its_continuation_turns() {
    let env = Env::new();
    let model = three_turn_goal(&env);
    let (lines, code) = acpx(&env, &model, "--approve-all", "/goal tidy the folder");
    assert_eq!(code, Some(0), "{lines:#?}");
    let text: String = lines
        .iter()
        .filter(|l| l["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|l| l["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert_three_turns_and_done(&text);
    let plans: Vec<&Value> = lines
        .iter()
        .filter(|l| l["params"]["update"]["sessionUpdate"] == "plan")
        .collect();
    assert!(plans.len() >= 3, "{plans:#?}");
    let answers = lines
        .iter()
        .filter(|l| l["result"]["stopReason"].is_string())
        .count();
    assert_eq!(answers, 1, "{lines:#?}");
}

/// A persistent acpx session switched to plan mode (`set-mode plan`): the plan comes to review
/// with Waymark's four choices, acpx approves, and the approved plan is implemented.
#[test]
fn acpx_sets_plan_mode_and_the_approved_plan_is_implemented() {
    let env = Env::new();
    std::fs::write(env.ws.join("greet.txt"), "hello\n").unwrap();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"text": "Plan written.", "tool_calls": [
                {"name": "write", "arguments": {"path": "${session_dir}/artifacts/plan.md",
                    "content": "## Summary\nMake it louder.\n\n## Steps\n- Uppercase greet.txt\n"}},
                {"name": "ExitPlanMode", "arguments": {}}
            ]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "greet.txt", "content": "HELLO\n"}}]},
            {"text": "Implemented."}
        ]}),
    );
    let (_, code) = run_acpx(&env, &model, &[], &["sessions", "new"]);
    assert_eq!(code, Some(0));
    let (lines, code) = run_acpx(&env, &model, &[], &["set-mode", "plan"]);
    assert_eq!(code, Some(0), "{lines:#?}");
    let (lines, code) = run_acpx(
        &env,
        &model,
        &[],
        &["--approve-all", "make the greeting louder"],
    );
    assert_eq!(code, Some(0), "{lines:#?}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("greet.txt")).unwrap(),
        "HELLO\n"
    );
    let review = lines
        .iter()
        .find(|l| {
            l["method"] == "session/request_permission"
                && l["params"]["options"][0]["optionId"] == "approve"
        })
        .unwrap_or_else(|| panic!("no plan review: {lines:#?}"));
    let options: Vec<&str> = review["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["approve", "approve_goal", "defer", "revise"]);
    assert!(
        lines
            .iter()
            .any(|l| l["params"]["update"]["sessionUpdate"] == "plan"),
        "the plan's steps were not sent: {lines:#?}"
    );
}

/// `acpx cancel` from another process while the session's command runs: the prompt ends
/// `cancelled` at once and the agent's next step never runs.
#[test]
fn acpx_cancel_stops_the_running_command() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "after.txt", "content": "no"}}]}
        ]}),
    );
    let auto = ["--permission", "auto"];
    let (_, code) = run_acpx(&env, &model, &auto, &["sessions", "new"]);
    assert_eq!(code, Some(0));
    let mut prompt = acpx_command(&env, &model, &auto, &["wait a while"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(prompt.stdout.take().unwrap());
    let mut lines = Vec::new();
    // Once the command is under way.
    loop {
        let mut l = String::new();
        assert!(
            std::io::BufRead::read_line(&mut out, &mut l).unwrap() > 0,
            "acpx ended early: {lines:#?}"
        );
        let v: Value = serde_json::from_str(&l).unwrap_or(Value::Null);
        let started = v["params"]["update"]["sessionUpdate"] == "tool_call";
        lines.push(v);
        if started {
            break;
        }
    }
    let started = std::time::Instant::now();
    let (_, code) = run_acpx(&env, &model, &auto, &["cancel"]);
    assert_eq!(code, Some(0));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(prompt.wait().unwrap().success());
    lines.extend(rest.lines().filter_map(|l| serde_json::from_str(l).ok()));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the cancel waited for the command"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["result"]["stopReason"] == "cancelled"),
        "{lines:#?}"
    );
    assert!(!env.ws.join("after.txt").exists());
}

/// Whether some process still runs `waymark acp` on `env`'s data.
fn agent_running(env: &Env) -> bool {
    let data = env.data.display().to_string();
    std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        std::fs::read(p.path().join("cmdline")).is_ok_and(|c| {
            let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
            args.contains(&data.as_bytes()) && args.contains(&&b"acp"[..])
        })
    })
}

/// acpx takes a saved session up again in a new agent process. It does so through
/// `session/resume`, which it prefers to `session/load` whenever an agent offers both (the SDK
/// editor covers `session/load`'s replay): the conversation goes on in the same Waymark
/// session, where the script left off.
#[test]
fn acpx_resumes_a_session_in_a_new_agent_process() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [{"text": "First answer."}, {"text": "Second answer."}]}),
    );
    let (_, code) = run_acpx(&env, &model, &[], &["sessions", "new"]);
    assert_eq!(code, Some(0));
    let (lines, code) = run_acpx(&env, &model, &[], &["the first question"]);
    assert_eq!(code, Some(0), "{lines:#?}");
    assert_ended_its_turn(&lines);
    let out = env.run(&["sessions", "--json"]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sid = listed[0]["id"].as_str().unwrap().to_string();

    // The queue owner leaves a second after its prompt, and its agent with it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while agent_running(&env) {
        assert!(
            std::time::Instant::now() < deadline,
            "the first agent never left"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (lines, code) = run_acpx(
        &env,
        &model,
        &[],
        &["sessions", "new", "--resume-session", &sid],
    );
    assert_eq!(code, Some(0), "{lines:#?}");
    let (lines, code) = run_acpx(&env, &model, &[], &["the second question"]);
    assert_eq!(code, Some(0), "{lines:#?}");
    assert_ended_its_turn(&lines);
    let said: String = lines
        .iter()
        .filter(|l| l["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|l| l["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert!(said.contains("Second answer."), "{lines:#?}");
    let out = env.run(&["sessions", "--json"]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
}

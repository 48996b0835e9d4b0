//! `waymark acp` as an editor runs it: the real binary, driven by a real ACP client (acpx,
//! which scripts/setup.sh installs in tests/acp with the Node 22 it needs), and bare, to show
//! that stdout carries nothing but the protocol and that the agent ends when stdin does.

use super::support::{Env, text};
use serde_json::{Value, json};
use std::io::{BufRead as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// tests/acp/node_modules/.bin, where acpx and its Node are.
fn acp_bin() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/acp/node_modules/.bin");
    assert!(
        bin.join("acpx").exists(),
        "acpx is missing from {}: run scripts/setup.sh",
        bin.display()
    );
    bin
}

/// acpx on `waymark acp` with `model`, in `env`'s workspace: its JSON lines and its exit code.
fn acpx(env: &Env, model: &str, policy: &str, prompt: &str) -> (Vec<Value>, Option<i32>) {
    let bin = acp_bin();
    let agent = format!(
        "{} --data-dir {} --config {} acp --model {model}",
        env!("CARGO_BIN_EXE_waymark"),
        env.data.display(),
        env.dir.path().join("settings.json").display(),
    );
    if !env.dir.path().join("settings.json").exists() {
        env.settings("{}");
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(bin.join("acpx"))
        .env("PATH", path)
        .env("HOME", env.dir.path())
        .current_dir(&env.ws)
        .args(["--agent", &agent, "--cwd"])
        .arg(&env.ws)
        .args([
            policy,
            "--format",
            "json",
            "--timeout",
            "60",
            "exec",
            prompt,
        ])
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (lines, out.status.code())
}

#[test]
fn acpx_runs_a_prompt_whose_write_it_approves() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "hello"}}]},
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
    assert!(
        lines
            .iter()
            .any(|l| l["result"]["stopReason"] == "end_turn"),
        "{lines:#?}"
    );
}

#[test]
fn acpx_denying_the_question_leaves_the_file_unwritten() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "hello"}}]},
            {"text": "I will not write it."}
        ]}),
    );
    let (lines, _) = acpx(&env, &model, "--deny-all", "write a file");
    assert!(!env.ws.join("a.txt").exists(), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l["result"]["stopReason"] == "end_turn"),
        "{lines:#?}"
    );
}

/// Stdout carries only JSON-RPC (logs go to the log file), bad input gets the protocol's
/// errors, and the agent exits 0 when the editor closes stdin.
#[test]
fn stdout_is_protocol_only_and_eof_ends_the_agent() {
    let env = Env::new();
    env.settings("{}");
    let model = env.script("s.json", json!({"responses": [{"text": "unused"}]}));
    let mut child = env
        .cmd()
        .args(["--log-level", "debug", "acp", "--model", &model])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":1}}}}"#
    )
    .unwrap();
    // A client waits for the handshake's answer before it sends anything else.
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    writeln!(stdin, "this is not json").unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"session/unheard_of","params":{{}}}}"#
    )
    .unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{{"sessionId":"elsewhere","prompt":[{{"type":"text","text":"hi"}}]}}}}"#
    )
    .unwrap();
    drop(stdin);
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lines: Vec<Value> = std::iter::once(first.trim_end().to_string())
        .chain(rest.lines().map(Result::unwrap))
        .map(|l| {
            serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {l}"))
        })
        .collect();
    assert!(lines.iter().all(|l| l["jsonrpc"] == "2.0"), "{lines:#?}");
    let reply = |id: i64| {
        lines
            .iter()
            .find(|l| l["id"] == id)
            .unwrap_or_else(|| panic!("no reply to {id}: {lines:#?}"))
    };
    assert_eq!(reply(0)["result"]["protocolVersion"], 1);
    assert_eq!(reply(1)["error"]["code"], -32601);
    assert!(
        reply(2)["error"]["message"].as_str().is_some()
            && reply(2).to_string().contains("elsewhere"),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l["error"]["code"] == -32700),
        "the line that is not JSON got no parse error: {lines:#?}"
    );
}

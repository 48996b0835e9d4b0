//! `waymark mcp list/add/remove` and `/mcp`, with the real reference server of `tests/mcp`.

use super::support::{Env, json_lines, read, text};
use serde_json::{Value, json};

fn everything() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/.bin/mcp-server-everything");
    assert!(p.exists(), "scripts/setup.sh installs the MCP test servers");
    p.display().to_string()
}

fn settings(env: &Env) -> Value {
    serde_json::from_str(&read(env.dir.path().join("settings.json"))).unwrap()
}

#[test]
fn add_list_and_remove_a_server() {
    let env = Env::new();
    let bin = everything();
    let o = env.run(&[
        "mcp",
        "add",
        "everything",
        "--env",
        "LEVEL=info",
        "--",
        &bin,
        "stdio",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        settings(&env)["mcp_servers"]["everything"]["args"],
        json!(["stdio"])
    );
    // A second server of the same name is refused, the file unchanged.
    let before = read(env.dir.path().join("settings.json"));
    let o = env.run(&["mcp", "add", "everything", "--", "true"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("already configured"), "{}", text(&o));
    assert_eq!(read(env.dir.path().join("settings.json")), before);

    let o = env.run(&["mcp", "list", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let list: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list[0]["name"], "everything");
    assert_eq!(list[0]["state"], "ready", "{list:?}");
    let echo = list[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .expect("echo listed");
    assert_eq!(echo["model_name"], "mcp__everything__echo");
    assert_eq!(echo["read_only"], true);

    let o = env.run(&["mcp", "list"]);
    let t = text(&o);
    assert!(t.contains("everything — ready"), "{t}");
    assert!(t.contains("echo (read-only)"), "{t}");

    let o = env.run(&["mcp", "remove", "everything"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        settings(&env)["mcp_servers"]
            .as_object()
            .is_none_or(|m| m.is_empty())
    );
    let o = env.run(&["mcp", "remove", "everything"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("no MCP server named `everything`"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_literal_secret_is_refused_and_nothing_is_written() {
    let env = Env::new();
    let o = env.run(&[
        "mcp",
        "add",
        "gh",
        "--env",
        "GITHUB_TOKEN=ghp_0123456789abcdef",
        "--",
        "srv",
    ]);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains("GITHUB_TOKEN") && t.contains("${GITHUB_TOKEN}"),
        "{t}"
    );
    assert!(!read(env.dir.path().join("settings.json")).contains("ghp_"));
    let o = env.run(&[
        "mcp",
        "add",
        "web",
        "--url",
        "https://example.com/mcp",
        "--header",
        "Authorization: Bearer abc",
    ]);
    assert!(!o.status.success());
    assert!(!read(env.dir.path().join("settings.json")).contains("Bearer"));
}

#[test]
fn a_failed_server_is_listed_with_its_reason() {
    let env = Env::new();
    env.settings(r#"{"mcp_servers": {"ghost": {"command": "/nonexistent/mcp"}, "off": {"command": "x", "enabled": false}}}"#);
    let o = env.run(&["mcp", "list"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("ghost — failed: cannot start `/nonexistent/mcp`"),
        "{t}"
    );
    assert!(t.contains("off — disabled"), "{t}");
}

#[test]
fn slash_mcp_lists_the_servers_in_a_session() {
    let env = Env::new();
    env.settings(&format!(
        r#"{{"mcp_servers": {{"everything": {{"command": {:?}, "args": ["stdio"]}}}}}}"#,
        everything()
    ));
    let model = env.script("s.json", json!({"responses": []}));
    let o = env.exec(&model, &["--json", "/mcp"]);
    assert!(o.status.success(), "{}", text(&o));
    let out: Vec<String> = json_lines(&o)
        .iter()
        .filter(|e| e["type"] == "command.output")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].starts_with("everything — "), "{out:?}");
}

/// Whether process `pid` is gone (or a zombie nobody has reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat[stat.rfind(')').unwrap() + 1..]
            .trim_start()
            .starts_with('Z'),
    }
}

fn wait_gone(pid: u32, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !gone(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} ({pid}) is still running"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `kill -9` of the app: the server dies with it (the kernel kills the leader), and what the
/// server started is killed at the next start.
#[test]
fn a_stdio_server_never_outlives_the_app_even_after_kill_9() {
    let env = Env::new();
    let pids = env.dir.path().join("pids");
    let hostile =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/hostile_server.py");
    env.settings(
        &json!({"mcp_servers": {"family": {
            "command": "python3",
            "args": [hostile.display().to_string(), "family"],
            "env": {"HOSTILE_PID_FILE": pids.display().to_string()}
        }}})
        .to_string(),
    );
    // The reply comes after the server has started; the next one keeps the app running.
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"delay_ms": 3000, "tool_calls": [{"name": "mcp__family__act", "arguments": {}}]},
            {"delay_ms": 120000, "text": "never"}
        ]}),
    );
    let mut app = env
        .cmd()
        .args(env.exec_args(&model, &["--permission", "auto", "go"]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (leader, grandchild) = loop {
        if let Ok(t) = std::fs::read_to_string(&pids)
            && let Some((a, b)) = t.split_once(' ')
        {
            break (a.parse::<u32>().unwrap(), b.parse::<u32>().unwrap());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server never ran the call"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(!gone(leader) && !gone(grandchild));
    app.kill().unwrap(); // SIGKILL: nothing of the app runs after this
    app.wait().unwrap();
    wait_gone(leader, "the server");
    // The next start kills what the server left.
    let o = env.run(&["mcp", "list"]);
    assert!(o.status.success(), "{}", text(&o));
    wait_gone(grandchild, "the server's child");
}

/// A server's form during a `waymark exec` is answered from another terminal with `waymark
/// answer … accept --field`, and the values reach the server; a second answer is refused.
#[test]
fn a_servers_form_is_answered_with_waymark_answer_from_another_process() {
    let env = Env::new();
    env.settings(&format!(
        r#"{{"mcp_servers": {{"everything": {{"command": {:?}, "args": ["stdio"]}}}}}}"#,
        everything()
    ));
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"delay_ms": 2000, "tool_calls": [{"name": "mcp__everything__trigger-elicitation-request", "arguments": {}}]},
            {"text": "done"}
        ]}),
    );
    let out = env.dir.path().join("exec.out");
    let app = env
        .cmd()
        .args(env.exec_args(&model, &["--json", "--permission", "auto", "go"]))
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (session, form) = loop {
        let lines: Vec<Value> = read(&out)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if let Some(e) = lines
            .iter()
            .find(|e| e["type"] == "questionnaire.opened" && e["question"]["kind"] == "elicitation")
        {
            break (
                e["session_id"].as_str().unwrap().to_string(),
                e["id"].as_str().unwrap().to_string(),
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no form was asked: {}",
            read(&out)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // A value outside the form is refused, naming the field; nothing is sent.
    let accept = |integer: &str| {
        let integer = format!("integer={integer}");
        env.run(&[
            "answer",
            "--session",
            &session,
            &form,
            "accept",
            "--field",
            "name=Ann",
            "--field",
            &integer,
        ])
    };
    let o = accept("500");
    assert!(!o.status.success());
    assert!(text(&o).contains("`integer`"), "{}", text(&o));
    let o = accept("7");
    assert!(o.status.success(), "{}", text(&o));
    let o = env.run(&["answer", "--session", &session, &form, "decline"]);
    assert!(!o.status.success(), "answered once only");
    let status = wait_exit(app);
    assert!(status.success(), "{}", read(&out));
    let result = read(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool.result")
        .expect("a tool result");
    let content = result["content"].as_str().unwrap();
    assert!(content.contains("Name: Ann"), "{content}");
    assert!(content.contains("Favorite Integer: 7"), "{content}");
}

fn wait_exit(mut child: std::process::Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the app did not finish");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Issue 37, item 11: a session's first request waits for its servers, so an `exec` whose
/// very first step calls a server's tool finds it offered and it runs; a server that cannot
/// be ready in time is named, never silently missing, and delays nothing past the bound.
#[test]
fn the_first_request_offers_the_tools_of_the_configured_servers() {
    let (first, result) = echo_on_the_first_step("");
    assert!(
        first.iter().any(|t| t == "mcp__everything__echo"),
        "the first request offered {first:?}"
    );
    assert_eq!(result["status"], "ok", "{result}");
}

/// With no wait for the first request, the tool is not offered yet, but a call that names
/// it waits for its server instead of failing as an unknown tool.
#[test]
fn a_call_to_a_server_still_starting_waits_for_it() {
    let (first, result) = echo_on_the_first_step(r#", "mcp": {"first_request_wait_ms": 0}"#);
    assert!(
        !first.iter().any(|t| t == "mcp__everything__echo"),
        "{first:?}"
    );
    assert_eq!(result["status"], "ok", "{result}");
}

/// An `exec` on a mock OpenAI server whose first reply calls the `everything` server's
/// `echo` (`extra` adds to the settings): the tools the first request offered, and the
/// call's result.
fn echo_on_the_first_step(extra: &str) -> (Vec<String>, Value) {
    use waymark_test_support::mock_server::{Flavor, MockServer, reply};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start(vec![
        reply(
            Flavor::OpenAi,
            "",
            Some(("mcp__everything__echo", json!({"message": "first step"}))),
            100,
        ),
        reply(Flavor::OpenAi, "done", None, 100),
    ]));
    let env = Env::new();
    env.settings(&format!(
        r#"{{"mcp_servers": {{"everything": {{"command": {:?}, "args": ["stdio"]}}}}{extra}}}"#,
        everything()
    ));
    let out = env
        .cmd()
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args([
            "exec",
            "--json",
            "--permission",
            "auto",
            "--workspace",
            env.ws.to_str().unwrap(),
            "--model",
            "openai:m",
            "echo it",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let requests = server.recorded();
    let first: Vec<String> = requests[0].body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool.result")
        .expect("a tool result");
    if result["status"] == "ok" {
        assert!(
            result["content"].as_str().unwrap().contains("first step"),
            "{result}"
        );
    }
    (first, result)
}

/// A server that never gets ready delays the first request by the bound alone, and the
/// session says it is still starting.
#[test]
fn a_server_still_starting_is_named_and_delays_nothing_past_the_bound() {
    let env = Env::new();
    // Speaks no MCP: it reads stdin and never answers.
    env.settings(
        r#"{"mcp_servers": {"slow": {"command": "sleep", "args": ["30"]}}, "mcp": {"first_request_wait_ms": 500}}"#,
    );
    let model = env.script("s.json", json!({"responses": [{"text": "hi"}]}));
    let started = std::time::Instant::now();
    let out = env.exec(&model, &["--json", "hello"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "a server that never answers held the session {:?}",
        started.elapsed()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let notice = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "session.notice")
        .unwrap_or_else(|| panic!("no notice: {stdout}"));
    assert_eq!(
        notice["text"], "slow is still starting; its tools come later",
        "{notice}"
    );
}

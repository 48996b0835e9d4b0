//! MCP servers in sessions, against the real reference servers of `tests/mcp` (installed by
//! `scripts/setup.sh`) and a hostile one (`tests/mcp/hostile_server.py`): each call passes
//! the guard chain, and what a server sends is bounded, redacted and escaped.

use super::harness::{Harness, permission_asked, results, run, user};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use waymark_protocol::config::Config;
use waymark_protocol::{Answer, Op, PermissionMode, ToolStatus};
use waymark_runtime::SessionHandle;

fn mcp_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp")
}

fn bin(name: &str) -> String {
    let p = mcp_dir().join("node_modules/.bin").join(name);
    assert!(
        p.exists(),
        "{} missing: scripts/setup.sh installs the MCP test servers",
        p.display()
    );
    p.display().to_string()
}

fn everything() -> Value {
    json!({"command": bin("mcp-server-everything"), "args": ["stdio"]})
}

fn hostile(mode: &str) -> Value {
    json!({"command": "python3", "args": [mcp_dir().join("hostile_server.py").display().to_string(), mode]})
}

fn config(servers: &[(&str, Value)]) -> Config {
    let mut c = Config::default();
    for (name, s) in servers {
        c.mcp_servers
            .insert(name.to_string(), serde_json::from_value(s.clone()).unwrap());
    }
    c.validate().unwrap();
    c
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

fn script(calls: Vec<Value>) -> Value {
    json!({"responses": [{"tool_calls": calls}, {"text": "done"}]})
}

/// Waits until every configured server has started or failed (they start in the background
/// when the first session opens).
async fn settled(rt: &waymark_runtime::Runtime) {
    let hub = rt.mcp().expect("servers are configured");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = hub.status();
        if status
            .iter()
            .all(|s| !matches!(s.phase, waymark_mcp::Phase::Starting))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "servers did not start: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn session(h: &Harness, calls: Vec<Value>, mode: PermissionMode) -> SessionHandle {
    let s = h.session(script(calls), mode);
    settled(&h.runtime).await;
    s
}

#[tokio::test]
async fn echo_and_get_sum_round_trip_through_the_reference_server() {
    let h = Harness::new(config(&[("everything", everything())]));
    let s = session(
        &h,
        vec![
            call("mcp__everything__echo", json!({"message": "hello mcp"})),
            call("mcp__everything__get-sum", json!({"a": 2, "b": 40})),
            call(
                "mcp__everything__get-structured-content",
                json!({"location": "Chicago"}),
            ),
        ],
        PermissionMode::Ask,
    )
    .await;
    let ev = run(&s, user("use the tools")).await;
    let r = results(&ev);
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert_eq!(r[0].2, "Echo: hello mcp");
    assert_eq!(r[1].1, ToolStatus::Ok, "{r:?}");
    assert!(r[1].2.contains("42"), "{r:?}");
    // Structured content comes back as JSON.
    let weather: Value = serde_json::from_str(&r[2].2).unwrap();
    assert!(weather["temperature"].is_number(), "{weather}");
    // Read-only tools run without asking, even in `ask`.
    assert!(permission_asked(&ev).is_none());
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_model_is_offered_the_servers_tools_by_their_prefixed_names() {
    let (h, rec) = Harness::recording(
        config(&[("everything", everything())]),
        json!({"responses": [{"text": "ok"}]}),
    );
    let s = h.recorded_session(PermissionMode::Ask);
    settled(&h.runtime).await;
    run(&s, user("hi")).await;
    let names: Vec<String> = rec.requests.lock().unwrap()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    assert!(names.contains(&"bash".to_string()), "built-in tools stay");
    s.shutdown().await.unwrap();
}

fn filesystem(root: &std::path::Path) -> Value {
    json!({"command": bin("mcp-server-filesystem"), "args": [root.display().to_string()]})
}

/// Plan mode offers only read-only tools and refuses `write_file` even when the model names
/// it: nothing changes on disk.
#[tokio::test]
async fn plan_mode_refuses_the_filesystem_servers_write_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let target = root.join("written.txt");
    let (h, rec) = Harness::recording(
        config(&[("fs", filesystem(&root))]),
        json!({"responses": [
            {"tool_calls": [call("mcp__fs__write_file", json!({"path": target.display().to_string(), "content": "pwned"}))]},
            {"text": "done"}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    settled(&h.runtime).await;
    s.submit(user("/plan on")).await.unwrap();
    let ev = run(&s, user("write it")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("Plan mode"), "{r:?}");
    assert!(!target.exists(), "nothing is written in plan mode");
    let offered: Vec<String> = rec.requests.lock().unwrap()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        offered.contains(&"mcp__fs__read_text_file".to_string()),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"mcp__fs__write_file".to_string()),
        "{offered:?}"
    );
    s.shutdown().await.unwrap();
}

/// `ask` asks about a tool that is not read-only, naming it; `deny` runs nothing; the
/// `read-only` mode refuses it; `auto` runs it.
#[tokio::test]
async fn permission_modes_hold_for_mcp_tools() {
    // The server's roots become the session's workspace (it asks for them).
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let h = Harness::new(config(&[("fs", filesystem(&root))]));
    let target = h.ws.join("w.txt");
    let write = || {
        call(
            "mcp__fs__write_file",
            json!({"path": target.display().to_string(), "content": "x"}),
        )
    };
    // ask, then deny.
    let s = session(&h, vec![write()], PermissionMode::Ask).await;
    let ev = run(&s, user("write")).await;
    let (q, asked) = permission_asked(&ev).expect("asked");
    assert_eq!(asked.tool, "mcp__fs__write_file");
    assert_eq!(asked.arguments["content"], "x", "the arguments in full");
    let ev = run(
        &s,
        Op::Answer {
            questionnaire_id: q,
            answer: Answer::Deny { message: None },
        },
    )
    .await;
    assert_eq!(results(&ev)[0].1, ToolStatus::Denied);
    assert!(!target.exists(), "a denied call runs nothing");
    s.shutdown().await.unwrap();
    // read-only refuses.
    let s = session(&h, vec![write()], PermissionMode::ReadOnly).await;
    let r = results(&run(&s, user("write")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("read-only"), "{r:?}");
    assert!(!target.exists());
    s.shutdown().await.unwrap();
    // auto-edit still asks: the server's `path` is nothing the runtime checks.
    let s = session(&h, vec![write()], PermissionMode::AutoEdit).await;
    let ev = run(&s, user("write")).await;
    assert!(permission_asked(&ev).is_some(), "auto-edit asks");
    assert!(!target.exists());
    s.shutdown().await.unwrap();
    // auto runs it.
    let s = session(&h, vec![write()], PermissionMode::Auto).await;
    let r = results(&run(&s, user("write")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x");
    s.shutdown().await.unwrap();
}

/// A hanging call ends at the server's timeout with a tool error naming the server, and the
/// turn goes on.
#[tokio::test]
async fn a_server_that_hangs_hits_its_timeout() {
    let mut server = hostile("hang");
    server["tool_timeout_ms"] = json!(1500);
    let h = Harness::new(config(&[("slow", server)]));
    let s = session(
        &h,
        vec![call("mcp__slow__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    let started = Instant::now();
    let ev = run(&s, user("go")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Error, "{r:?}");
    assert!(
        r[0].2.contains("MCP server `slow`") && r[0].2.contains("1.5 s"),
        "{r:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    s.shutdown().await.unwrap();
}

/// A server that dies mid-call gives a clear tool error; the session goes on, and the next
/// call starts it again.
#[tokio::test]
async fn a_server_that_crashes_mid_call_gives_a_tool_error_and_restarts() {
    let h = Harness::new(config(&[("crashy", hostile("crash"))]));
    let s = session(
        &h,
        vec![call("mcp__crashy__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].1, ToolStatus::Error, "{r:?}");
    assert!(
        r[0].2.contains("MCP server `crashy`") && r[0].2.contains("during the call"),
        "{r:?}"
    );
    s.shutdown().await.unwrap();
    // The next call starts the server again (at once, the first time).
    let s = session(
        &h,
        vec![call("mcp__crashy__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    let r = results(&run(&s, user("again")).await);
    assert!(
        r[0].2.contains("during the call"),
        "restarted and crashed again: {r:?}"
    );
    s.shutdown().await.unwrap();
}

/// A 50 MB answer is refused past the message limit, with a message saying so, and the
/// process does not hold it.
#[tokio::test]
async fn a_server_that_sends_50_mb_is_cut_off_in_bounded_memory() {
    let h = Harness::new(config(&[("big", hostile("huge"))]));
    let s = session(
        &h,
        vec![call("mcp__big__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].1, ToolStatus::Error, "{r:?}");
    assert!(r[0].2.contains("over 16 MiB"), "{r:?}");
    assert!(r[0].2.len() < 1000);
    s.shutdown().await.unwrap();
}

/// A secret the runtime knows, echoed by a server, is redacted before the model or the
/// screen sees it; and the server never gets the secrets of the environment.
#[tokio::test]
async fn a_secret_a_server_echoes_is_redacted_and_servers_get_no_secrets() {
    let secret = "correct-horse-battery-staple-mcp";
    let h = Harness::new(config(&[
        ("echo", hostile("echo")),
        ("env", hostile("env")),
    ]));
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(k, _)| k == "PATH" || k == "HOME")
        .collect();
    env.push(("DB_PASSWORD".into(), secret.into()));
    env.push(("HARMLESS_SETTING".into(), "visible-value".into()));
    let env = std::sync::Arc::new(env);
    let rt = h.reopen(|o| o.process_env = env.clone());
    let s = super::harness::session_on(
        &h,
        &rt,
        &h.ws,
        script(vec![
            call(
                "mcp__echo__act",
                json!({"text": format!("the key is {secret}")}),
            ),
            call("mcp__env__act", json!({})),
        ]),
        PermissionMode::Auto,
    );
    settled(&rt).await;
    let ev = run(&s, user("go")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(!r[0].2.contains(secret), "{r:?}");
    assert!(r[0].2.contains("the key is"), "{r:?}");
    // The server's own environment: the harmless variable, not the password.
    assert!(r[1].2.contains("HARMLESS_SETTING=visible-value"), "{r:?}");
    assert!(!r[1].2.contains("DB_PASSWORD"), "{r:?}");
    // Only what the runtime was given: nothing of the test process's own environment.
    assert!(std::env::var("CARGO_PKG_NAME").is_ok());
    assert!(!r[1].2.contains("CARGO_PKG_NAME="), "{r:?}");
    let shown = serde_json::to_string(&ev).unwrap();
    assert!(!shown.contains(secret), "no event carries it");
    s.shutdown().await.unwrap();
}

/// A server whose tool list changes is listed again before a later model call.
#[tokio::test]
async fn a_changed_tool_list_is_listed_again() {
    let h = Harness::new(config(&[("grow", hostile("changing"))]));
    let s = session(
        &h,
        vec![call("mcp__grow__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    let hub = h.runtime.mcp().unwrap();
    let names = |hub: &waymark_mcp::McpHub| -> Vec<String> {
        hub.status()[0]
            .tools
            .iter()
            .map(|t| t.tool_name.clone())
            .collect()
    };
    assert_eq!(names(hub), vec!["act"]);
    run(&s, user("go")).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while names(hub).len() < 2 {
        assert!(Instant::now() < deadline, "{:?}", names(hub));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(names(hub), vec!["act", "added"]);
    s.shutdown().await.unwrap();
}

/// A server that fails to start says why, naming the server, and the session's built-in
/// tools work meanwhile.
#[tokio::test]
async fn a_failed_server_says_why_and_delays_nothing() {
    let h = Harness::new(config(&[
        ("ghost", json!({"command": "/nonexistent/mcp-server"})),
        (
            "needs",
            json!({"command": "true", "env": {"TOKEN": "${WAYMARK_TEST_UNSET_VAR}"}}),
        ),
    ]));
    let s = session(
        &h,
        vec![call("list_dir", json!({"path": "."}))],
        PermissionMode::Auto,
    )
    .await;
    let status = h.runtime.mcp().unwrap().status();
    let reason = |name: &str| match &status.iter().find(|s| s.name == name).unwrap().phase {
        waymark_mcp::Phase::Failed(m) => m.clone(),
        other => panic!("{other:?}"),
    };
    assert!(reason("ghost").contains("cannot start"), "{status:?}");
    assert!(
        reason("needs").contains("WAYMARK_TEST_UNSET_VAR"),
        "{status:?}"
    );
    let r = results(&run(&s, user("list")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    s.shutdown().await.unwrap();
}

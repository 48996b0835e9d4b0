//! Against servers that misbehave on purpose (`tests/mcp/hostile_server.py`): each rule a
//! server could attack, attacked.

use super::super::harness::{Harness, results, run, user};
use super::*;
use serde_json::json;
use std::time::{Duration, Instant};
use waymark_protocol::mcp_view::McpServerState;
use waymark_protocol::{Op, PermissionMode, ToolStatus};

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
    let r = call_once(&h, "mcp__crashy__act", json!({}), PermissionMode::Auto).await;
    assert_eq!(r[0].1, ToolStatus::Error, "{r:?}");
    assert!(
        r[0].2.contains("MCP server `crashy`") && r[0].2.contains("during the call"),
        "{r:?}"
    );
    // The next call starts the server again (at once, the first time).
    let r = call_once(&h, "mcp__crashy__act", json!({}), PermissionMode::Auto).await;
    assert!(
        r[0].2.contains("during the call"),
        "restarted and crashed again: {r:?}"
    );
}

/// A 50 MB answer is refused past the message limit, with a message saying so, and the
/// process does not hold it.
#[tokio::test]
async fn a_server_that_sends_50_mb_is_cut_off_in_bounded_memory() {
    let h = Harness::new(config(&[("big", hostile("huge"))]));
    let r = call_once(&h, "mcp__big__act", json!({}), PermissionMode::Auto).await;
    assert_eq!(r[0].1, ToolStatus::Error, "{r:?}");
    assert!(r[0].2.contains("over 16 MiB"), "{r:?}");
    assert!(r[0].2.len() < 1000);
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
    let s = super::super::harness::session_on(
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
    let hub = h.runtime.mcp();
    let names = |hub: &waymark_mcp::McpHub| -> Vec<String> {
        hub.status()[0]
            .tools
            .iter()
            .map(|t| t.name.clone())
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
    let status = h.runtime.mcp().status();
    let reason = |name: &str| {
        let s = status.iter().find(|s| s.name == name).unwrap();
        assert_eq!(s.state, McpServerState::Failed, "{s:?}");
        s.reason.clone().unwrap()
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

/// Stop tells the server: `notifications/cancelled` for the very request.
#[tokio::test]
async fn stop_sends_the_server_a_cancellation() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancelled.log");
    let mut server = hostile("hang");
    server["env"] = json!({"HOSTILE_LOG": log.display().to_string()});
    let h = Harness::new(config(&[("slow", server)]));
    let s = session(
        &h,
        vec![call("mcp__slow__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    let mut rx = s.subscribe();
    s.submit(user("go")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    // The call is under way once the server has it.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("call")
    {
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.submit(Op::Stop).await.unwrap();
    super::super::harness::collect(&mut rx).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&log).unwrap();
        let call_id = text.lines().find_map(|l| l.strip_prefix("call "));
        if let Some(id) = call_id
            && text.lines().any(|l| l == format!("cancelled {id}"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.shutdown().await.unwrap();
}

/// With 300 tools whose schemas would fill more than the threshold of the context window,
/// the first request carries `tool_search` and none of them; after a search the matches are
/// offered and callable, and a tool never found is still callable by its name.
#[tokio::test]
async fn many_tools_are_searched_for_instead_of_offered() {
    let (h, rec) = Harness::recording(
        config(&[("many", hostile("many"))]),
        json!({"responses": [
            {"tool_calls": [call("tool_search", json!({"query": "042"}))]},
            {"tool_calls": [call("mcp__many__tool_042", json!({})), call("mcp__many__tool_100", json!({}))]},
            {"text": "done"}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    settled(&h.runtime).await;
    assert_eq!(h.runtime.mcp().status()[0].tools.len(), 300);
    let ev = run(&s, user("find the tool for widget 42")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(r[0].2.contains("mcp__many__tool_042"), "{r:?}");
    assert_eq!(r[1].1, ToolStatus::Ok, "{r:?}");
    assert_eq!(
        r[2].1,
        ToolStatus::Ok,
        "a tool called by name is loaded: {r:?}"
    );
    let requests = rec.requests.lock().unwrap().clone();
    let names =
        |i: usize| -> Vec<String> { requests[i].tools.iter().map(|t| t.name.clone()).collect() };
    let first = names(0);
    assert!(first.contains(&"tool_search".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "{first:?}");
    assert!(
        first.contains(&"bash".to_string()),
        "built-in tools are always offered"
    );
    let second = names(1);
    assert!(
        second.contains(&"mcp__many__tool_042".to_string()),
        "{second:?}"
    );
    assert_eq!(
        second.iter().filter(|n| n.starts_with("mcp__")).count(),
        1,
        "{second:?}"
    );
    let third = names(2);
    assert!(
        third.contains(&"mcp__many__tool_100".to_string()),
        "{third:?}"
    );
    s.shutdown().await.unwrap();
}

/// Below the threshold every tool is offered and there is no search.
#[tokio::test]
async fn a_few_tools_are_offered_without_a_search() {
    let names = first_offered(&[("one", hostile("echo"))], PermissionMode::Auto).await;
    assert!(names.contains(&"mcp__one__act".to_string()), "{names:?}");
    assert!(!names.contains(&"tool_search".to_string()), "{names:?}");
}

/// Peak resident memory of this test process, in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// 200,000 notifications (50 MB of them) before an answer: handled as they come, none
/// kept, and the call still answers.
#[tokio::test]
async fn a_server_that_floods_notifications_stays_in_bounded_memory() {
    let h = Harness::new(config(&[("loud", hostile("flood"))]));
    let s = session(
        &h,
        vec![call("mcp__loud__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    let before = peak_kib();
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    let grown = peak_kib().saturating_sub(before);
    eprintln!("peak grew by {grown} KiB");
    assert!(grown < 32 * 1024, "peak memory grew by {grown} KiB");
    s.shutdown().await.unwrap();
}

/// A tool description with terminal escapes and a fake permission prompt is shown escaped,
/// on its own line, by `/mcp`; the permission question names the tool alone.
#[tokio::test]
async fn a_servers_escapes_and_fake_prompts_are_shown_escaped() {
    let h = Harness::new(config(&[("evil", hostile("ansi"))]));
    let s = session(&h, vec![], PermissionMode::Ask).await;
    let ev = run(&s, user("/mcp")).await;
    let out: Vec<String> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            waymark_protocol::EventKind::CommandOutput { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        !out[0].contains('\u{1b}') && !out[0].contains('\u{7}'),
        "{out:?}"
    );
    let line = out[0].lines().find(|l| l.contains("act")).unwrap();
    assert!(
        line.contains("Allow every command"),
        "the prompt stays on the tool's line: {out:?}"
    );
    assert_eq!(out[0].lines().count(), 2, "{out:?}");
    s.shutdown().await.unwrap();
}

/// Reports that all say "done" pass the rate limit once: the screen gets a handful of
/// progress events, not ten thousand.
#[tokio::test]
async fn a_flood_of_finished_reports_is_rate_limited() {
    let h = Harness::new(config(&[("busy", hostile("progress"))]));
    let s = session(
        &h,
        vec![call("mcp__busy__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    let ev = run(&s, user("go")).await;
    let progress = ev
        .iter()
        .filter(|e| matches!(e.kind, waymark_protocol::EventKind::ToolProgress { .. }))
        .count();
    assert_eq!(results(&ev)[0].1, ToolStatus::Ok);
    assert!(progress <= 20, "{progress} progress events");
    s.shutdown().await.unwrap();
}

/// Descriptions of a megabyte each are cut to what a tool may carry.
#[tokio::test]
async fn huge_descriptions_are_cut() {
    let h = Harness::new(config(&[("wordy", hostile("bigdesc"))]));
    let _s = session(&h, vec![], PermissionMode::Auto).await;
    let status = h.runtime.mcp().status();
    assert_eq!(status[0].tools.len(), 10, "{:?}", status[0]);
    for t in &status[0].tools {
        assert!(
            t.description.len() <= waymark_mcp::hub::MAX_DESCRIPTION + 4,
            "{}",
            t.description.len()
        );
    }
}

/// A server that stops reading its input cannot hold a call past its timeout: the runtime
/// ends the call and the connection itself, and the session goes on.
#[tokio::test]
async fn a_server_that_stops_reading_cannot_hold_a_call() {
    let mut server = hostile("deaf");
    server["tool_timeout_ms"] = json!(1000);
    let h = Harness::new(config(&[("deaf", server)]));
    let big = "x".repeat(200 * 1024);
    let s = session(
        &h,
        vec![
            call("mcp__deaf__act", json!({})),
            call("mcp__deaf__act", json!({"text": big})),
        ],
        PermissionMode::Auto,
    )
    .await;
    let started = Instant::now();
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r.iter().all(|(_, st, _)| *st == ToolStatus::Error), "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    s.shutdown().await.unwrap();
}

/// A variable the settings take out of the tools' environment (`shell.env.exclude`) is gone
/// from a server that was already running: it starts afresh from the new environment.
#[tokio::test]
async fn a_server_loses_a_variable_the_settings_take_out_of_the_tools_environment() {
    let h = Harness::new(config(&[("env", hostile("env"))]));
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(k, _)| k == "PATH" || k == "HOME")
        .collect();
    env.push(("INTERNAL_ENDPOINT".into(), "db.internal:5432".into()));
    let env = std::sync::Arc::new(env);
    let rt = h.reopen(|o| o.process_env = env.clone());
    let dump = |rt: &waymark_runtime::Runtime| {
        super::super::harness::session_on(
            &h,
            rt,
            &h.ws,
            script(vec![call("mcp__env__act", json!({}))]),
            PermissionMode::Auto,
        )
    };
    let s = dump(&rt);
    settled(&rt).await;
    let r = results(&run(&s, user("go")).await);
    assert!(r[0].2.contains("INTERNAL_ENDPOINT=db.internal"), "{r:?}");
    s.shutdown().await.unwrap();

    let mut changed = (*rt.config()).clone();
    changed.shell.env.exclude = vec!["INTERNAL_*".into()];
    rt.apply_settings(changed).unwrap();
    let s = dump(&rt);
    settled(&rt).await;
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(!r[0].2.contains("INTERNAL_ENDPOINT"), "{r:?}");
    assert!(r[0].2.contains("PATH="), "{r:?}");
    s.shutdown().await.unwrap();
}

/// The images one request carried (OpenAI's wire format: image parts of user messages).
fn images_sent(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "image_url")
        .filter_map(|b| b["image_url"]["url"].as_str().map(str::to_string))
        .collect()
}

/// The red-team's images: a PNG that is only a header, a 16000×16000 WebP, a 9000×9000
/// JPEG, a JPEG called a PNG. The old check read the first bytes and let them through; a
/// provider would then refuse that request and every later one. Now each is decoded first:
/// the fakes are described in one line and never sent, and a real image too wide for a
/// provider goes scaled down.
#[tokio::test]
async fn fake_or_huge_images_from_a_server_never_reach_the_model() {
    use super::super::mock_server::{Flavor, MockServer, on_mock, reply};
    let server = MockServer::start(vec![
        reply(Flavor::OpenAi, "", Some(("mcp__imgs__act", json!({}))), 100),
        reply(Flavor::OpenAi, "seen", None, 120),
    ])
    .await;
    let h = Harness::new(config(&[("imgs", hostile("images"))]));
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    settled(&rt).await;
    let ev = run(&s, user("look")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    let text = &r[0].2;
    assert_eq!(text.matches("not passed on").count(), 4, "{text}");
    for why in [
        "image/png, 33 B; not passed on: it does not decode",
        "16000×16000 pixels, too large to scale down",
        "image/jpeg, 24 B; not passed on:",
        "not a image/png image",
    ] {
        assert!(text.contains(why), "{why}: {text}");
    }
    assert!(
        text.contains("3000×20 pixels, passed on scaled down"),
        "{text}"
    );
    let sent = images_sent(&server.recorded()[1].body);
    assert_eq!(sent.len(), 1, "only the real one goes: {sent:?}");
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD
        .decode(sent[0].trim_start_matches("data:image/png;base64,"))
        .unwrap();
    // Its width, from the PNG header: scaled to the longest side passed on.
    assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 2048);
    s.shutdown().await.unwrap();
}

/// A provider that refuses an image it was sent fails that request; before, every later
/// request carried the image again and the session was stuck. Now the call goes again
/// without the images of the refused request, and no later request carries them.
#[tokio::test]
async fn an_image_the_provider_refuses_is_dropped_and_the_session_goes_on() {
    use super::super::mock_server::{Flavor, MockResponse, MockServer, on_mock, reply};
    let server = MockServer::start(vec![
        reply(Flavor::OpenAi, "", Some(("mcp__img__act", json!({}))), 100),
        MockResponse::status(
            400,
            r#"{"error":{"message":"Invalid image: the image could not be processed","type":"invalid_request_error"}}"#,
            &[],
        ),
        reply(Flavor::OpenAi, "looked without it", None, 120),
        reply(Flavor::OpenAi, "and again", None, 130),
    ])
    .await;
    let h = Harness::new(config(&[("img", hostile("image"))]));
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    settled(&rt).await;
    let ev = run(&s, user("look")).await;
    let failed: Vec<_> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            waymark_protocol::EventKind::TurnFinished { error: Some(e), .. } => Some(e.clone()),
            _ => None,
        })
        .collect();
    assert!(failed.is_empty(), "the turn went on: {failed:?}");
    let recorded = server.recorded();
    assert_eq!(images_sent(&recorded[1].body).len(), 1, "sent once");
    assert!(images_sent(&recorded[2].body).is_empty(), "not again");
    run(&s, user("and now?")).await;
    assert!(
        images_sent(&server.recorded()[3].body).is_empty(),
        "nor in a later turn"
    );
    s.shutdown().await.unwrap();
}

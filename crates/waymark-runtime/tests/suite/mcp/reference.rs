//! Against the real reference servers of `tests/mcp`: server-everything (stdio and Streamable
//! HTTP) and server-filesystem, through the scripted model and mock models on the providers'
//! wire protocols.

use super::super::harness::{Harness, permission_asked, results, run, user};
use super::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use waymark_protocol::mcp_view::McpServerState;
use waymark_protocol::{Answer, Op, PermissionMode, ToolStatus};

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
    let names = first_offered(&[("everything", everything())], PermissionMode::Ask).await;
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    assert!(names.contains(&"bash".to_string()), "built-in tools stay");
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

/// A long operation's progress reaches the session as `tool.progress` events, and Stop ends
/// the call within a second, telling the server to cancel.
#[tokio::test]
async fn a_long_operation_shows_progress_and_stops_within_a_second() {
    let h = Harness::new(config(&[("everything", everything())]));
    let s = session(
        &h,
        vec![call(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}),
        )],
        PermissionMode::Auto,
    )
    .await;
    let mut rx = s.subscribe();
    s.submit(user("go")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let (call_id, progress) = loop {
        let ev = tokio::time::timeout_at(deadline.into(), rx.recv())
            .await
            .expect("a progress event")
            .unwrap();
        if let waymark_protocol::EventKind::ToolProgress {
            call_id,
            progress,
            total,
            ..
        } = ev.kind
        {
            assert_eq!(total, Some(30.0));
            break (call_id, progress);
        }
    };
    assert!(progress >= 1.0);
    let stopped = Instant::now();
    s.submit(Op::Stop).await.unwrap();
    let ev = super::super::harness::collect(&mut rx).await;
    // Within the engine's grace by design; a little slack for a loaded machine.
    assert!(
        stopped.elapsed() < Duration::from_millis(1500),
        "Stop took {:?}",
        stopped.elapsed()
    );
    let r: Vec<_> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            waymark_protocol::EventKind::ToolResult {
                call_id: c,
                content,
                ..
            } if *c == call_id => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert!(r.iter().any(|c| c.contains("stopped by the user")), "{r:?}");
    s.shutdown().await.unwrap();
}

/// The reference server over Streamable HTTP on a loopback port, killed when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_everything() -> HttpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

#[tokio::test]
async fn the_reference_server_works_over_streamable_http() {
    let server = http_everything();
    let h = Harness::new(config(&[("web", json!({"url": server.url}))]));
    let s = session(
        &h,
        vec![
            call("mcp__web__echo", json!({"message": "over http"})),
            call("mcp__web__get-sum", json!({"a": 20, "b": 22})),
        ],
        PermissionMode::Ask,
    )
    .await;
    let status = h.runtime.mcp().status();
    assert_eq!(status[0].state, McpServerState::Ready, "{status:?}");
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].2, "Echo: over http", "{r:?}");
    assert!(r[1].2.contains("42"), "{r:?}");
    s.shutdown().await.unwrap();
}

/// A server with resources brings the two resource tools: the list names them, and one is
/// read by its URI.
#[tokio::test]
async fn a_resource_of_the_reference_server_is_listed_and_read() {
    let uri = "demo://resource/static/document/architecture.md";
    let h = Harness::new(config(&[("everything", everything())]));
    let s = session(
        &h,
        vec![
            call("list_mcp_resources", json!({})),
            call(
                "read_mcp_resource",
                json!({"server": "everything", "uri": uri}),
            ),
            call(
                "read_mcp_resource",
                json!({"server": "nowhere", "uri": uri}),
            ),
        ],
        PermissionMode::ReadOnly,
    )
    .await;
    let r = results(&run(&s, user("read it")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(r[0].2.contains(&format!("everything: {uri}")), "{r:?}");
    assert_eq!(r[1].1, ToolStatus::Ok, "{r:?}");
    assert!(r[1].2.starts_with(&format!("[resource {uri}]\n")), "{r:?}");
    assert!(r[1].2.len() > 100, "{r:?}");
    assert_eq!(r[2].1, ToolStatus::Error, "{r:?}");
    assert!(r[2].2.contains("the servers are: everything"), "{r:?}");
    s.shutdown().await.unwrap();
}

/// One turn on a mock model of `flavor`'s wire protocol that calls `tool` with `args`, then
/// says "done": the mock (with the requests it got) and the turn's events.
async fn on_wire(
    flavor: super::super::mock_server::Flavor,
    tool: &str,
    args: Value,
) -> (
    super::super::mock_server::MockServer,
    Vec<waymark_protocol::Event>,
) {
    use super::super::mock_server::{MockServer, on_mock, reply};
    let server = MockServer::start(vec![
        reply(flavor, "", Some((tool, args)), 100),
        reply(flavor, "done", None, 120),
    ])
    .await;
    let h = Harness::new(config(&[("everything", everything())]));
    let (rt, s) = on_mock(&h, flavor, &server, |_| {});
    settled(&rt).await;
    let ev = run(&s, user("go")).await;
    s.shutdown().await.unwrap();
    (server, ev)
}

/// Through a mock model on each provider's real wire protocol: the server's tool is offered
/// with its schema, the model's call reaches the server, and its answer goes back to the
/// model as that provider's tool result.
#[tokio::test]
async fn get_sum_round_trips_through_openai_and_anthropic_wire_protocols() {
    use super::super::mock_server::Flavor;
    for flavor in [Flavor::OpenAi, Flavor::Anthropic] {
        let (server, ev) =
            on_wire(flavor, "mcp__everything__get-sum", json!({"a": 2, "b": 3})).await;
        let r = results(&ev);
        assert_eq!(r[0].1, ToolStatus::Ok, "{flavor:?}: {r:?}");
        let recorded = server.recorded();
        assert_eq!(recorded.len(), 2, "{flavor:?}");
        let first = recorded[0].body.to_string();
        assert!(
            first.contains("mcp__everything__get-sum"),
            "{flavor:?}: offered"
        );
        let second = &recorded[1].body;
        let answer = "The sum of 2 and 3 is 5.";
        let carried = match flavor {
            Flavor::OpenAi => second["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "tool" && m["content"].to_string().contains(answer)),
            Flavor::Anthropic => second["messages"].as_array().unwrap().iter().any(|m| {
                m["content"].as_array().is_some_and(|c| {
                    c.iter()
                        .any(|b| b["type"] == "tool_result" && b.to_string().contains(answer))
                })
            }),
        };
        assert!(carried, "{flavor:?}: {second}");
    }
}

/// A server added in the settings while sessions are open starts at once and its tools are
/// callable; a removed one is stopped and its tools are gone.
#[tokio::test]
async fn servers_added_and_removed_in_the_settings_apply_at_once() {
    let h = Harness::new(config(&[]));
    let s = session(
        &h,
        vec![call("mcp__everything__echo", json!({"message": "hi"}))],
        PermissionMode::Auto,
    )
    .await;
    let mut c = h.runtime.config().as_ref().clone();
    c.mcp_servers.insert(
        "everything".into(),
        serde_json::from_value(everything()).unwrap(),
    );
    // From a thread with no async runtime, as the app's settings commands run.
    std::thread::scope(|t| {
        t.spawn(|| h.runtime.apply_settings(c.clone()).unwrap());
    });
    settled(&h.runtime).await;
    let status = h.runtime.mcp().status();
    assert_eq!(status[0].state, McpServerState::Ready, "{status:?}");
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(r[0].2.contains("hi"), "{r:?}");
    // The same settings again change nothing: the running server goes on.
    let tools = h.runtime.mcp().tools();
    h.runtime.apply_settings(c.clone()).unwrap();
    assert!(Arc::ptr_eq(&tools[0].0, &h.runtime.mcp().tools()[0].0));
    c.mcp_servers.clear();
    h.runtime.apply_settings(c).unwrap();
    assert!(h.runtime.mcp().status().is_empty());
    assert!(h.runtime.mcp().tools().is_empty());
    s.shutdown().await.unwrap();
}

/// `get-tiny-image` reaches the model as image content on both wire protocols (inside the
/// tool result for Anthropic, as an image part after the tool results for OpenAI), and the
/// transcript gets the image with the result.
#[tokio::test]
async fn get_tiny_image_reaches_the_model_as_image_content() {
    use super::super::mock_server::Flavor;
    for flavor in [Flavor::OpenAi, Flavor::Anthropic] {
        let (server, ev) = on_wire(flavor, "mcp__everything__get-tiny-image", json!({})).await;
        assert_eq!(results(&ev)[0].1, ToolStatus::Ok, "{flavor:?}");
        let shown = ev.iter().find_map(|e| match &e.kind {
            waymark_protocol::EventKind::ToolResult { images, .. } => Some(images.clone()),
            _ => None,
        });
        let shown = shown.unwrap();
        assert_eq!(shown.len(), 1, "{flavor:?}");
        assert_eq!(shown[0].mime, "image/png");
        let second = &server.recorded()[1].body;
        let data = &shown[0].data;
        let carried = second["messages"].as_array().unwrap().iter().any(|m| {
            m["content"].as_array().is_some_and(|blocks| {
                blocks.iter().any(|b| match flavor {
                    Flavor::OpenAi => {
                        b["type"] == "image_url"
                            && b["image_url"]["url"] == format!("data:image/png;base64,{data}")
                    }
                    Flavor::Anthropic => {
                        b["type"] == "tool_result"
                            && b["content"].as_array().is_some_and(|c| {
                                c.iter()
                                    .any(|x| x["type"] == "image" && x["source"]["data"] == *data)
                            })
                    }
                })
            })
        });
        assert!(carried, "{flavor:?}: {second}");
    }
}

/// A tool the server runs only as a task (`simulate-research-query`, `taskSupport:
/// "required"`), which Waymark does not do yet (rmcp's tool listing drops `execution`, so it
/// cannot be left out): calling it is a tool error in the server's words, and the turn goes
/// on.
#[tokio::test]
async fn a_tool_that_needs_tasks_fails_clearly() {
    let h = Harness::new(config(&[("everything", everything())]));
    let r = call_once(
        &h,
        "mcp__everything__simulate-research-query",
        json!({"topic": "rust"}),
        PermissionMode::Auto,
    )
    .await;
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].1, ToolStatus::Error, "{r:?}");
    assert!(r[0].2.contains("requires task augmentation"), "{r:?}");
}

//! What the runtime adds to an MCP tool call, measured against the real `server-everything`
//! over stdio (its `echo`):
//! - the floor: the same call made straight through rmcp on one connection (the server's
//!   time and the pipe);
//! - the hub's call (`McpHub::call`: connection check, request, response, result shaping);
//! - a whole agent step calling `echo` against a step calling a built-in read-only tool,
//!   each run by a session on the scripted model, so the difference is what an MCP call
//!   costs beyond any tool call.
//!
//! The runtime's own time per MCP call is the step difference minus the floor (target
//! ≤ 1 ms). Also: how long a new session takes to its first model call with five servers
//! configured and with none (the servers start in the background, a moment after the session
//! opens), and when those five are ready. Prints; asserts nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use waymark_config::Config;
use waymark_protocol::{EventKind, Op, PermissionMode};
use waymark_runtime::{Runtime, RuntimeOptions, SessionSpec};
use waymark_test_support::harness::user;

const CALLS: usize = 300;
const STEPS: usize = 100;

fn everything() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/.bin/mcp-server-everything")
        .display()
        .to_string()
}

fn config(servers: usize) -> Config {
    config_of(servers, &everything(), &["stdio"])
}

/// `servers` servers started by `command args`.
fn config_of(servers: usize, command: &str, args: &[&str]) -> Config {
    let mut c = Config::default();
    for i in 0..servers {
        c.mcp_servers.insert(
            format!("s{i}"),
            serde_json::from_value(serde_json::json!({"command": command, "args": args})).unwrap(),
        );
    }
    c.turn.max_steps = 10_000;
    c
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn env() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| k == "PATH" || k == "HOME")
        .collect()
}

async fn floor() -> f64 {
    let transport = waymark_config::mcp::McpTransport::Stdio {
        command: everything(),
        args: vec!["stdio".into()],
        env: env()
            .into_iter()
            .map(|(k, v)| (k.into_string().unwrap(), v.into_string().unwrap()))
            .collect(),
        cwd: None,
    };
    let conn = waymark_mcp::connect::connect(
        "floor",
        &transport,
        Duration::from_secs(30),
        Default::default(),
        false,
    )
    .await
    .unwrap();
    let peer = conn.service.peer().clone();
    let mut times = Vec::new();
    for i in 0..CALLS + 20 {
        let mut args = serde_json::Map::new();
        args.insert("message".into(), serde_json::json!("hi"));
        let started = Instant::now();
        peer.call_tool(rmcp::model::CallToolRequestParams::new("echo").with_arguments(args))
            .await
            .unwrap();
        if i >= 20 {
            times.push(started.elapsed());
        }
    }
    median(times)
}

async fn hub_call() -> f64 {
    let hub = waymark_mcp::McpHub::new(&config(1).mcp_servers, Arc::new(|_| None), env());
    hub.start_all().await;
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut times = Vec::new();
    for i in 0..CALLS + 20 {
        let mut args = serde_json::Map::new();
        args.insert("message".into(), serde_json::json!("hi"));
        let started = Instant::now();
        hub.call(
            "s0",
            "echo",
            args,
            waymark_mcp::hub::CallLimits {
                timeout: Duration::from_secs(30),
                deadline: None,
            },
            &cancel,
            Default::default(),
        )
        .await
        .unwrap();
        if i >= 20 {
            times.push(started.elapsed());
        }
    }
    median(times)
}

/// Runs one turn of `STEPS` steps, each calling `tool` with `args`; the turn's wall time.
async fn steps(
    rt: &Runtime,
    dir: &std::path::Path,
    ws: &std::path::Path,
    tool: &str,
    args: serde_json::Value,
) -> Duration {
    let call = serde_json::json!({"tool_calls": [{"name": tool, "arguments": args}]});
    let mut responses = vec![call; STEPS];
    responses.push(serde_json::json!({"text": "done"}));
    let script = dir.join(format!("{tool}.json"));
    std::fs::write(
        &script,
        serde_json::json!({"responses": responses}).to_string(),
    )
    .unwrap();
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(ws.to_path_buf()),
            model: Some(format!("scripted:{}", script.display())),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    let mut rx = s.subscribe();
    let started = Instant::now();
    s.submit(user("go")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    let mut ok = 0;
    loop {
        let ev = rx.recv().await.unwrap();
        match ev.kind {
            EventKind::ToolResult { status, .. } => {
                assert_eq!(status, waymark_protocol::ToolStatus::Ok);
                ok += 1;
            }
            EventKind::SessionIdle {} | EventKind::SessionWaiting { .. } => break,
            _ => {}
        }
    }
    let t = started.elapsed();
    assert_eq!(ok, STEPS);
    s.shutdown().await.unwrap();
    t
}

fn runtime(dir: &std::path::Path, servers: usize) -> Runtime {
    runtime_with(dir, config(servers))
}

fn runtime_with(dir: &std::path::Path, config: Config) -> Runtime {
    let mut opts = RuntimeOptions::new(dir.join("data"), config);
    opts.process_env = Arc::new(env());
    opts.cwd = dir.to_path_buf();
    Runtime::open(opts).unwrap()
}

/// From a new session's creation to its first model call's reply being recorded; and to
/// every server being ready (`None` when some never is within 10 s).
async fn first_call(config: impl Fn() -> Config) -> (f64, Option<f64>) {
    let mut times = Vec::new();
    let mut ready = Vec::new();
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let rt = runtime_with(dir.path(), config());
        let script = dir.path().join("s.json");
        std::fs::write(&script, r#"{"responses": [{"text": "hi"}]}"#).unwrap();
        let started = Instant::now();
        let s = rt
            .create_session(SessionSpec {
                workspace: Some(ws.clone()),
                model: Some(format!("scripted:{}", script.display())),
                permission_mode: Some(PermissionMode::Auto),
                hold: false,
            })
            .unwrap();
        let created = started.elapsed();
        let mut rx = s.subscribe();
        s.submit(user("go")).await.unwrap();
        let submitted = started.elapsed();
        s.submit(Op::Resume).await.unwrap();
        let mut turn = Duration::ZERO;
        loop {
            match rx.recv().await.unwrap().kind {
                EventKind::TurnStarted { .. } => turn = started.elapsed(),
                EventKind::AssistantMessage { .. } => break,
                _ => {}
            }
        }
        times.push(started.elapsed());
        if std::env::var_os("MCP_BENCH_PROBE").is_some() {
            println!(
                "mcp/probe: created {:.1} ms, submitted {:.1} ms, turn {:.1} ms, reply {:.1} ms",
                created.as_secs_f64() * 1e3,
                submitted.as_secs_f64() * 1e3,
                turn.as_secs_f64() * 1e3,
                started.elapsed().as_secs_f64() * 1e3
            );
        }
        while started.elapsed() < Duration::from_secs(10) {
            let servers = rt.mcp_servers(false).await;
            if servers
                .iter()
                .all(|v| v.state == waymark_protocol::mcp_view::McpServerState::Ready)
            {
                ready.push(started.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        s.shutdown().await.unwrap();
        drop(rt);
        // Let the servers of this round go before the next.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let all_ready = (ready.len() == times.len()).then(|| median(ready));
    (median(times), all_ready)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let floor = floor().await;
        let hub = hub_call().await;
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let runtime = runtime(dir.path(), 1);
        runtime.mcp_servers(true).await;
        let mut mcp = Vec::new();
        let mut builtin = Vec::new();
        for _ in 0..3 {
            mcp.push(steps(&runtime, dir.path(), &ws, "mcp__s0__echo", serde_json::json!({"message": "hi"})).await);
            builtin.push(steps(&runtime, dir.path(), &ws, "list_dir", serde_json::json!({"path": "."})).await);
        }
        let per = |v: &Vec<Duration>| median(v.clone()) / STEPS as f64;
        let (mcp_step, builtin_step) = (per(&mcp), per(&builtin));
        println!("mcp/floor: echo straight through rmcp: {floor:.3} ms per call (the server and the pipe)");
        println!("mcp/hub_call: McpHub::call of echo: {hub:.3} ms ({:.3} ms over the floor)", hub - floor);
        println!("mcp/step: an agent step calling mcp echo {mcp_step:.3} ms, calling list_dir {builtin_step:.3} ms");
        let own = mcp_step - builtin_step - floor;
        println!(
            "mcp/own_time: the runtime's own time per MCP call, beyond any tool call and the server: {own:.3} ms (target <= 1 ms)"
        );
        let (none, _) = first_call(|| config(0)).await;
        let (five, ready) = first_call(|| config(5)).await;
        let (silent, _) = first_call(|| config_of(5, "sleep", &["30"])).await;
        if std::env::var_os("MCP_BENCH_PROBE").is_some() {
            let off = first_call(|| {
                let mut c = config_of(5, "sleep", &["30"]);
                for s in c.mcp_servers.values_mut() {
                    s.enabled = false;
                }
                c
            })
            .await
            .0;
            let missing = first_call(|| config_of(5, "/nonexistent/server", &[]))
                .await
                .0;
            println!("mcp/probe: 5 disabled {off:.1} ms, 5 missing programs {missing:.1} ms");
        }
        println!("mcp/first_call: a new session's first model call {none:.1} ms with no server, {five:.1} ms with 5 reference servers configured, {silent:.1} ms with 5 that never answer");
        match ready {
            Some(r) => println!("mcp/servers_ready: the 5 reference servers are ready {r:.0} ms after the session opens"),
            None => println!("mcp/servers_ready: some of the 5 reference servers were not ready within 10 s"),
        }
    });
}

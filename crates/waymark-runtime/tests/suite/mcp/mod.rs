//! MCP servers in sessions, against the real reference servers of `tests/mcp` (installed by
//! `scripts/setup.sh`) and a hostile one (`tests/mcp/hostile_server.py`): each call passes
//! the guard chain, and what a server sends is bounded, redacted and escaped.

use super::harness::{Harness, results, run, user};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use waymark_config::Config;
use waymark_protocol::mcp_view::McpServerState;
use waymark_protocol::{PermissionMode, ToolStatus};
use waymark_runtime::SessionHandle;

pub(super) fn mcp_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp")
}

pub(super) fn bin(name: &str) -> String {
    let p = mcp_dir().join("node_modules/.bin").join(name);
    assert!(
        p.exists(),
        "{} missing: scripts/setup.sh installs the MCP test servers",
        p.display()
    );
    p.display().to_string()
}

pub(super) fn everything() -> Value {
    json!({"command": bin("mcp-server-everything"), "args": ["stdio"]})
}

pub(super) fn hostile(mode: &str) -> Value {
    json!({"command": "python3", "args": [mcp_dir().join("hostile_server.py").display().to_string(), mode]})
}

pub(super) fn config(servers: &[(&str, Value)]) -> Config {
    let mut c = Config::default();
    for (name, s) in servers {
        c.mcp_servers
            .insert(name.to_string(), serde_json::from_value(s.clone()).unwrap());
    }
    c.validate().unwrap();
    c
}

pub(super) fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

pub(super) fn script(calls: Vec<Value>) -> Value {
    json!({"responses": [{"tool_calls": calls}, {"text": "done"}]})
}

/// Waits until every configured server has started or failed (they start in the background
/// when the first session opens).
pub(super) async fn settled(rt: &waymark_runtime::Runtime) {
    let hub = rt.mcp();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = hub.status();
        if status.iter().all(|s| s.state != McpServerState::Starting) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "servers did not start: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(super) async fn session(h: &Harness, calls: Vec<Value>, mode: PermissionMode) -> SessionHandle {
    let s = h.session(script(calls), mode);
    settled(&h.runtime).await;
    s
}

/// One turn calling `tool` with `args` in a new session of `h`: the results.
pub(super) async fn call_once(
    h: &Harness,
    tool: &str,
    args: Value,
    mode: PermissionMode,
) -> Vec<(String, ToolStatus, String)> {
    let s = session(h, vec![call(tool, args)], mode).await;
    let r = results(&run(&s, user("go")).await);
    s.shutdown().await.unwrap();
    r
}

/// The tools a model was offered on its first call, in a session of `mode` with `servers`
/// that says "ok".
async fn first_offered(servers: &[(&str, Value)], mode: PermissionMode) -> Vec<String> {
    let (h, rec) = Harness::recording(config(servers), json!({"responses": [{"text": "ok"}]}));
    let s = h.recorded_session(mode);
    settled(&h.runtime).await;
    run(&s, user("hi")).await;
    s.shutdown().await.unwrap();
    let requests = rec.requests.lock().unwrap().clone();
    requests[0].tools.iter().map(|t| t.name.clone()).collect()
}

mod forms;
mod hostile;
mod project;
mod prompts;
mod reference;

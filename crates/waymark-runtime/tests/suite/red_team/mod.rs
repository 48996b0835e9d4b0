//! The red-team suite: each test plays a hostile or sloppy model against one control
//! guarantee of issue 10 (call identity, sandbox layers, the verifier, grants, secrets,
//! prompts, Stop, numbers, budgets, size limits, edits) and checks that it holds.

mod budgets;
mod confinement;
mod data_folder;
mod edits;
mod grants;
mod identity;
mod numbers;
mod private_places;
mod prompts;
mod render;
mod sandbox;
mod secrets;
mod size;
mod stop;
mod verifier;

use super::harness::Harness;
use super::mock_server::{MockResponse, MockServer};
use std::sync::Arc;
use waymark_config::Config;
use waymark_protocol::PermissionMode;
use waymark_runtime::{SessionHandle, SessionSpec};

/// One OpenAI Chat Completions stream: optional text, then tool calls given as
/// `(id, name, arguments JSON)`; an empty id is sent without an `id` field, as some
/// OpenAI-compatible servers do.
pub fn openai_stream(text: &str, calls: &[(&str, &str, &str)]) -> MockResponse {
    let mut body = String::new();
    if !text.is_empty() {
        body.push_str(&format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]})
        ));
    }
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let mut call = serde_json::json!({"index": i, "type": "function",
            "function": {"name": name, "arguments": args}});
        if !id.is_empty() {
            call["id"] = (*id).into();
        }
        body.push_str(&format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
        ));
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    body.push_str(&format!(
        "data: {}\n\n",
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    ));
    body.push_str(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\n",
    );
    body.push_str("data: [DONE]\n\n");
    MockResponse::sse(&body)
}

/// A session on `openai:red-team` served by a local mock server playing `responses`.
pub async fn openai_session(
    h: &Harness,
    responses: Vec<MockResponse>,
    mode: PermissionMode,
) -> (MockServer, waymark_runtime::Runtime, SessionHandle) {
    let server = MockServer::start(responses).await;
    let base = format!("{}/v1", server.url);
    let rt = h.reopen(move |o| {
        let base = base.clone();
        o.env = Arc::new(move |k: &str| match k {
            "OPENAI_API_KEY" => Some("sk-red-team-key-0123456789".to_string()),
            "OPENAI_BASE_URL" => Some(base.clone()),
            _ => None,
        });
    });
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("openai:red-team".into()),
            permission_mode: Some(mode),
            hold: false,
        })
        .unwrap();
    (server, rt, s)
}

/// A message that enters plan mode first.
pub fn plan_entry(text: &str) -> waymark_protocol::Op {
    waymark_protocol::Op::Submit {
        text: text.into(),
        source: waymark_protocol::MessageSource::User,
        position: waymark_protocol::Position::Tail,
        idempotency_key: None,
        intent: Some(waymark_protocol::Intent::PlanEntry),
        images: Vec::new(),
    }
}

pub fn harness() -> Harness {
    Harness::new(Config::default())
}

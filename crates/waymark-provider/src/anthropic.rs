//! Anthropic Messages over SSE (also served by MiniMax and Kimi endpoints).

use super::http::{self, HttpOptions};
use super::{
    Endpoint, ModelMessage, ModelProvider, ModelRequest, ModelResponse, ProviderError,
    ProviderErrorKind, StreamEvent, StreamSink, parse_arguments,
};
use crate::usage::figure;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use waymark_protocol::RouteKind;
use waymark_protocol::ToolCallRecord;
use waymark_protocol::display::clip;

const API_VERSION: &str = "2023-06-01";

/// A Messages endpoint.
pub struct AnthropicProvider {
    endpoint: Endpoint,
    wire: http::Wire,
}

impl AnthropicProvider {
    /// A client for the endpoint (its base URL ends before `/v1/messages`).
    pub fn new(endpoint: Endpoint, opts: HttpOptions) -> Result<Self, ProviderError> {
        Ok(AnthropicProvider {
            wire: http::Wire::new(opts, &endpoint.key_hint, &endpoint.base_url),
            endpoint,
        })
    }
}

/// The request body. Consecutive same-role entries are merged, as the API requires
/// alternating roles; tool results travel as `tool_result` blocks of a user message. Without
/// `images` (a server said to take none), images are named in words instead of sent.
pub(crate) fn request_body(model: &str, req: &ModelRequest, images: bool) -> Value {
    let takes = images;
    let mut messages: Vec<(String, Vec<Value>)> = Vec::new();
    let mut push = |role: &str, block: Value| match messages.last_mut() {
        Some((r, blocks)) if r == role => blocks.push(block),
        _ => messages.push((role.to_string(), vec![block])),
    };
    for m in &req.messages {
        match m {
            ModelMessage::User { text, images } if !takes && !images.is_empty() => push(
                "user",
                json!({"type": "text", "text": format!(
                    "{text}\n\n({} attached image(s) not shown: this model takes no images)",
                    images.len()
                )}),
            ),
            ModelMessage::User { text, images } => {
                push("user", json!({"type": "text", "text": text}));
                for i in images {
                    push(
                        "user",
                        json!({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.data}}),
                    );
                }
            }
            ModelMessage::Assistant {
                text, tool_calls, ..
            } => {
                if !text.is_empty() || tool_calls.is_empty() {
                    let t = if text.is_empty() {
                        "(no reply)"
                    } else {
                        text.as_str()
                    };
                    push("assistant", json!({"type": "text", "text": t}));
                }
                for c in tool_calls {
                    let input = match &c.arguments {
                        Value::Object(_) => c.arguments.clone(),
                        other => json!({"_raw": other}),
                    };
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": c.wire(), "name": c.name, "input": input}),
                    );
                }
            }
            ModelMessage::ToolResult {
                call_id,
                content,
                is_error,
                images,
                ..
            } => {
                // Images go in the result itself, as base64 image blocks after its text.
                let content = if images.is_empty() || !takes {
                    json!(content)
                } else {
                    let mut blocks = vec![json!({"type": "text", "text": content})];
                    blocks.extend(images.iter().map(|i| {
                        json!({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.data}})
                    }));
                    Value::Array(blocks)
                };
                push(
                    "user",
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}),
                )
            }
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_output_tokens,
        "stream": true,
        "system": req.system,
        "messages": messages,
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

enum Block {
    Text,
    Thinking,
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// Folds Messages stream events into a reply.
#[derive(Default)]
pub(crate) struct EventFolder {
    text: String,
    reasoning: String,
    blocks: BTreeMap<u64, Block>,
    calls: Vec<ToolCallRecord>,
    /// The input figures reported: fresh, written to the cache, read from it. Each is taken
    /// from `message_start` and replaced by a `message_delta` that gives it (its figures are
    /// running totals).
    input: Option<u64>,
    created: Option<u64>,
    read: Option<u64>,
    /// The output figure of `message_delta` (the one `message_start` carries counts only
    /// what was out by then).
    output: Option<u64>,
    /// Bytes of text, reasoning and tool calls streamed so far.
    streamed: usize,
    done: bool,
    /// `stop_reason: "refusal"` was seen.
    refused: bool,
}

impl EventFolder {
    /// The input the provider reported: the fresh, the cache-written and the cache-read
    /// figures together, as OpenAI counts it.
    fn input_figure(&self) -> Option<u64> {
        match (self.input, self.created, self.read) {
            (None, None, None) => None,
            // Each figure is bounded, so the sum cannot overflow.
            (i, c, r) => Some(i.unwrap_or(0) + c.unwrap_or(0) + r.unwrap_or(0)),
        }
    }

    /// Takes the input figures a usage object gives (each one it gives replaces the one seen
    /// before).
    fn take_input(&mut self, u: &Value) -> Result<(), ProviderError> {
        if let Some(n) = figure(u.get("input_tokens"), "input_tokens")? {
            self.input = Some(n);
        }
        if let Some(n) = figure(
            u.get("cache_creation_input_tokens"),
            "cache_creation_input_tokens",
        )? {
            self.created = Some(n);
        }
        if let Some(n) = figure(u.get("cache_read_input_tokens"), "cache_read_input_tokens")? {
            self.read = Some(n);
        }
        Ok(())
    }
}

impl http::StreamFold for EventFolder {
    fn push(&mut self, data: &str, sink: StreamSink<'_>) -> Result<(), ProviderError> {
        if data.trim().is_empty() {
            return Ok(());
        }
        let ev: Value = serde_json::from_str(data).map_err(|e| {
            ProviderError::bad_response(format!("a stream event is not JSON ({e}): {}", clip(data)))
        })?;
        let n = |v: Option<&Value>| v.and_then(Value::as_u64);
        match ev.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                if let Some(u) = ev.pointer("/message/usage") {
                    self.take_input(u)?;
                }
            }
            "content_block_start" => {
                let index = n(ev.get("index")).unwrap_or(0);
                let cb = ev.get("content_block").cloned().unwrap_or(Value::Null);
                let block = match cb.get("type").and_then(Value::as_str) {
                    Some("tool_use") => Block::ToolUse {
                        id: cb
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        name: cb
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        json: String::new(),
                    },
                    Some("thinking") | Some("redacted_thinking") => Block::Thinking,
                    _ => {
                        if let Some(t) = cb.get("text").and_then(Value::as_str)
                            && !t.is_empty()
                        {
                            self.text.push_str(t);
                            self.streamed += t.len();
                            sink(StreamEvent::Text(t.to_string()));
                        }
                        Block::Text
                    }
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let index = n(ev.get("index")).unwrap_or(0);
                let delta = ev.get("delta").cloned().unwrap_or(Value::Null);
                let s = |k: &str| {
                    delta
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                match delta.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text_delta" => {
                        let t = s("text");
                        self.streamed += t.len();
                        self.text.push_str(&t);
                        sink(StreamEvent::Text(t));
                    }
                    "thinking_delta" => {
                        let t = s("thinking");
                        self.streamed += t.len();
                        self.reasoning.push_str(&t);
                        sink(StreamEvent::Reasoning(t));
                    }
                    "input_json_delta" => match self.blocks.get_mut(&index) {
                        Some(Block::ToolUse { json, .. }) => {
                            let part = s("partial_json");
                            self.streamed += part.len();
                            json.push_str(&part);
                        }
                        _ => {
                            return Err(ProviderError::bad_response(format!(
                                "input_json_delta for block {index}, which is not a tool call"
                            )));
                        }
                    },
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = n(ev.get("index")).unwrap_or(0);
                if let Some(Block::ToolUse { id, name, json }) = self.blocks.remove(&index) {
                    if name.is_empty() {
                        return Err(ProviderError::bad_response("a tool_use block has no name"));
                    }
                    self.calls.push(ToolCallRecord::from_provider(
                        Some(id),
                        name,
                        parse_arguments(&json),
                    ));
                }
            }
            "message_delta" => {
                self.refused |=
                    ev.pointer("/delta/stop_reason").and_then(Value::as_str) == Some("refusal");
                if let Some(u) = ev.get("usage") {
                    self.take_input(u)?;
                    if let Some(out) = figure(u.get("output_tokens"), "output_tokens")? {
                        self.output = Some(out);
                    }
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let kind_s = ev
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let msg = ev
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                let kind = match kind_s {
                    "rate_limit_error" => ProviderErrorKind::RateLimited,
                    "authentication_error" | "permission_error" => ProviderErrorKind::Auth,
                    "invalid_request_error"
                        if super::http::is_context_too_long(&ev.to_string()) =>
                    {
                        ProviderErrorKind::ContextTooLong
                    }
                    "invalid_request_error" => ProviderErrorKind::RequestRejected,
                    _ => ProviderErrorKind::ServerError,
                };
                return Err(ProviderError::new(
                    kind,
                    format!("the model stream reported {kind_s}: {msg}"),
                ));
            }
            // `ping` and unknown event types are ignored.
            _ => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn progress(&self) -> crate::Progress {
        crate::Progress {
            output_bytes: self.streamed,
            input: self.input_figure(),
            output: self.output,
            cached: self.read,
            reasoning_hidden: false,
        }
    }

    fn finish(self, estimate_input: u64) -> Result<ModelResponse, ProviderError> {
        if !self.done {
            return Err(ProviderError::bad_response(
                "the model stream ended before message_stop",
            ));
        }
        if self.refused {
            return Err(super::refused(&self.text));
        }
        // What the provider did not say (no usage, `{}`, null fields) is estimated, and the
        // record says so: a missing figure is never taken as zero. The input is the fresh,
        // the cache-written and the cache-read figures together, as OpenAI counts it.
        let input = self.input_figure();
        let output = super::estimate_tokens(
            self.text.len() + self.reasoning.len() + super::calls_bytes(&self.calls),
        );
        let usage = crate::usage::Reported {
            input,
            output: self.output,
            cached: self.read,
        }
        .settle(estimate_input, output);
        Ok(ModelResponse {
            text: self.text,
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
            tool_calls: self.calls,
            usage,
        })
    }
}

impl ModelProvider for AnthropicProvider {
    fn describe(&self) -> String {
        self.endpoint.describe()
    }

    fn route(&self) -> RouteKind {
        self.endpoint.route
    }

    fn is_local(&self) -> bool {
        waymark_config::setup::local_address(&self.endpoint.base_url)
    }

    fn takes_images(&self) -> bool {
        self.endpoint.images
    }

    fn context_tokens(&self) -> u64 {
        self.endpoint.context_tokens
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, ProviderError>> {
        Box::pin(async move {
            let ep = &self.endpoint;
            let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
            if let Some(k) = &ep.api_key {
                headers.push(("x-api-key", k.clone()));
            }
            let url = format!("{}/v1/models?limit=1000", ep.base_url);
            let body = self.wire.get(&url, &headers).await?;
            super::models::parse(&body, super::models::Listing::Data, &url)
        })
    }

    fn call<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: StreamSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            let ep = &self.endpoint;
            let body =
                serde_json::to_vec(&request_body(&ep.model, request, ep.images)).map_err(|e| {
                    ProviderError::new(
                        ProviderErrorKind::RequestRejected,
                        format!("cannot encode the request: {e}"),
                    )
                })?;
            let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
            if let Some(k) = &ep.api_key {
                headers.push(("x-api-key", k.clone()));
            }
            let url = format!("{}/v1/messages", ep.base_url);
            self.wire
                .call::<EventFolder>(
                    &url,
                    &headers,
                    &body,
                    sink,
                    request.estimated_tokens(),
                    false,
                )
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CallPurpose;
    use crate::http::StreamFold as _;

    #[test]
    fn assembles_input_json_and_usage() {
        let mut f = EventFolder::default();
        let sink = |_: StreamEvent| {};
        for e in [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"read_file","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"a.txt\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            f.push(e, &sink).unwrap();
        }
        let r = f.finish(0).unwrap();
        assert_eq!(r.text, "Reading");
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "a.txt"}));
        assert_eq!(r.usage.input_tokens, 12);
        assert_eq!(r.usage.output_tokens, 30);
    }

    #[test]
    fn merges_roles_and_sends_tool_results_as_user_blocks() {
        let req = ModelRequest {
            system: "sys".into(),
            messages: vec![
                ModelMessage::user("hi"),
                ModelMessage::Assistant {
                    text: String::new(),
                    reasoning: None,
                    tool_calls: vec![
                        ToolCallRecord {
                            id: "a".into(),
                            wire_id: None,
                            name: "x".into(),
                            arguments: json!({}),
                        },
                        ToolCallRecord {
                            id: "b".into(),
                            wire_id: None,
                            name: "y".into(),
                            arguments: json!({}),
                        },
                    ],
                },
                ModelMessage::ToolResult {
                    call_id: "a".into(),
                    name: "x".into(),
                    content: "1".into(),
                    is_error: false,
                    images: vec![waymark_protocol::ToolImage {
                        mime: "image/png".into(),
                        data: "iVBO".into(),
                    }],
                },
                ModelMessage::ToolResult {
                    call_id: "b".into(),
                    name: "y".into(),
                    content: "2".into(),
                    is_error: true,
                    images: vec![],
                },
            ],
            tools: vec![],
            max_output_tokens: 100,
            purpose: CallPurpose::Main,
        };
        let body = request_body("m", &req, true);
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"].as_array().unwrap().len(), 2);
        assert_eq!(msgs[2]["role"], "user");
        assert_eq!(msgs[2]["content"][1]["is_error"], true);
        // An image travels inside its result, after the text.
        let first = &msgs[2]["content"][0]["content"];
        assert_eq!(first[0], json!({"type": "text", "text": "1"}));
        assert_eq!(
            first[1],
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}})
        );
        assert_eq!(msgs[2]["content"][1]["content"], "2");
        // A server said to take no images is sent none: they are named in words.
        let mut req = req;
        req.messages.push(ModelMessage::User {
            text: "and this?".into(),
            images: vec![waymark_protocol::ToolImage {
                mime: "image/png".into(),
                data: "iVBO".into(),
            }],
        });
        let body = request_body("m", &req, false);
        assert!(!body.to_string().contains("\"image\""), "{body}");
        assert!(
            body.to_string().contains("1 attached image(s) not shown"),
            "{body}"
        );
        let body = request_body("m", &req, true);
        assert_eq!(
            body.to_string().matches("\"type\":\"image\"").count(),
            2,
            "{body}"
        );
    }

    fn fold_events(events: &[serde_json::Value]) -> ModelResponse {
        let mut f = EventFolder::default();
        let sink = |_: StreamEvent| {};
        for e in events {
            f.push(&e.to_string(), &sink).unwrap();
        }
        f.finish(50).unwrap()
    }

    /// Third red-team: a `message_delta` carrying running totals (the official SDK's
    /// `MessageDeltaUsage`: input, cache written, cache read) replaced the whole input with
    /// the uncached part; and a reply of tool calls with no usage was estimated as 1 token out.
    #[test]
    fn running_totals_keep_cached_input_and_tool_calls_count_as_output() {
        let start = json!({"type": "message_start", "message": {"usage":
            {"input_tokens": 10, "cache_read_input_tokens": 100_000, "output_tokens": 1}}});
        let delta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 50, "input_tokens": 10, "cache_read_input_tokens": 100_000}});
        let r = fold_events(&[start, delta, json!({"type": "message_stop"})]);
        assert_eq!(
            (
                r.usage.input_tokens,
                r.usage.cached_tokens,
                r.usage.output_tokens
            ),
            (100_010, 100_000, 50)
        );
        let big = "x".repeat(100_000);
        let r = fold_events(&[
            json!({"type": "message_start", "message": {"usage": {}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "write", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": format!("{{\"content\": \"{big}\"}}")}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_stop"}),
        ]);
        assert!(
            r.usage.estimated && r.usage.output_tokens >= 25_000,
            "{:?}",
            r.usage
        );
    }

    #[test]
    fn missing_message_stop_is_bad_response() {
        let mut f = EventFolder::default();
        let sink = |_: StreamEvent| {};
        f.push(
            r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}"#,
            &sink,
        )
        .unwrap();
        assert_eq!(
            f.finish(0).unwrap_err().kind,
            ProviderErrorKind::BadResponse
        );
    }
}

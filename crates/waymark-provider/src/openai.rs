//! OpenAI Chat Completions over SSE. Serves OpenAI and the many compatible servers (Ollama,
//! vLLM, llama.cpp, LM Studio, DeepSeek, Moonshot, MiniMax).

use super::http::{self, HttpOptions};
use super::{
    Endpoint, ModelMessage, ModelProvider, ModelRequest, ModelResponse, ProviderError,
    ProviderErrorKind, StreamEvent, StreamSink, parse_arguments,
};
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use waymark_protocol::RouteKind;
use waymark_protocol::ToolCallRecord;
use waymark_protocol::display::clip;

/// A Chat Completions endpoint.
pub struct OpenAiProvider {
    endpoint: Endpoint,
    wire: http::Wire,
}

impl OpenAiProvider {
    /// A client for the endpoint (its base URL ends before `/chat/completions`).
    pub fn new(endpoint: Endpoint, opts: HttpOptions) -> Result<Self, ProviderError> {
        Ok(OpenAiProvider {
            wire: http::Wire::new(opts, &endpoint.key_hint, &endpoint.base_url),
            endpoint,
        })
    }
}

/// The request body, serialized straight from borrowed parts: the history can be large and
/// is sent on every call, so it is not copied into an intermediate JSON tree.
/// With `images`, the images tools returned follow their results as one user message of
/// image parts (a tool message carries text only); without, their lines in the text are all
/// the model gets.
/// With `completion_tokens`, the output is bounded by `max_completion_tokens`, which OpenAI's
/// own service wants (its reasoning models, GPT-5 and the o-series, refuse `max_tokens`);
/// other servers speaking the protocol take `max_tokens`.
pub(crate) fn request_body(
    model: &str,
    req: &ModelRequest,
    images: bool,
    completion_tokens: bool,
) -> Result<Vec<u8>, ProviderError> {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    messages.push(Msg::System {
        content: &req.system,
    });
    // Images of the run of tool results being written, sent once the run ends.
    let mut shown: Vec<(&str, &waymark_protocol::ToolImage)> = Vec::new();
    let flush = |messages: &mut Vec<Msg<'_>>,
                 shown: &mut Vec<(&str, &waymark_protocol::ToolImage)>| {
        if shown.is_empty() {
            return;
        }
        let mut parts = vec![Part::Text {
            text: "The images the tool calls above returned, in order:".into(),
        }];
        for (name, i) in shown.drain(..) {
            parts.push(Part::Text {
                text: format!("from {name}:"),
            });
            parts.push(Part::ImageUrl {
                image_url: ImageUrl {
                    url: format!("data:{};base64,{}", i.mime, i.data),
                },
            });
        }
        messages.push(Msg::UserParts { content: parts });
    };
    for m in &req.messages {
        if !matches!(m, ModelMessage::ToolResult { .. }) {
            flush(&mut messages, &mut shown);
        }
        if images && let ModelMessage::ToolResult { name, images, .. } = m {
            shown.extend(images.iter().map(|i| (name.as_str(), i)));
        }
        messages.push(match m {
            ModelMessage::User { text, images: pics } if !pics.is_empty() => {
                if images {
                    let mut parts = vec![Part::Text { text: text.clone() }];
                    parts.extend(pics.iter().map(|i| Part::ImageUrl {
                        image_url: ImageUrl {
                            url: format!("data:{};base64,{}", i.mime, i.data),
                        },
                    }));
                    Msg::UserParts { content: parts }
                } else {
                    // A model switched to after the images were admitted: it is told of them.
                    Msg::UserParts {
                        content: vec![Part::Text {
                            text: format!(
                                "{text}\n\n({} attached image(s) not shown: this model takes no images)",
                                pics.len()
                            ),
                        }],
                    }
                }
            }
            ModelMessage::User { text, .. } => Msg::User { content: text },
            ModelMessage::Assistant {
                text,
                reasoning,
                tool_calls,
            } => Msg::Assistant {
                content: text,
                tool_calls: tool_calls
                    .iter()
                    .map(|c| CallDef {
                        id: c.wire(),
                        kind: "function",
                        function: FnCall {
                            name: &c.name,
                            arguments: match &c.arguments {
                                Value::String(s) => Cow::Borrowed(s.as_str()),
                                v => Cow::Owned(v.to_string()),
                            },
                        },
                    })
                    .collect(),
                reasoning_content: reasoning.as_deref(),
            },
            ModelMessage::ToolResult {
                call_id, content, ..
            } => Msg::Tool {
                tool_call_id: call_id,
                content,
            },
        });
    }
    flush(&mut messages, &mut shown);
    let body = Body {
        model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        messages,
        max_tokens: (!completion_tokens).then_some(req.max_output_tokens),
        max_completion_tokens: completion_tokens.then_some(req.max_output_tokens),
        tools: req
            .tools
            .iter()
            .map(|t| ToolDef {
                kind: "function",
                function: FnDef {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
    };
    serde_json::to_vec(&body).map_err(|e| {
        ProviderError::new(
            ProviderErrorKind::RequestRejected,
            format!("cannot encode the request: {e}"),
        )
    })
}

/// Whether `base_url` is OpenAI's own service (or Azure's), which bounds the output with
/// `max_completion_tokens`.
fn openai_service(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, r)| r)
        .to_ascii_lowercase();
    let host = rest
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("")
        .rsplit('@')
        .next()
        .unwrap_or("");
    let host = host.split(':').next().unwrap_or("");
    host == "api.openai.com"
        || [
            ".openai.azure.com",
            ".cognitiveservices.azure.com",
            ".services.ai.azure.com",
        ]
        .iter()
        .any(|d| host.ends_with(d))
}

/// Whether `model` reasons without streaming it: OpenAI's reasoning models (GPT-5 and the
/// o-series, on whatever service names them, `openai/gpt-5` too) stream their answer only,
/// and are billed for the reasoning that came before it.
fn hides_reasoning(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let m = m.rsplit('/').next().unwrap_or("");
    m.starts_with("gpt-5")
        || ["o1", "o3", "o4"]
            .iter()
            .any(|o| m == *o || m.starts_with(&format!("{o}-")))
}

/// Whether `model` at `base_url` may reason out of sight: a reasoning model by its name, or,
/// on OpenAI's or Azure's own service, any name Waymark does not know to stream all it
/// produces (an Azure deployment is named by its owner: `my-o3-deployment`).
fn reasoning_hidden(base_url: &str, model: &str) -> bool {
    hides_reasoning(model) || (openai_service(base_url) && !streams_everything(model))
}

/// Whether `model` is one of OpenAI's that stream all they produce (GPT-4 and GPT-3.5).
fn streams_everything(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let m = m.rsplit('/').next().unwrap_or("");
    ["gpt-4", "gpt-3.5", "chatgpt-4o"]
        .iter()
        .any(|p| m.starts_with(p))
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    messages: Vec<Msg<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDef<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum Msg<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<CallDef<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<&'a str>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
    #[serde(rename = "user")]
    UserParts {
        content: Vec<Part>,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct CallDef<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FnCall<'a>,
}

#[derive(Serialize)]
struct FnCall<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

#[derive(Serialize)]
struct ToolDef<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FnDef<'a>,
}

#[derive(Serialize)]
struct FnDef<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Folds Chat Completions chunks into a reply.
#[derive(Default)]
pub(crate) struct ChunkFolder {
    text: String,
    reasoning: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: Option<crate::usage::Reported>,
    /// Bytes of text, reasoning and tool calls streamed so far.
    streamed: usize,
    finished: bool,
    done: bool,
    /// `finish_reason: "content_filter"` was seen.
    filtered: bool,
    /// The model's refusal (`delta.refusal`), when it gave one.
    refusal: String,
}

impl ChunkFolder {
    /// Takes a usage object: each figure it gives replaces the one seen before.
    fn take_usage(&mut self, u: &Value) -> Result<(), ProviderError> {
        let new = parse_usage(u)?;
        let old = self.usage.unwrap_or_default();
        self.usage = Some(crate::usage::Reported {
            input: new.input.or(old.input),
            output: new.output.or(old.output),
            cached: new.cached.or(old.cached),
        });
        Ok(())
    }
}

impl http::StreamFold for ChunkFolder {
    /// Takes one SSE `data` payload.
    fn push(&mut self, data: &str, sink: StreamSink<'_>) -> Result<(), ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            ProviderError::bad_response(format!("a stream chunk is not JSON ({e}): {}", clip(data)))
        })?;
        if let Some(err) = chunk.get("error") {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
                .to_string();
            let code = err.get("code").map(|c| c.to_string()).unwrap_or_default();
            let kind = if code.contains("rate_limit") {
                ProviderErrorKind::RateLimited
            } else if code.contains("quota") {
                ProviderErrorKind::QuotaExhausted
            } else {
                ProviderErrorKind::ServerError
            };
            return Err(ProviderError::new(
                kind,
                format!("the model stream reported an error: {msg}"),
            ));
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.take_usage(u)?;
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if let Some(u) = choice.get("usage").filter(|u| !u.is_null()) {
                self.take_usage(u)?;
            }
            if let Some(f) = choice.get("finish_reason").filter(|f| !f.is_null()) {
                self.finished = true;
                self.filtered |= f.as_str() == Some("content_filter");
            }
            let Some(delta) = choice.get("delta") else {
                continue;
            };
            if let Some(t) = delta.get("refusal").and_then(Value::as_str) {
                self.refusal.push_str(t);
                self.streamed += t.len();
            }
            if let Some(t) = delta.get("content").and_then(Value::as_str)
                && !t.is_empty()
            {
                self.text.push_str(t);
                self.streamed += t.len();
                sink(StreamEvent::Text(t.to_string()));
            }
            for key in ["reasoning_content", "reasoning"] {
                if let Some(t) = delta.get(key).and_then(Value::as_str)
                    && !t.is_empty()
                {
                    self.reasoning.push_str(t);
                    self.streamed += t.len();
                    sink(StreamEvent::Reasoning(t.to_string()));
                }
            }
            for (pos, tc) in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let index = tc
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(pos as u64);
                let slot = self.calls.entry(index).or_default();
                if let Some(id) = tc.get("id").and_then(Value::as_str)
                    && !id.is_empty()
                {
                    slot.id = Some(id.to_string());
                }
                if let Some(f) = tc.get("function") {
                    if let Some(n) = f.get("name").and_then(Value::as_str) {
                        slot.name.push_str(n);
                        self.streamed += n.len();
                    }
                    if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                        slot.arguments.push_str(a);
                        self.streamed += a.len();
                    }
                }
            }
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn progress(&self) -> crate::Progress {
        let u = self.usage.unwrap_or_default();
        crate::Progress {
            output_bytes: self.streamed,
            input: u.input,
            output: u.output,
            cached: u.cached,
            reasoning_hidden: false,
        }
    }

    /// The reply, or `bad_response` if the stream stopped before the end.
    fn finish(self, estimate_input: u64) -> Result<ModelResponse, ProviderError> {
        if !self.done && !self.finished {
            return Err(ProviderError::bad_response(
                "the model stream ended before the reply was complete",
            ));
        }
        if self.filtered || !self.refusal.is_empty() {
            return Err(super::refused(&self.refusal));
        }
        let mut tool_calls = Vec::new();
        for (index, c) in self.calls {
            if c.name.is_empty() {
                return Err(ProviderError::bad_response(format!(
                    "tool call #{index} in the stream has no name"
                )));
            }
            tool_calls.push(ToolCallRecord::from_provider(
                c.id,
                c.name,
                parse_arguments(&c.arguments),
            ));
        }
        // What the provider did not say (no usage, `{}`, null fields) is estimated, and
        // the record says so: a missing figure is never taken as zero.
        let output = super::estimate_tokens(
            self.text.len() + self.reasoning.len() + super::calls_bytes(&tool_calls),
        );
        let usage = self
            .usage
            .unwrap_or_default()
            .settle(estimate_input, output);
        Ok(ModelResponse {
            text: self.text,
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
            tool_calls,
            usage,
        })
    }
}

fn parse_usage(u: &Value) -> Result<crate::usage::Reported, ProviderError> {
    use crate::usage::figure;
    Ok(crate::usage::Reported {
        input: figure(
            u.get("prompt_tokens").or_else(|| u.get("input_tokens")),
            "prompt_tokens",
        )?,
        output: figure(
            u.get("completion_tokens")
                .or_else(|| u.get("output_tokens")),
            "completion_tokens",
        )?,
        cached: figure(
            u.pointer("/prompt_tokens_details/cached_tokens")
                .or_else(|| u.get("cached_tokens")),
            "cached_tokens",
        )?,
    })
}

impl ModelProvider for OpenAiProvider {
    fn describe(&self) -> String {
        self.endpoint.describe()
    }

    fn route(&self) -> RouteKind {
        self.endpoint.route
    }

    fn context_tokens(&self) -> u64 {
        self.endpoint.context_tokens
    }

    fn is_local(&self) -> bool {
        waymark_config::setup::local_address(&self.endpoint.base_url)
    }

    fn takes_images(&self) -> bool {
        self.endpoint.images
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, ProviderError>> {
        Box::pin(async move {
            let ep = &self.endpoint;
            let mut headers = Vec::new();
            if let Some(k) = &ep.api_key {
                headers.push(("authorization", format!("Bearer {k}")));
            }
            let url = format!("{}/models", ep.base_url);
            match self.wire.get(&url, &headers).await {
                Ok(body) => super::models::parse(&body, super::models::Listing::Data, &url),
                // An Ollama older than its OpenAI-compatible listing: its own, `/api/tags`.
                Err(e) if super::models::not_found(&e) => {
                    let Some(tags) = super::models::tags_url(&ep.base_url) else {
                        return Err(e);
                    };
                    let body = self.wire.get(&tags, &headers).await.map_err(|_| e)?;
                    super::models::parse(&body, super::models::Listing::Tags, &tags)
                }
                Err(e) => Err(e),
            }
        })
    }

    fn call<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: StreamSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            let ep = &self.endpoint;
            // OpenAI's own endpoint and Ollama's take images; a compatible server may not.
            let body = request_body(&ep.model, request, ep.images, openai_service(&ep.base_url))?;
            let mut headers = Vec::new();
            if let Some(k) = &ep.api_key {
                headers.push(("authorization", format!("Bearer {k}")));
            }
            let url = format!("{}/chat/completions", ep.base_url);
            let hidden = reasoning_hidden(&ep.base_url, &ep.model);
            self.wire
                .call::<ChunkFolder>(
                    &url,
                    &headers,
                    &body,
                    sink,
                    request.estimated_tokens(),
                    hidden,
                )
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::StreamFold as _;
    use serde_json::json;
    use waymark_protocol::Usage;

    fn fold(chunks: &[&str]) -> Result<ModelResponse, ProviderError> {
        let mut f = ChunkFolder::default();
        let sink = |_: StreamEvent| {};
        for c in chunks {
            f.push(c, &sink)?;
        }
        f.finish(0)
    }

    /// Third red-team: a reply of 200 KB of tool arguments with `"usage": {}` was estimated as
    /// no output at all.
    #[test]
    fn tool_call_arguments_count_in_an_estimated_output() {
        let big = "x".repeat(200_000);
        let call = json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a",
            "function": {"name": "write", "arguments": format!("{{\"c\": \"{big}\"}}")}}]}}]});
        let r = fold(&[
            &call.to_string(),
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}],"usage":{}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert!(
            r.usage.estimated && r.usage.output_tokens >= 50_000,
            "{:?}",
            r.usage
        );
    }

    /// Third red-team: Ollama's built-in price of nothing held wherever its address pointed.
    #[test]
    fn only_an_endpoint_on_this_machine_or_network_is_local() {
        let at = |url: &str| {
            OpenAiProvider::new(
                crate::Endpoint {
                    label: "ollama".into(),
                    base_url: url.into(),
                    model: "m".into(),
                    api_key: None,
                    key_hint: "K".into(),
                    route: RouteKind::OwnKey,
                    context_tokens: 8000,
                    images: true,
                },
                crate::HttpOptions::default(),
            )
            .unwrap()
            .is_local()
        };
        assert!(at("http://localhost:11434/v1"));
        assert!(at("http://127.0.0.1:11434/v1"));
        assert!(at("http://192.168.1.20:11434/v1"));
        assert!(!at("https://api.example.invalid/v1"));
        assert!(!at("http://93.184.216.34/v1"));
    }

    #[test]
    fn assembles_parallel_tool_calls_by_index() {
        let r = fold(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"pa"}},{"index":1,"id":"b","function":{"name":"list_dir","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"path\":\".\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"x\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":3}}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "x"}));
        assert_eq!(r.tool_calls[1].name, "list_dir");
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 4,
                cached_tokens: 3,
                estimated: false,
            }
        );
    }

    #[test]
    fn request_body_has_the_wire_shape() {
        use crate::{CallPurpose, ToolSpec};
        let req = ModelRequest {
            system: "sys".into(),
            messages: vec![
                ModelMessage::user("hi"),
                ModelMessage::Assistant {
                    text: String::new(),
                    reasoning: Some("because".into()),
                    tool_calls: vec![ToolCallRecord {
                        id: "c1".into(),
                        wire_id: None,
                        name: "read_file".into(),
                        arguments: json!({"path": "a"}),
                    }],
                },
                ModelMessage::ToolResult {
                    call_id: "c1".into(),
                    name: "read_file".into(),
                    content: "text".into(),
                    is_error: false,
                    images: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: 99,
            purpose: CallPurpose::Main,
        };
        let v: Value =
            serde_json::from_slice(&request_body("m", &req, true, false).unwrap()).unwrap();
        assert_eq!(
            v,
            json!({
                "model": "m", "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 99,
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "", "reasoning_content": "because",
                     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "text"}
                ],
                "tools": [{"type": "function", "function": {"name": "read_file", "description": "d", "parameters": {"type": "object"}}}]
            })
        );
    }

    /// Images follow the run of tool results as one user message of image parts (a tool
    /// message takes text only), and only where the endpoint takes images.
    #[test]
    fn images_follow_the_tool_results_as_image_parts() {
        let result = |id: &str, images| ModelMessage::ToolResult {
            call_id: id.into(),
            name: "mcp__s__img".into(),
            content: "[image]".into(),
            is_error: false,
            images,
        };
        let png = waymark_protocol::ToolImage {
            mime: "image/png".into(),
            data: "iVBO".into(),
        };
        let req = ModelRequest {
            system: "sys".into(),
            messages: vec![
                result("a", vec![png.clone()]),
                result("b", vec![]),
                ModelMessage::user("next"),
            ],
            tools: vec![],
            max_output_tokens: 9,
            purpose: crate::CallPurpose::Main,
        };
        let v: Value =
            serde_json::from_slice(&request_body("m", &req, true, false).unwrap()).unwrap();
        let roles: Vec<&str> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "tool", "tool", "user", "user"]);
        let parts = &v["messages"][3]["content"];
        assert_eq!(parts[2]["type"], "image_url");
        assert_eq!(parts[2]["image_url"]["url"], "data:image/png;base64,iVBO");
        let v: Value =
            serde_json::from_slice(&request_body("m", &req, false, false).unwrap()).unwrap();
        assert_eq!(v["messages"].as_array().unwrap().len(), 4, "no images sent");
    }

    #[test]
    fn usage_inside_the_choice_is_read() {
        let r = fold(&[
            r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":"stop","usage":{"prompt_tokens":7,"completion_tokens":1}}]}"#,
        ])
        .unwrap();
        assert_eq!(r.usage.input_tokens, 7);
        assert_eq!(r.text, "hi");
    }

    #[test]
    fn reasoning_content_is_kept() {
        let r = fold(&[
            r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
        ])
        .unwrap();
        assert_eq!(r.reasoning.as_deref(), Some("think"));
    }

    #[test]
    fn truncated_or_garbled_stream_is_bad_response() {
        let e = fold(&[r#"{"choices":[{"delta":{"content":"par"}}]}"#]).unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::BadResponse);
        let e = fold(&[r#"{"choices":[{"delta":"#]).unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::BadResponse);
    }

    /// Fourth red-team (an aside): OpenAI's own service refuses `max_tokens` for its
    /// reasoning models (GPT-5, the o-series) and takes `max_completion_tokens`; other
    /// servers speaking the protocol take `max_tokens`.
    #[test]
    fn reasoning_models_that_stream_no_reasoning_are_known() {
        for m in [
            "o3",
            "o1-mini",
            "o4-mini",
            "gpt-5",
            "gpt-5.1",
            "openai/gpt-5-mini",
            "O3",
        ] {
            assert!(super::hides_reasoning(m), "{m}");
        }
        for m in [
            "gpt-4.1",
            "o30",
            "gpt-4o",
            "claude-sonnet-4-5",
            "deepseek-r1",
            "llama3",
        ] {
            assert!(!super::hides_reasoning(m), "{m}");
        }
    }

    /// Sixth red-team: an Azure deployment of o3 under its own name was charged as a model
    /// that streams everything.
    #[test]
    fn a_deployment_under_its_own_name_on_azure_counts_as_reasoning() {
        let azure = "https://acme.openai.azure.com/openai/deployments/x";
        assert!(super::reasoning_hidden(azure, "my-o3-deployment"));
        assert!(super::reasoning_hidden(
            "https://api.openai.com/v1",
            "codex-mini-latest"
        ));
        assert!(!super::reasoning_hidden(azure, "gpt-4.1"));
        assert!(!super::reasoning_hidden(
            "http://127.0.0.1:8080/v1",
            "my-model"
        ));
        assert!(super::reasoning_hidden("http://127.0.0.1:8080/v1", "o3"));
    }

    #[test]
    fn openais_own_service_gets_max_completion_tokens() {
        for (url, own) in [
            ("https://api.openai.com/v1", true),
            ("HTTPS://API.OPENAI.COM:443/v1", true),
            ("https://me.openai.azure.com/openai/v1", true),
            ("https://api.openai.com.evil.example/v1", false),
            ("https://api.deepseek.com/v1", false),
            ("http://127.0.0.1:11434/v1", false),
            ("https://user@api.openai.com/v1", true),
        ] {
            assert_eq!(openai_service(url), own, "{url}");
        }
        let req = ModelRequest {
            system: "s".into(),
            messages: vec![],
            tools: vec![],
            max_output_tokens: 77,
            purpose: crate::CallPurpose::Main,
        };
        let own: Value =
            serde_json::from_slice(&request_body("m", &req, true, true).unwrap()).unwrap();
        assert_eq!(own["max_completion_tokens"], 77);
        assert!(own.get("max_tokens").is_none());
        let other: Value =
            serde_json::from_slice(&request_body("m", &req, true, false).unwrap()).unwrap();
        assert_eq!(other["max_tokens"], 77);
        assert!(other.get("max_completion_tokens").is_none());
    }
}

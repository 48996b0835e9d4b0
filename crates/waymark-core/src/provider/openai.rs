//! OpenAI Chat Completions over SSE. Serves OpenAI and the many compatible servers (Ollama,
//! vLLM, llama.cpp, LM Studio, DeepSeek, Moonshot, MiniMax).

use super::http::{self, HttpOptions};
use super::{
    Endpoint, ModelMessage, ModelProvider, ModelRequest, ModelResponse, ProviderError,
    ProviderErrorKind, StreamEvent, StreamSink, parse_arguments,
};
use crate::store::ToolCallRecord;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use waymark_protocol::{RouteKind, Usage};

/// A Chat Completions endpoint.
pub struct OpenAiProvider {
    endpoint: Endpoint,
    wire: http::Wire,
}

impl OpenAiProvider {
    /// A client for the endpoint (its base URL ends before `/chat/completions`).
    pub fn new(endpoint: Endpoint, opts: HttpOptions) -> Result<Self, ProviderError> {
        Ok(OpenAiProvider {
            wire: http::Wire::new(opts, &endpoint.key_hint),
            endpoint,
        })
    }
}

/// The request body for a model request.
pub(crate) fn request_body(model: &str, req: &ModelRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": req.system})];
    for m in &req.messages {
        messages.push(match m {
            ModelMessage::User { text } => json!({"role": "user", "content": text}),
            ModelMessage::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                let mut o = json!({"role": "assistant", "content": text});
                if !tool_calls.is_empty() {
                    o["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function", "function": {
                                "name": c.name,
                                "arguments": match &c.arguments {
                                    Value::String(s) => s.clone(),
                                    v => v.to_string(),
                                }
                            }})
                        })
                        .collect();
                }
                if let Some(r) = reasoning {
                    o["reasoning_content"] = json!(r);
                }
                o
            }
            ModelMessage::ToolResult {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    let mut body = json!({
        "model": model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": messages,
        "max_tokens": req.max_output_tokens,
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters
                }})
            })
            .collect();
    }
    body
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
    usage: Option<Usage>,
    finished: bool,
    done: bool,
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
            self.usage = Some(parse_usage(u));
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if let Some(u) = choice.get("usage").filter(|u| !u.is_null()) {
                self.usage = Some(parse_usage(u));
            }
            if choice.get("finish_reason").is_some_and(|f| !f.is_null()) {
                self.finished = true;
            }
            let Some(delta) = choice.get("delta") else {
                continue;
            };
            if let Some(t) = delta.get("content").and_then(Value::as_str)
                && !t.is_empty()
            {
                self.text.push_str(t);
                sink(StreamEvent::Text(t.to_string()));
            }
            for key in ["reasoning_content", "reasoning"] {
                if let Some(t) = delta.get(key).and_then(Value::as_str)
                    && !t.is_empty()
                {
                    self.reasoning.push_str(t);
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
                    }
                    if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                        slot.arguments.push_str(a);
                    }
                }
            }
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    /// The reply, or `bad_response` if the stream stopped before the end.
    fn finish(self, estimate_input: u64) -> Result<ModelResponse, ProviderError> {
        if !self.done && !self.finished {
            return Err(ProviderError::bad_response(
                "the model stream ended before the reply was complete",
            ));
        }
        let mut tool_calls = Vec::new();
        for (index, c) in self.calls {
            if c.name.is_empty() {
                return Err(ProviderError::bad_response(format!(
                    "tool call #{index} in the stream has no name"
                )));
            }
            tool_calls.push(ToolCallRecord {
                id: c.id.unwrap_or_else(|| format!("call_{index}")),
                name: c.name,
                arguments: parse_arguments(&c.arguments),
            });
        }
        let usage = self.usage.unwrap_or_else(|| Usage {
            input_tokens: estimate_input,
            output_tokens: super::estimate_tokens(self.text.len() + self.reasoning.len()),
            cached_tokens: 0,
        });
        Ok(ModelResponse {
            text: self.text,
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
            tool_calls,
            usage,
        })
    }
}

fn parse_usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n(u.get("prompt_tokens").or_else(|| u.get("input_tokens"))),
        output_tokens: n(u
            .get("completion_tokens")
            .or_else(|| u.get("output_tokens"))),
        cached_tokens: n(u
            .pointer("/prompt_tokens_details/cached_tokens")
            .or_else(|| u.get("cached_tokens"))),
    }
}

pub(crate) fn clip(s: &str) -> String {
    if s.len() <= 200 {
        return s.to_string();
    }
    let cut = (0..=200)
        .rev()
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}…", &s[..cut])
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

    fn call<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: StreamSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            let ep = &self.endpoint;
            let body = request_body(&ep.model, request);
            let mut headers = Vec::new();
            if let Some(k) = &ep.api_key {
                headers.push(("authorization", format!("Bearer {k}")));
            }
            let url = format!("{}/chat/completions", ep.base_url);
            self.wire
                .call::<ChunkFolder>(&url, &headers, &body, sink, request.estimated_tokens())
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::http::StreamFold as _;

    fn fold(chunks: &[&str]) -> Result<ModelResponse, ProviderError> {
        let mut f = ChunkFolder::default();
        let sink = |_: StreamEvent| {};
        for c in chunks {
            f.push(c, &sink)?;
        }
        f.finish(0)
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
                cached_tokens: 3
            }
        );
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
}

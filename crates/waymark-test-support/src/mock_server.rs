//! A local HTTP server speaking just enough HTTP/1.1 to play provider responses: status,
//! headers, and a body written in chunks (flushed one by one, optionally with pauses).

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Clone, Debug)]
pub struct MockResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Vec<u8>>,
    pub pause: Duration,
}

impl MockResponse {
    pub fn sse(body: &str) -> Self {
        MockResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: vec![body.as_bytes().to_vec()],
            pause: Duration::ZERO,
        }
    }

    /// The same body cut at the given byte offsets.
    pub fn split_at(mut self, cuts: &[usize]) -> Self {
        let body: Vec<u8> = self.chunks.concat();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut chunks = Vec::new();
        let mut start = 0;
        for c in cuts.into_iter().chain([body.len()]) {
            if c > start {
                chunks.push(body[start..c].to_vec());
                start = c;
            }
        }
        self.chunks = chunks;
        self.pause = Duration::from_millis(1);
        self
    }

    pub fn status(status: u16, body: &str, headers: &[(&str, &str)]) -> Self {
        MockResponse {
            status,
            headers: headers
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            chunks: vec![body.as_bytes().to_vec()],
            pause: Duration::ZERO,
        }
    }
}

/// A recorded request: path and JSON body.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub headers: String,
    pub body: serde_json::Value,
}

pub struct MockServer {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    /// Serves `responses` in order, one per request; after they run out, answers 500.
    pub async fn start(responses: Vec<MockResponse>) -> MockServer {
        let queue = Mutex::new(std::collections::VecDeque::from(responses));
        Self::start_with(move |_| {
            queue.lock().unwrap().pop_front().unwrap_or_else(|| {
                MockResponse::status(
                    500,
                    "{\"error\":{\"message\":\"no more mock responses\"}}",
                    &[],
                )
            })
        })
        .await
    }

    /// Answers each request with what `respond` makes of it (a model that reads the
    /// request: how long it is, what it asks for).
    pub async fn start_with(
        respond: impl Fn(&Recorded) -> MockResponse + Send + Sync + 'static,
    ) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let respond = Arc::new(respond);
        let rec = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                // No delayed-ACK stalls between a response's chunks.
                let _ = sock.set_nodelay(true);
                let rec = rec.clone();
                let respond = respond.clone();
                tokio::spawn(async move {
                    let Some((head, body)) = read_request(&mut sock).await else {
                        return;
                    };
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    let recorded = Recorded {
                        path,
                        headers: head.to_ascii_lowercase(),
                        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
                    };
                    let resp = respond(&recorded);
                    rec.lock().unwrap().push(recorded);
                    let mut out = format!("HTTP/1.1 {} X\r\nconnection: close\r\n", resp.status);
                    for (k, v) in &resp.headers {
                        out.push_str(&format!("{k}: {v}\r\n"));
                    }
                    out.push_str("\r\n");
                    if sock.write_all(out.as_bytes()).await.is_err() {
                        return;
                    }
                    for c in &resp.chunks {
                        if sock.write_all(c).await.is_err() {
                            return;
                        }
                        let _ = sock.flush().await;
                        if !resp.pause.is_zero() {
                            tokio::time::sleep(resp.pause).await;
                        }
                    }
                    let _ = sock.shutdown().await;
                });
            }
        });
        MockServer {
            url: format!("http://{addr}"),
            requests,
            task,
        }
    }

    pub fn recorded(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..pos]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            let mut body = buf[pos + 4..].to_vec();
            while body.len() < len {
                let n = sock.read(&mut tmp).await.ok()?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&tmp[..n]);
            }
            return Some((head, body));
        }
    }
}

/// The wire protocol a mock provider speaks.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Flavor {
    OpenAi,
    Anthropic,
}

/// A streamed reply in `flavor`'s wire format: `text`, then optionally one tool call, with
/// `input` as the reported input tokens.
pub fn reply(flavor: Flavor, text: &str, call: Option<(&str, Value)>, input: u64) -> MockResponse {
    let calls: Vec<(&str, Value)> = call.into_iter().collect();
    reply_calls(flavor, text, &calls, input)
}

/// [`reply`] with any number of tool calls, in order.
pub fn reply_calls(
    flavor: Flavor,
    text: &str,
    calls: &[(&str, Value)],
    input: u64,
) -> MockResponse {
    let mut s = String::new();
    match flavor {
        Flavor::OpenAi => {
            let mut ev = |v: Value| s.push_str(&format!("data: {v}\n\n"));
            ev(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}));
            for (i, (name, args)) in calls.iter().enumerate() {
                ev(
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": format!("call_{}", i + 1), "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}}]}}]}),
                );
            }
            let finish = if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            ev(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
            ev(json!({"choices": [], "usage": {"prompt_tokens": input, "completion_tokens": 30}}));
            s.push_str("data: [DONE]\n\n");
        }
        Flavor::Anthropic => {
            let mut ev =
                |name: &str, v: Value| s.push_str(&format!("event: {name}\ndata: {v}\n\n"));
            ev(
                "message_start",
                json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": input, "output_tokens": 1}}}),
            );
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            );
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            );
            ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            );
            for (i, (name, args)) in calls.iter().enumerate() {
                let index = i + 1;
                ev(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_{index}"), "name": name, "input": {}}}),
                );
                ev(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": args.to_string()}}),
                );
                ev(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": index}),
                );
            }
            let stop = if calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            ev(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 30}}),
            );
            ev("message_stop", json!({"type": "message_stop"}));
        }
    }
    MockResponse::sse(&s)
}

/// A runtime on `h`'s data whose model is the mock `server` speaking `flavor` (`change`
/// adjusts the options further), and a new session of it in `auto` mode.
pub fn on_mock(
    h: &crate::harness::Harness,
    flavor: Flavor,
    server: &MockServer,
    change: impl FnOnce(&mut waymark_runtime::RuntimeOptions),
) -> (waymark_runtime::Runtime, waymark_runtime::SessionHandle) {
    let model = match flavor {
        Flavor::OpenAi => "openai:gpt-mock",
        Flavor::Anthropic => "anthropic:claude-mock",
    };
    on_mock_model(h, flavor, server, model, change)
}

/// [`on_mock`] with the session's model named `model` (`openai:o3`).
pub fn on_mock_model(
    h: &crate::harness::Harness,
    flavor: Flavor,
    server: &MockServer,
    model: &str,
    change: impl FnOnce(&mut waymark_runtime::RuntimeOptions),
) -> (waymark_runtime::Runtime, waymark_runtime::SessionHandle) {
    let url = server.url.clone();
    let model = model.to_string();
    let (base_var, key_var) = match flavor {
        Flavor::OpenAi => ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
        Flavor::Anthropic => ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
    };
    let base = match flavor {
        Flavor::OpenAi => format!("{url}/v1"),
        Flavor::Anthropic => url,
    };
    let runtime = h.reopen(move |o| {
        o.env = Arc::new(move |k: &str| {
            if k == base_var {
                Some(base.clone())
            } else if k == key_var {
                Some("sk-mock".into())
            } else {
                None
            }
        });
        change(o);
    });
    let s = runtime
        .create_session(waymark_runtime::SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(model),
            permission_mode: Some(waymark_protocol::PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    (runtime, s)
}

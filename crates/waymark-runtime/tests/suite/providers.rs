//! Wire clients against a local server speaking the real OpenAI and Anthropic stream formats.

use super::mock_server::{MockResponse, MockServer};
use proptest::prelude::*;
use serde_json::json;
use std::sync::Mutex;
use std::time::Duration;
use waymark_protocol::{RouteKind, Usage};
use waymark_runtime::provider::{
    AnthropicProvider, CallPurpose, Endpoint, HttpOptions, ModelMessage, ModelProvider,
    ModelRequest, ModelResponse, OpenAiProvider, ProviderError, ProviderErrorKind, RetryPolicy,
    StreamEvent, ToolSpec,
};

fn opts() -> HttpOptions {
    HttpOptions {
        connect_timeout: Duration::from_secs(5),
        first_byte_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        error_body_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_tries: 3,
            min_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
            retry_after_cap: Duration::from_secs(2),
        },
    }
}

fn endpoint(url: &str, key: Option<&str>) -> Endpoint {
    Endpoint {
        label: "test".into(),
        base_url: url.into(),
        model: "m1".into(),
        api_key: key.map(str::to_string),
        key_hint: "TEST_API_KEY".into(),
        route: RouteKind::OwnKey,
        context_tokens: 100_000,
        images: true,
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        system: "be brief".into(),
        messages: vec![ModelMessage::user("hi")],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "read".into(),
            parameters: json!({"type": "object"}),
        }],
        max_output_tokens: 256,
        purpose: CallPurpose::Main,
    }
}

async fn call(p: &dyn ModelProvider) -> (Result<ModelResponse, ProviderError>, Vec<StreamEvent>) {
    let seen = Mutex::new(Vec::new());
    let sink = |e: StreamEvent| seen.lock().unwrap().push(e);
    let req = request();
    let r = p.call(&req, &sink).await;
    (r, seen.into_inner().unwrap())
}

const OPENAI_STREAM: &str = concat!(
    ": keep-alive\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Let me \"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"look.\"}}]}\n\n",
    ": keep-alive\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}},{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\":\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\": \\\"src/\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"fn main\\\"}\"}},{\"index\":0,\"function\":{\"arguments\":\"main.rs\\\"}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":33,\"prompt_tokens_details\":{\"cached_tokens\":100}}}\n\n",
    "data: [DONE]\n\n",
);

fn check_openai(r: &ModelResponse) {
    assert_eq!(r.text, "Let me look.");
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.tool_calls[0].wire_id.as_deref(), Some("call_a"));
    assert_eq!(r.tool_calls[0].arguments, json!({"path": "src/main.rs"}));
    assert_eq!(r.tool_calls[1].name, "grep");
    assert_eq!(r.tool_calls[1].arguments, json!({"pattern": "fn main"}));
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 33,
            cached_tokens: 100,
            estimated: false,
        }
    );
}

#[tokio::test]
async fn openai_stream_with_fragments_parallel_calls_usage_and_keepalives() {
    let server = MockServer::start(vec![MockResponse::sse(OPENAI_STREAM)]).await;
    let p = OpenAiProvider::new(
        endpoint(&format!("{}/v1", server.url), Some("sk-test")),
        opts(),
    )
    .unwrap();
    let (r, seen) = call(&p).await;
    check_openai(&r.unwrap());
    assert!(
        seen.iter()
            .filter(|e| matches!(e, StreamEvent::Text(_)))
            .count()
            >= 2
    );
    let req = &server.recorded()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert!(req.headers.contains("authorization: bearer sk-test"));
    assert_eq!(req.body["stream_options"]["include_usage"], true);
    assert_eq!(req.body["messages"][0]["role"], "system");
    assert_eq!(req.body["tools"][0]["function"]["name"], "read_file");
}

const ANTHROPIC_STREAM: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":50,\"cache_read_input_tokens\":20,\"output_tokens\":1}}}\n\n",
    "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Reading \"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"it.\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read_file\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\"}}\n\n",
    "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\" \\\"a.txt\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":42}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

fn check_anthropic(r: &ModelResponse) {
    assert_eq!(r.text, "Reading it.");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].wire_id.as_deref(), Some("toolu_1"));
    assert_eq!(r.tool_calls[0].arguments, json!({"path": "a.txt"}));
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 70,
            output_tokens: 42,
            cached_tokens: 20,
            estimated: false,
        }
    );
}

#[tokio::test]
async fn anthropic_stream_with_input_json_usage_and_pings() {
    let server = MockServer::start(vec![MockResponse::sse(ANTHROPIC_STREAM)]).await;
    let p = AnthropicProvider::new(endpoint(&server.url, Some("ak")), opts()).unwrap();
    let (r, _) = call(&p).await;
    check_anthropic(&r.unwrap());
    let req = &server.recorded()[0];
    assert_eq!(req.path, "/v1/messages");
    assert!(req.headers.contains("x-api-key: ak"));
    assert!(req.headers.contains("anthropic-version: 2023-06-01"));
    assert_eq!(req.body["system"], "be brief");
    assert_eq!(req.body["tools"][0]["input_schema"]["type"], "object");
}

/// A provider that reports `"usage": {}`, or null figures, has its tokens estimated as if it
/// had reported no usage at all, and the record says so: a missing figure never counts as 0
/// tokens (and so as $0 against a cap).
#[tokio::test]
async fn empty_or_null_usage_is_estimated_never_zero_on_both_wire_protocols() {
    let openai = |usage: &str| {
        MockResponse::sse(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n\
             data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n\
             data: {{\"choices\":[],\"usage\":{usage}}}\n\n\
             data: [DONE]\n\n",
            "a reply long enough to be counted ".repeat(20)
        ))
    };
    let anthropic = |start: &str, delta: &str| {
        MockResponse::sse(&format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\"usage\":{start}}}}}\n\n\
             event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
             event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{}\"}}}}\n\n\
             event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
             event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{delta}}}\n\n\
             event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
            "a reply long enough to be counted ".repeat(20)
        ))
    };
    let server = MockServer::start(vec![
        openai("{}"),
        openai(r#"{"prompt_tokens":null,"completion_tokens":null}"#),
        openai(r#"{"prompt_tokens":900}"#),
        anthropic("{}", "{}"),
        anthropic(
            r#"{"input_tokens":null,"output_tokens":null}"#,
            r#"{"output_tokens":null}"#,
        ),
    ])
    .await;
    let o = OpenAiProvider::new(endpoint(&server.url, None), opts()).unwrap();
    let a = AnthropicProvider::new(endpoint(&server.url, None), opts()).unwrap();
    let mut got = Vec::new();
    for p in [&o as &dyn ModelProvider, &o, &o, &a, &a] {
        got.push(call(p).await.0.unwrap().usage);
    }
    for (i, u) in got.iter().enumerate() {
        assert!(u.estimated, "reply {i} is marked estimated: {u:?}");
        assert!(
            u.input_tokens > 0,
            "reply {i}: input estimated, not 0: {u:?}"
        );
        assert!(
            u.output_tokens >= 100,
            "reply {i}: 680 bytes of reply estimated as tokens, not 0: {u:?}"
        );
    }
    // A figure the provider did give is kept; only the missing one is estimated.
    assert_eq!(got[2].input_tokens, 900);
    // What a full report gives is not marked.
    let full = MockServer::start(vec![MockResponse::sse(OPENAI_STREAM)]).await;
    let p = OpenAiProvider::new(endpoint(&full.url, None), opts()).unwrap();
    assert!(!call(&p).await.0.unwrap().usage.estimated);
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn openai_stream_split_at_random_offsets_parses_the_same(cuts in proptest::collection::vec(0usize..4000, 1..40)) {
        rt().block_on(async {
            let server = MockServer::start(vec![MockResponse::sse(OPENAI_STREAM).split_at(&cuts)]).await;
            let p = OpenAiProvider::new(endpoint(&server.url, None), opts()).unwrap();
            check_openai(&call(&p).await.0.unwrap());
        });
    }

    #[test]
    fn anthropic_stream_split_at_random_offsets_parses_the_same(cuts in proptest::collection::vec(0usize..4000, 1..40)) {
        rt().block_on(async {
            let server = MockServer::start(vec![MockResponse::sse(ANTHROPIC_STREAM).split_at(&cuts)]).await;
            let p = AnthropicProvider::new(endpoint(&server.url, None), opts()).unwrap();
            check_anthropic(&call(&p).await.0.unwrap());
        });
    }
}

#[tokio::test]
async fn truncated_streams_are_bad_response_not_a_panic() {
    let cut_openai = &OPENAI_STREAM[..OPENAI_STREAM.find("finish_reason").unwrap() - 60];
    let cut_anthropic = &ANTHROPIC_STREAM[..ANTHROPIC_STREAM.find("message_stop").unwrap() - 30];
    let server = MockServer::start(vec![
        MockResponse::sse(cut_openai),
        MockResponse::sse(cut_anthropic),
        MockResponse::sse("data: {\"choices\": [{\"delta\": \n\ndata: [DONE]\n\n"),
    ])
    .await;
    let o = OpenAiProvider::new(endpoint(&server.url, None), opts()).unwrap();
    let a = AnthropicProvider::new(endpoint(&server.url, None), opts()).unwrap();
    assert_eq!(
        call(&o).await.0.unwrap_err().kind,
        ProviderErrorKind::BadResponse
    );
    assert_eq!(
        call(&a).await.0.unwrap_err().kind,
        ProviderErrorKind::BadResponse
    );
    let garbled = call(&o).await.0.unwrap_err();
    assert_eq!(garbled.kind, ProviderErrorKind::BadResponse);
    assert!(garbled.message.contains("not JSON"), "{garbled}");
}

#[tokio::test]
async fn rate_limit_is_retried_honouring_retry_after_then_succeeds() {
    let server = MockServer::start(vec![
        MockResponse::status(
            429,
            r#"{"error":{"message":"slow down"}}"#,
            &[("retry-after", "1")],
        ),
        MockResponse::sse(OPENAI_STREAM),
    ])
    .await;
    let p = OpenAiProvider::new(endpoint(&server.url, None), opts()).unwrap();
    let (r, seen) = call(&p).await;
    check_openai(&r.unwrap());
    assert_eq!(server.recorded().len(), 2);
    let waits: Vec<u64> = seen
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retry { wait, error, .. } => {
                assert_eq!(error.kind, ProviderErrorKind::RateLimited);
                Some(wait.as_millis() as u64)
            }
            _ => None,
        })
        .collect();
    assert_eq!(waits, vec![1000], "the Retry-After of 1 s is the wait");
}

#[tokio::test]
async fn rate_limit_three_times_gives_rate_limited() {
    let limited = || {
        MockResponse::status(
            429,
            r#"{"error":{"message":"slow down"}}"#,
            &[("retry-after", "0")],
        )
    };
    let server = MockServer::start(vec![
        limited(),
        limited(),
        limited(),
        MockResponse::sse(OPENAI_STREAM),
    ])
    .await;
    let p = OpenAiProvider::new(endpoint(&server.url, None), opts()).unwrap();
    let e = call(&p).await.0.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::RateLimited);
    assert!(e.message.contains("slow down"));
    assert_eq!(server.recorded().len(), 3, "at most 3 tries");
}

/// A usage limit says when it resets, from the real headers of each provider.
#[tokio::test]
async fn a_rate_limit_carries_when_it_resets() {
    let limited = |headers: &'static [(&'static str, &'static str)]| {
        MockResponse::status(
            429,
            r#"{"error":{"message":"Rate limit reached"}}"#,
            headers,
        )
    };
    let openai: &[(&str, &str)] = &[
        ("x-ratelimit-reset-requests", "1s"),
        ("x-ratelimit-reset-tokens", "6m0s"),
    ];
    let server = MockServer::start(vec![limited(openai), limited(openai), limited(openai)]).await;
    let p = OpenAiProvider::new(endpoint(&server.url, None), opts()).unwrap();
    let e = call(&p).await.0.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::RateLimited);
    assert_eq!(e.resets_in, Some(Duration::from_secs(360)));
    assert_eq!(
        server.recorded().len(),
        1,
        "a limit longer than any retry waits is not tried again"
    );

    let bare = MockServer::start(vec![limited(&[]), limited(&[]), limited(&[])]).await;
    let p = OpenAiProvider::new(endpoint(&bare.url, None), opts()).unwrap();
    assert_eq!(call(&p).await.0.unwrap_err().resets_in, None);
}

#[tokio::test]
async fn quota_auth_and_server_errors_are_typed() {
    let server = MockServer::start(vec![
        MockResponse::status(429, r#"{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}"#, &[]),
        MockResponse::status(401, r#"{"error":{"message":"Incorrect API key provided"}}"#, &[]),
        MockResponse::status(503, "overloaded", &[]),
        MockResponse::status(503, "overloaded", &[]),
        MockResponse::status(503, "overloaded", &[]),
    ])
    .await;
    let p = OpenAiProvider::new(endpoint(&server.url, Some("bad")), opts()).unwrap();
    let quota = call(&p).await.0.unwrap_err();
    assert_eq!(quota.kind, ProviderErrorKind::QuotaExhausted);
    let auth = call(&p).await.0.unwrap_err();
    assert_eq!(auth.kind, ProviderErrorKind::Auth);
    assert!(
        auth.message.contains("HTTP 401")
            && auth.message.contains("Incorrect API key")
            && auth.message.contains("TEST_API_KEY"),
        "{auth}"
    );
    let server_err = call(&p).await.0.unwrap_err();
    assert_eq!(server_err.kind, ProviderErrorKind::ServerError);
    assert_eq!(
        server.recorded().len(),
        5,
        "auth and quota are not retried; 5xx is, 3 times"
    );
}

#[tokio::test]
async fn errors_after_the_first_byte_are_not_retried() {
    let server = MockServer::start(vec![
        MockResponse::sse("data: {\"choices\":[{\"delta\":{\"content\":\"half\"}}]}\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\n"),
        MockResponse::sse(OPENAI_STREAM),
    ])
    .await;
    let p = OpenAiProvider::new(endpoint(&server.url, None), opts()).unwrap();
    let e = call(&p).await.0.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::ServerError);
    assert_eq!(server.recorded().len(), 1);
}

#[tokio::test]
async fn unreachable_server_is_a_network_error_after_retries() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let p = OpenAiProvider::new(endpoint(&url, None), opts()).unwrap();
    let (r, seen) = call(&p).await;
    assert_eq!(r.unwrap_err().kind, ProviderErrorKind::Network);
    assert_eq!(
        seen.iter()
            .filter(|e| matches!(e, StreamEvent::Retry { .. }))
            .count(),
        2
    );
}

#[tokio::test]
async fn a_stalled_stream_is_a_timeout() {
    let mut stalled = MockResponse::sse(OPENAI_STREAM).split_at(&[120]);
    stalled.pause = Duration::from_secs(3);
    let server = MockServer::start(vec![stalled]).await;
    let mut o = opts();
    o.idle_timeout = Duration::from_millis(200);
    let p = OpenAiProvider::new(endpoint(&server.url, None), o).unwrap();
    let e = call(&p).await.0.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Timeout);
    assert!(e.message.contains("sent nothing"), "{e}");
}

/// The setup card's model list: OpenAI's and every compatible server's `GET /models` with the
/// key as a bearer token, Anthropic's `GET /v1/models` with its own headers, and an Ollama
/// without the compatible listing answered from `/api/tags`.
#[tokio::test]
async fn each_kind_of_server_lists_its_models_with_its_own_headers() {
    let listed = r#"{"object":"list","data":[{"id":"m2"},{"id":"m1"}]}"#;
    let server = MockServer::start(vec![MockResponse::status(200, listed, &[])]).await;
    let p = OpenAiProvider::new(
        endpoint(&format!("{}/v1", server.url), Some("sk-t")),
        opts(),
    )
    .unwrap();
    assert_eq!(p.list_models().await.unwrap(), ["m1", "m2"]);
    let asked = &server.recorded()[0];
    assert!(
        asked.headers.starts_with("get /v1/models "),
        "{}",
        asked.headers
    );
    assert!(
        asked.headers.contains("authorization: bearer sk-t"),
        "{}",
        asked.headers
    );

    let server = MockServer::start(vec![MockResponse::status(200, listed, &[])]).await;
    let p = AnthropicProvider::new(endpoint(&server.url, Some("sk-ant")), opts()).unwrap();
    assert_eq!(p.list_models().await.unwrap(), ["m1", "m2"]);
    let asked = &server.recorded()[0].headers;
    assert!(asked.starts_with("get /v1/models?limit=1000 "), "{asked}");
    assert!(
        asked.contains("x-api-key: sk-ant") && asked.contains("anthropic-version:"),
        "{asked}"
    );

    let tags = r#"{"models":[{"name":"qwen3:8b"},{"name":"llama3.2:latest"}]}"#;
    let server = MockServer::start(vec![
        MockResponse::status(404, "404 page not found", &[]),
        MockResponse::status(200, tags, &[]),
    ])
    .await;
    let p = OpenAiProvider::new(endpoint(&format!("{}/v1", server.url), None), opts()).unwrap();
    assert_eq!(
        p.list_models().await.unwrap(),
        ["llama3.2:latest", "qwen3:8b"]
    );
    let paths: Vec<String> = server.recorded().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/models", "/api/tags"]);
}

/// A hostile or broken server: a refused key is an auth error (the card puts it under the key
/// field), a redirect is not followed (the key would go with it), and a listing without end
/// is cut off with an error instead of filling memory.
#[tokio::test]
async fn a_listing_that_refuses_redirects_or_never_ends_is_an_error() {
    let server = MockServer::start(vec![MockResponse::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided."}}"#,
        &[],
    )])
    .await;
    let p = OpenAiProvider::new(
        endpoint(&format!("{}/v1", server.url), Some("sk-bad")),
        opts(),
    )
    .unwrap();
    let e = p.list_models().await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Auth, "{e:?}");

    let server = MockServer::start(vec![MockResponse::status(
        302,
        "",
        &[("location", "http://127.0.0.1:9/steal")],
    )])
    .await;
    let p = OpenAiProvider::new(
        endpoint(&format!("{}/v1", server.url), Some("sk-t")),
        opts(),
    )
    .unwrap();
    let e = p.list_models().await.unwrap_err();
    assert!(e.message.contains("redirect"), "{e:?}");
    assert_eq!(server.recorded().len(), 1);

    let huge = format!(
        r#"{{"data":[{}]}}"#,
        vec![r#"{"id":"m"}"#; 400_000].join(",")
    );
    let server = MockServer::start(vec![MockResponse::status(200, &huge, &[])]).await;
    let p = OpenAiProvider::new(endpoint(&format!("{}/v1", server.url), None), opts()).unwrap();
    let e = p.list_models().await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::BadResponse, "{e:?}");
    assert!(e.message.contains("more than"), "{e:?}");
}

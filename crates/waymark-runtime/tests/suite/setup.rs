//! The setup card's "Test connection" against a local server speaking the real OpenAI and
//! Anthropic formats: the key it sends, and the field it blames when the server says no.

use super::mock_server::{Flavor, MockResponse, MockServer, reply};
use std::path::Path;
use std::sync::Arc;
use waymark_config::Config;
use waymark_config::setup::{
    ModelSetup, SETUP_BASE_URL, SETUP_KEY, SETUP_MODEL, SetupProvider, plan,
};
use waymark_runtime::setup::try_model;

fn setup(provider: SetupProvider, url: &str, model: &str) -> ModelSetup {
    ModelSetup {
        provider,
        base_url: url.into(),
        model: model.into(),
    }
}

/// An OpenAI-style server with one key and one model, answering as the real API does.
async fn server(flavor: Flavor) -> MockServer {
    MockServer::start_with(move |r| {
        let key_ok = r.headers.contains("authorization: bearer sk-good")
            || r.headers.contains("x-api-key: sk-good");
        if !key_ok {
            return MockResponse::status(
                401,
                r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
                &[("content-type", "application/json")],
            );
        }
        if r.body["model"] != "m1" {
            return MockResponse::status(
                404,
                r#"{"error":{"message":"The model `nope` does not exist or you do not have access to it.","code":"model_not_found"}}"#,
                &[("content-type", "application/json")],
            );
        }
        reply(flavor, "ready", None, 12)
    })
    .await
}

#[tokio::test]
async fn a_test_call_reaches_the_server_with_the_key_given_and_costs_a_few_tokens() {
    let s = server(Flavor::OpenAi).await;
    let p = plan(
        &Config::default(),
        &setup(SetupProvider::Compatible, &format!("{}/v1", s.url), "m1"),
        true,
    )
    .unwrap();
    // The environment holds another key for the same variable: the one typed wins.
    let env = Arc::new(|name: &str| (name == "CUSTOM_API_KEY").then(|| "sk-old".to_string()));
    let probe = try_model(&p, Some(" sk-good "), env, Path::new("/"))
        .await
        .unwrap();
    assert_eq!(probe.model, "custom:m1");
    let sent = s.recorded();
    assert_eq!(sent.len(), 1, "one call, no retries");
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert!(sent[0].body["tools"].is_null() || sent[0].body["tools"] == serde_json::json!([]));
    let cap = sent[0].body["max_tokens"]
        .as_u64()
        .or(sent[0].body["max_completion_tokens"].as_u64())
        .unwrap();
    assert!(cap <= 32, "{}", sent[0].body);
}

#[tokio::test]
async fn a_refused_key_a_missing_model_and_a_wrong_path_each_blame_their_field() {
    let s = server(Flavor::OpenAi).await;
    let none = Arc::new(|_: &str| None);
    let at = |url: String, model: &str| {
        plan(
            &Config::default(),
            &setup(SetupProvider::Compatible, &url, model),
            true,
        )
        .unwrap()
    };
    let e = try_model(
        &at(format!("{}/v1", s.url), "m1"),
        Some("sk-bad"),
        none.clone(),
        Path::new("/"),
    )
    .await
    .unwrap_err();
    assert_eq!(e.setting.as_deref(), Some(SETUP_KEY), "{e}");
    assert!(e.message.contains("HTTP 401"), "{e}");
    let e = try_model(
        &at(format!("{}/v1", s.url), "nope"),
        Some("sk-good"),
        none.clone(),
        Path::new("/"),
    )
    .await
    .unwrap_err();
    assert_eq!(e.setting.as_deref(), Some(SETUP_MODEL), "{e}");
    assert!(e.message.contains("does not exist"), "{e}");
    // A server that answers every path with a page, not the API.
    let page = MockServer::start_with(|_| {
        MockResponse::status(
            404,
            "<html>Not Found</html>",
            &[("content-type", "text/html")],
        )
    })
    .await;
    let e = try_model(
        &at(format!("{}/wrong", page.url), "m1"),
        Some("sk-good"),
        none,
        Path::new("/"),
    )
    .await
    .unwrap_err();
    assert_eq!(e.setting.as_deref(), Some(SETUP_BASE_URL), "{e}");
    // One call per test: the first server saw two.
    assert_eq!(s.recorded().len(), 2);
}

#[tokio::test]
async fn anthropic_behind_a_proxy_is_tried_in_its_own_format() {
    let s = server(Flavor::Anthropic).await;
    let p = plan(
        &Config::default(),
        &setup(SetupProvider::Anthropic, &s.url, "m1"),
        true,
    )
    .unwrap();
    let probe = try_model(&p, Some("sk-good"), Arc::new(|_| None), Path::new("/"))
        .await
        .unwrap();
    assert_eq!(probe.model, "anthropic-custom:m1");
    assert_eq!(s.recorded()[0].path, "/v1/messages");
}

#[tokio::test]
async fn a_server_that_answers_nonsense_blames_the_address() {
    let s = MockServer::start_with(|_| MockResponse::sse("data: {\"not\": \"a completion\"}\n\n"))
        .await;
    let p = plan(
        &Config::default(),
        &setup(SetupProvider::Compatible, &s.url, "m1"),
        false,
    )
    .unwrap();
    let e = try_model(&p, None, Arc::new(|_| None), Path::new("/"))
        .await
        .unwrap_err();
    assert_eq!(e.setting.as_deref(), Some(SETUP_BASE_URL), "{e}");
}

#[tokio::test]
async fn a_server_that_echoes_the_key_never_shows_it() {
    let s = MockServer::start_with(|_| {
        MockResponse::status(
            401,
            r#"{"error":{"message":"bad key sk-e2e-typed-secret-9, try again"}}"#,
            &[("content-type", "application/json")],
        )
    })
    .await;
    let p = plan(
        &Config::default(),
        &setup(SetupProvider::Compatible, &s.url, "m1"),
        true,
    )
    .unwrap();
    let e = try_model(
        &p,
        Some("sk-e2e-typed-secret-9"),
        Arc::new(|_| None),
        Path::new("/"),
    )
    .await
    .unwrap_err();
    assert!(!e.message.contains("sk-e2e-typed-secret-9"), "{e}");
    assert!(e.message.contains("[the key]"), "{e}");
}

/// A server that answers with a redirect to another host: the key never follows it, for
/// either wire format (reqwest would carry Anthropic's `x-api-key` header along).
#[tokio::test]
async fn a_redirect_is_refused_and_the_key_never_reaches_the_other_host() {
    let collector = MockServer::start_with(|_| reply(Flavor::Anthropic, "got it", None, 1)).await;
    let to = format!("{}/v1/messages", collector.url);
    let gateway = MockServer::start_with(move |_| {
        MockResponse::status(307, "", &[("location", to.as_str())])
    })
    .await;
    for provider in [SetupProvider::Anthropic, SetupProvider::Compatible] {
        let p = plan(
            &Config::default(),
            &setup(provider, &gateway.url, "m1"),
            true,
        )
        .unwrap();
        let e = try_model(&p, Some("sk-good"), Arc::new(|_| None), Path::new("/"))
            .await
            .unwrap_err();
        assert_eq!(e.setting.as_deref(), Some(SETUP_BASE_URL), "{e}");
        assert!(e.message.contains("redirect (HTTP 307)"), "{e}");
    }
    assert!(
        collector.recorded().is_empty(),
        "the key went to the other host"
    );
    assert_eq!(gateway.recorded().len(), 2);
}

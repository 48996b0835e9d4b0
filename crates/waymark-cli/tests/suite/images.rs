//! `exec --image`: the image goes to the model in each provider's own format (asserted on the
//! bodies a mock server of each wire received), is kept in the session folder and shown in the
//! transcript, and what cannot be sent is refused before any call.

use super::support::*;
use serde_json::{Value, json};
use waymark_test_support::mock_server::{Flavor, MockServer, reply};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn png_file(env: &Env, name: &str) -> String {
    use base64::Engine as _;
    let path = env.dir.path().join(name);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(PNG)
        .unwrap();
    std::fs::write(&path, bytes).unwrap();
    path.display().to_string()
}

/// `exec` with `extra` arguments on a mock server of `flavor` that answers once.
fn exec_on(flavor: Flavor, model: &str, extra: &[&str]) -> (Env, std::process::Output, Vec<Value>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start(vec![reply(
        flavor, "I see it", None, 100,
    )]));
    let env = Env::new();
    let (key, base) = match flavor {
        Flavor::OpenAi => (
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_BASE_URL", format!("{}/v1", server.url)),
        ),
        Flavor::Anthropic => (
            ("ANTHROPIC_API_KEY", "sk-ant-test"),
            ("ANTHROPIC_BASE_URL", server.url.clone()),
        ),
    };
    let image = png_file(&env, "shot.png");
    let mut args = vec![
        "exec",
        "--json",
        "--workspace",
        env.ws.to_str().unwrap(),
        "--model",
        model,
    ];
    let extra: Vec<&str> = extra
        .iter()
        .map(|a| if *a == "IMAGE" { image.as_str() } else { a })
        .collect();
    args.extend(extra);
    let out = env
        .cmd()
        .env(key.0, key.1)
        .env(base.0, base.1)
        .args(&args)
        .output()
        .unwrap();
    let bodies = server.recorded().into_iter().map(|r| r.body).collect();
    (env, out, bodies)
}

#[test]
fn an_image_reaches_openai_as_a_data_uri_and_is_kept_and_shown() {
    let (env, out, bodies) = exec_on(
        Flavor::OpenAi,
        "openai:m",
        &["--image", "IMAGE", "what is this?"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(bodies.len(), 1);
    let user = bodies[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(
        user["content"][0],
        json!({"type": "text", "text": "what is this?"}),
        "{user}"
    );
    assert_eq!(
        user["content"][1],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}),
        "{user}"
    );
    // The transcript's event carries it, and the session folder keeps the file.
    let admitted = json_lines(&out)
        .into_iter()
        .find(|e| e["type"] == "message.admitted")
        .unwrap();
    assert_eq!(admitted["images"][0]["mime"], "image/png", "{admitted}");
    let sid = env.only_session();
    let kept: Vec<_> = std::fs::read_dir(env.data.join("sessions").join(&sid).join("images"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].ends_with(".png"), "{kept:?}");
}

#[test]
fn an_image_reaches_anthropic_as_a_base64_block() {
    let (_env, out, bodies) = exec_on(
        Flavor::Anthropic,
        "anthropic:claude-test",
        &["--image", "IMAGE", "--image", "IMAGE", "compare these"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let content = bodies[0]["messages"][0]["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(content[0], json!({"type": "text", "text": "compare these"}));
    for block in &content[1..3] {
        assert_eq!(
            block,
            &json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}})
        );
    }
    assert_eq!(content.len(), 3, "{content:?}");
}

/// `exec --image <image> look` with model `model`; `server`, when given, as OpenAI's.
fn exec_image(
    env: &Env,
    server: Option<&MockServer>,
    model: &str,
    image: impl AsRef<std::ffi::OsStr>,
) -> std::process::Output {
    let mut cmd = env.cmd();
    if let Some(server) = server {
        cmd.env("OPENAI_API_KEY", "sk-test")
            .env("OPENAI_BASE_URL", format!("{}/v1", server.url));
    }
    cmd.args([
        "exec",
        "--workspace",
        env.ws.to_str().unwrap(),
        "--model",
        model,
    ])
    .arg("--image")
    .arg(image)
    .arg("look")
    .output()
    .unwrap()
}

#[test]
fn a_six_megabyte_or_mislabelled_image_is_refused_before_any_call() {
    let env = Env::new();
    let big = env.dir.path().join("big.png");
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize(6 * 1024 * 1024, 7);
    std::fs::write(&big, bytes).unwrap();
    let fake = env.dir.path().join("notes.png");
    std::fs::write(&fake, "these are notes, not a picture").unwrap();
    for (path, says) in [
        (&big, "is 6.0 MB; images over 5 MB are not sent"),
        (&fake, "is not a PNG, JPEG, GIF or WebP image"),
    ] {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = rt.block_on(MockServer::start(vec![reply(
            Flavor::OpenAi,
            "no",
            None,
            1,
        )]));
        let out = exec_image(&env, Some(&server), "openai:m", path);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(text(&out).contains(says), "{}", text(&out));
        assert!(server.recorded().is_empty(), "no call is made");
    }
}

#[test]
fn a_model_that_takes_no_images_is_refused_before_any_call() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start(vec![reply(
        Flavor::OpenAi,
        "no",
        None,
        1,
    )]));
    let env = Env::new();
    env.settings(&format!(
        r#"{{"providers": {{"plain": {{"kind": "openai", "base_url": "{}/v1", "model": "text-only"}}}}}}"#,
        server.url
    ));
    let image = png_file(&env, "shot.png");
    let out = exec_image(&env, None, "plain", &image);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("plain:text-only takes no images"),
        "{}",
        text(&out)
    );
    assert!(server.recorded().is_empty(), "no call is made");
    // The same server, said to take images, is sent it.
    env.settings(&format!(
        r#"{{"providers": {{"plain": {{"kind": "openai", "base_url": "{}/v1", "model": "text-only", "images": true}}}}}}"#,
        server.url
    ));
    let out = exec_image(&env, None, "plain", &image);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(server.recorded().len(), 1);
}

/// A provider that refuses an attached image (a model on that server that takes none) fails
/// that request; the call goes again without it and the session goes on, never stuck
/// re-sending it (red-team finding: user images were outside this net).
#[test]
fn an_attached_image_the_provider_refuses_is_dropped_and_the_run_goes_on() {
    use waymark_test_support::mock_server::MockResponse;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start(vec![
        MockResponse::status(
            400,
            r#"{"error":{"message":"Invalid image: this model does not support image input","type":"invalid_request_error"}}"#,
            &[],
        ),
        reply(Flavor::OpenAi, "I could not see it", None, 100),
    ]));
    let env = Env::new();
    let image = png_file(&env, "shot.png");
    let out = exec_image(&env, Some(&server), "openai:o3-mini", &image);
    assert!(out.status.success(), "{}", text(&out));
    let sent = server.recorded();
    assert_eq!(sent.len(), 2);
    assert!(sent[0].body.to_string().contains("data:image/png;base64,"));
    assert!(
        !sent[1].body.to_string().contains("image_url"),
        "sent again"
    );
}

//! The first run: with no model, the window shows the setup card. "Test connection" calls a
//! local server speaking the OpenAI format (one key, one model, refusing the rest as the real
//! API does), each failure is said beside its field, and saving puts the key in the keyring
//! and the model in the settings, so the next session talks to that server.

use super::*;

/// The mock server with one key and one model; its port.
fn account(desk: &Desk) -> (harness::Proc, u16, PathBuf) {
    let auth_log = desk.dir.path().join("auth.log");
    let mut server = std::process::Command::new("python3");
    server
        .arg(root().join("scripts/mock_openai.py"))
        .env("MOCK_AUTH_LOG", &auth_log)
        .env("MOCK_API_KEY", "sk-e2e-good")
        .env("MOCK_MODELS", "m1")
        .stdout(std::process::Stdio::piped());
    let mut server = harness::spawn(&mut server);
    let port = harness::first_line(server.child()).parse().unwrap();
    (server, port, auth_log)
}

#[tokio::test(flavor = "multi_thread")]
async fn first_run_connects_a_model_with_field_errors_then_a_session_uses_it() {
    let desk = Desk::start();
    let (_server, port, auth_log) = account(&desk);
    let app = desk.launch().await;
    app.el("[data-testid=setup-card]").await;
    assert!(!app.exists("[data-testid=demo-banner]").await);
    app.shot("setup-1-first-run").await;

    // An OpenAI-compatible server on this machine, with a wrong key first.
    app.click("[data-testid=setup-provider-compatible]").await;
    app.type_into(
        "[data-testid=setup-base-url]",
        &format!("http://127.0.0.1:{port}/v1"),
    )
    .await;
    app.type_into("[data-testid=setup-key]", "sk-e2e-wrong")
        .await;
    app.type_into("[data-testid=setup-model]", "m2").await;
    app.click("[data-testid=setup-test]").await;
    app.wait_text("[data-testid=setup-error-key]", "HTTP 401")
        .await;
    app.shot("setup-2-key-refused").await;
    // The right key: now the model is the one the server lacks.
    app.type_into("[data-testid=setup-key]", "sk-e2e-good")
        .await;
    app.click("[data-testid=setup-test]").await;
    app.wait_text("[data-testid=setup-error-model]", "does not exist")
        .await;
    assert!(!app.exists("[data-testid=setup-error-key]").await);
    // The server lists the models it has (GET /v1/models with the key): pick one.
    app.click("[data-testid=setup-list-models]").await;
    app.wait_text("[data-testid=setup-models]", "1 model on this server")
        .await;
    app.shot("setup-3-models-listed").await;
    app.js("const s = document.querySelector('[data-testid=setup-models]'); s.value = 'm1'; s.dispatchEvent(new Event('change', { bubbles: true })); return null")
        .await;
    app.wait_js(
        "return document.querySelector('[data-testid=setup-model]').value === 'm1' || null",
        "the model picked from the list in the model field",
    )
    .await;
    app.click("[data-testid=setup-test]").await;
    app.wait_text("[data-testid=setup-status]", "Connected: custom:m1")
        .await;
    app.shot("setup-4-connected").await;
    let tried = std::fs::read_to_string(&auth_log).unwrap();
    assert_eq!(
        tried.lines().count(),
        4,
        "one call per test and one listing: {tried}"
    );

    // Saved: the key in the keyring, never in the file; the model in the settings.
    app.click("[data-testid=setup-save]").await;
    app.wait_text("[data-testid=toast]", "new sessions use custom:m1")
        .await;
    app.el("[data-testid=empty-open]").await;
    let saved = std::fs::read_to_string(desk.settings_file()).unwrap();
    assert!(!saved.contains("sk-e2e"), "{saved}");
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(saved["model"], "custom:m1", "{saved}");
    assert_eq!(
        saved["providers"]["custom"]["base_url"],
        format!("http://127.0.0.1:{port}/v1")
    );
    assert_eq!(
        saved["providers"]["custom"]["api_key_env"],
        "CUSTOM_API_KEY"
    );
    app.shot("setup-5-saved").await;

    // A folder opened now runs on that server with the stored key.
    // No sub-folder: the chooser's location bar would complete the path into it.
    let ws = desk.dir.path().join("connected");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("README.md"), "connected\n").unwrap();
    app.click("[data-testid=empty-open]").await;
    desk.choose_folder(&ws, None);
    app.el("[data-testid=composer]").await;
    app.type_into("[data-testid=composer]", "Check the project\u{E007}")
        .await;
    app.wait_text("[data-testid=transcript]", "nothing to change (check")
        .await;
    app.wait_js(
        "return document.querySelector('[data-testid=model-picker]')?.value === 'custom:m1'",
        "the header to show the model",
    )
    .await;
    let sent = std::fs::read_to_string(&auth_log).unwrap();
    assert!(
        sent.lines().last().unwrap().contains("sk-e2e-good"),
        "{sent}"
    );
    app.shot("setup-5-session-on-the-model").await;

    // The header's pickers: read-only from the next tool call, another model from the next
    // model call, each said in the transcript and kept with the session.
    app.click("[data-testid=mode-picker] option[value=read-only]")
        .await;
    app.wait_text("[data-testid=transcript]", "Now on custom:m1 · Read only")
        .await;
    app.pick_other_model(&script("chat.json")).await;
    app.wait_text(
        "[data-testid=transcript]",
        "Now on Offline script (chat.json)",
    )
    .await;
    app.type_into("[data-testid=composer]", "Who is there?\u{E007}")
        .await;
    app.wait_text("[data-testid=transcript]", "Hello! Ready when you are.")
        .await;
    app.shot("setup-6-switched-model-and-mode").await;
    let listed = desk.cli(&["sessions", "--json"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("\"read-only\""), "{listed}");
    assert!(listed.contains("chat.json"), "{listed}");
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_answers_stay_beside_their_field_and_nothing_is_saved() {
    let desk = Desk::start();
    let app = desk.launch().await;
    app.el("[data-testid=setup-card]").await;
    app.click("[data-testid=setup-provider-compatible]").await;
    app.type_into("[data-testid=setup-base-url]", "ftp://example.test/v1")
        .await;
    app.type_into("[data-testid=setup-model]", "m1").await;
    app.click("[data-testid=setup-save]").await;
    app.wait_text("[data-testid=setup-error-base_url]", "http:// or https://")
        .await;
    let focused = app
        .js("return document.activeElement?.dataset.testid ?? ''")
        .await;
    assert_eq!(focused, "setup-base-url");
    // A port nothing listens on: the test blames the address.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    app.type_into(
        "[data-testid=setup-base-url]",
        &format!("http://127.0.0.1:{port}/v1"),
    )
    .await;
    app.click("[data-testid=setup-test]").await;
    app.wait_text("[data-testid=setup-error-base_url]", "could not reach")
        .await;
    app.shot("setup-6-address-refused").await;
    assert!(!desk.settings_file().exists(), "nothing saved");
    // "Save and start" tests first: against the dead port it saves nothing, says so, and
    // offers "Save anyway".
    app.click("[data-testid=setup-save]").await;
    app.wait_text("[data-testid=setup-untested]", "nothing was saved")
        .await;
    app.wait_text("[data-testid=setup-error-base_url]", "could not reach")
        .await;
    assert!(!desk.settings_file().exists(), "nothing saved");
    assert!(
        !app.text("[data-testid=setup-card]")
            .await
            .contains("Connected"),
        "no 'Connected' for a model never reached"
    );
    app.shot("setup-7-save-tested-first").await;
    // Saved untested only when asked, and said so.
    app.click("[data-testid=setup-save-anyway]").await;
    app.wait_text("[data-testid=toast]", "Saved without a working test")
        .await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(desk.settings_file()).unwrap()).unwrap();
    assert_eq!(saved["model"], "custom:m1", "{saved}");
    // The demo stays reachable from the start page, and Settings has the same card with
    // its test.
    app.el("[data-testid=empty-demo]").await;
    app.click("[data-testid=open-settings]").await;
    app.el("[data-testid=settings] [data-testid=setup-test]")
        .await;
    app.shot("setup-8-settings-model-card").await;
    app.click("[data-testid=open-settings]").await;
    app.click("[data-testid=empty-demo]").await;
    app.wait_text("[data-testid=transcript]", "greet.sh").await;
    app.close().await;
}

//! Settings: beta flags taking effect at once, validation, API keys in the keyring; the
//! page fits a small and a large window, and Back asks before unsaved edits are dropped.

use super::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_beta_flag_toggled_in_settings_changes_behaviour_without_a_restart() {
    let desk = Desk::start();
    let ws = workspace(&desk, "flags");
    let out = desk.exec(&ws, &script("chat.json"), &["Hello"]);
    succeeded(&out);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;

    // Plan mode off in Settings.
    app.click("[data-testid=open-settings]").await;
    app.click("[data-testid=flag-plan-mode]").await;
    app.click("[data-testid=settings-save]").await;
    app.el("[data-testid=settings-saved]").await;
    app.shot("settings-1-plan-mode-off").await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(desk.settings_file()).unwrap()).unwrap();
    assert_eq!(saved["beta"]["desktop_plan_mode"], false, "{saved}");

    // The open session refuses the next entry at once, by command and by the composer chip.
    app.click("[data-testid=open-settings]").await;
    app.type_into("[data-testid=composer]", "/plan on\u{E007}")
        .await;
    app.wait_text("[data-testid=toast]", "beta.desktop_plan_mode")
        .await;
    app.send_with_plan_chip("Plan the refactor").await;
    app.wait_text("[data-testid=toast]", "beta.desktop_plan_mode")
        .await;
    app.shot("settings-2-entry-refused").await;

    // An invalid value is refused with the key named, and the file keeps the last good settings.
    app.click("[data-testid=open-settings]").await;
    app.type_into("[data-testid=breaker-limit]", "0").await;
    app.click("[data-testid=settings-save]").await;
    // Next to the field, in the field's words, not the internal key.
    app.wait_text(
        "[data-testid=field-error]",
        "Same reply this often pauses the goal",
    )
    .await;
    app.shot("settings-3-validation").await;
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(desk.settings_file()).unwrap()).unwrap();
    assert_eq!(kept, saved);

    // An API key goes to the system keyring, never into the settings file.
    let key_row = "[data-testid=key-OPENAI_API_KEY]";
    app.type_into(
        &format!("{key_row} [data-testid=key-input]"),
        "sk-e2e-secret-123",
    )
    .await;
    app.click(&format!("{key_row} [data-testid=key-store]"))
        .await;
    app.wait_text(&format!("{key_row} [data-testid=key-state]"), "in keyring")
        .await;
    app.shot("settings-4-key-in-keyring").await;
    assert!(
        !std::fs::read_to_string(desk.settings_file())
            .unwrap()
            .contains("sk-e2e")
    );
    app.click(&format!("{key_row} [data-testid=key-remove]"))
        .await;
    app.wait_text(&format!("{key_row} [data-testid=key-state]"), "not stored")
        .await;

    // Back on: entering plan mode works again.
    app.type_into("[data-testid=breaker-limit]", "3").await;
    app.click("[data-testid=flag-plan-mode]").await;
    app.click("[data-testid=settings-save]").await;
    app.el("[data-testid=settings-saved]").await;
    app.click("[data-testid=open-settings]").await;
    app.type_into("[data-testid=composer]", "/plan on\u{E007}")
        .await;
    app.wait_text("[data-testid=transcript]", "Plan mode is on")
        .await;
    app.close().await;
}

/// Waits until the mock model has answered `n` times in the open transcript.
async fn wait_replies(app: &App, n: usize) {
    app.wait_js(
        &format!(
            "return document.querySelector('[data-testid=transcript]').innerText.split('nothing to change (check').length - 1 >= {n}"
        ),
        "the model's reply",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_api_key_stored_in_the_keyring_is_what_the_provider_sends() {
    let desk = Desk::start();
    let auth_log = desk.dir.path().join("auth.log");
    let mut server = std::process::Command::new("python3");
    server
        .arg(root().join("scripts/mock_openai.py"))
        .env("MOCK_AUTH_LOG", &auth_log)
        .stdout(std::process::Stdio::piped());
    let mut server = harness::spawn(&mut server);
    let port = harness::first_line(server.child());
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(
        desk.settings_file(),
        format!(r#"{{"model": "mock", "providers": {{"mock": {{"kind": "openai", "base_url": "http://127.0.0.1:{port}/v1", "api_key_env": "MOCK_AUTH", "model": "m1"}}}}}}"#),
    )
    .unwrap();
    // The CLI starts the session with a key from its environment…
    let ws = workspace(&desk, "keyed");
    let mut cli = std::process::Command::new(harness::target_dir().join("debug/waymark"));
    let out = cli
        .arg("--data-dir")
        .arg(desk.data_dir())
        .args([
            "exec",
            "--json",
            "--workspace",
            ws.to_str().unwrap(),
            "Check the project",
        ])
        .envs(desk.env())
        .env("MOCK_AUTH", "from-the-environment")
        .output()
        .unwrap();
    succeeded(&out);

    // …the app, which has no such variable, opens it, and a turn says what is missing…
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.type_into("[data-testid=composer]", "Try without a key\u{E007}")
        .await;
    app.wait_text("[data-testid=transcript]", "MOCK_AUTH is not set")
        .await;
    app.shot("settings-5a-key-missing").await;
    // …until the key is in the keyring.
    app.click("[data-testid=open-settings]").await;
    app.type_into(
        "[data-testid=key-MOCK_AUTH] [data-testid=key-input]",
        "from-the-keyring",
    )
    .await;
    app.click("[data-testid=key-MOCK_AUTH] [data-testid=key-store]")
        .await;
    app.wait_text(
        "[data-testid=key-MOCK_AUTH] [data-testid=key-state]",
        "in keyring",
    )
    .await;
    // The session already open picks the key up on its next turn, no restart needed…
    app.click("[data-testid=open-settings]").await;
    let replies = app
        .text("[data-testid=transcript]")
        .await
        .matches("nothing to change (check")
        .count();
    app.type_into("[data-testid=composer]", "Once more\u{E007}")
        .await;
    wait_replies(&app, replies + 1).await;
    let sent = std::fs::read_to_string(&auth_log).unwrap();
    assert!(
        sent.lines()
            .next()
            .unwrap()
            .contains("from-the-environment"),
        "{sent}"
    );
    assert!(
        sent.lines().last().unwrap().contains("from-the-keyring"),
        "{sent}"
    );
    app.shot("settings-5b-keyring-key-used").await;
    // …and the key is still there after a restart.
    app.quit().await;
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    assert!(
        !app.exists("[data-testid=demo-banner]").await,
        "a model is configured: no demo"
    );
    let requests = std::fs::read_to_string(&auth_log).unwrap().lines().count();
    app.type_into("[data-testid=composer]", "After a restart\u{E007}")
        .await;
    wait_replies(&app, replies + 2).await;
    let sent = std::fs::read_to_string(&auth_log).unwrap();
    assert!(sent.lines().count() > requests, "{sent}");
    assert!(
        sent.lines().last().unwrap().contains("from-the-keyring"),
        "{sent}"
    );
    assert!(
        !std::fs::read_to_string(desk.settings_file())
            .unwrap()
            .contains("from-the")
    );
    app.shot("settings-5c-keyring-key-after-restart").await;
    app.close().await;
}

/// What of the Settings page is wider than its box (and would scroll sideways): the page and
/// each section whose content is wider than it, and any element that ends outside the page.
const OVERFLOWING: &str = "\
    const page = document.querySelector('[data-testid=settings]'); \
    const name = (e) => e.dataset.testid ?? `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}`; \
    const wide = [page, ...page.querySelectorAll('section')] \
        .filter((e) => e.scrollWidth > e.clientWidth) \
        .map((e) => `${name(e)}: ${e.scrollWidth} > ${e.clientWidth}`); \
    const edge = page.getBoundingClientRect().right; \
    const outside = [...page.querySelectorAll('*')] \
        .filter((e) => e.getBoundingClientRect().right > edge + 0.5) \
        .slice(0, 5) \
        .map((e) => `${name(e)} ends at ${Math.round(e.getBoundingClientRect().right)} > ${Math.round(edge)}`); \
    return [...wide, ...outside];";

/// Scrolls the Settings page so the Goals section starts just under its sticky header.
const GOALS_IN_VIEW: &str = "\
    const page = document.querySelector('[data-testid=settings]'); \
    const goals = page.querySelector('[data-testid=settings-goals]'); \
    const header = page.querySelector('header').getBoundingClientRect().bottom; \
    page.scrollTop += goals.getBoundingClientRect().top - header - 8; \
    return true";

#[tokio::test(flavor = "multi_thread")]
async fn settings_fit_the_window_at_900x600_and_1440x900_and_back_asks_before_dropping_edits() {
    let desk = Desk::start();
    // Long names in every section that shows them: a provider, its address and key, and a
    // tool server that cannot start (its reason in full).
    let long = "a-provider-with-a-rather-long-name-for-its-row";
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(
        desk.settings_file(),
        json!({
            "model": script("chat.json"),
            "providers": {long: {
                "kind": "openai",
                "base_url": "http://localhost:11434/v1/a/path/long/enough/to/fill/the/whole/field",
                "api_key_env": "A_RATHER_LONG_ENVIRONMENT_VARIABLE_FOR_THE_KEY",
            }},
            "mcp_servers": {"broken": {"command": "/nonexistent/waymark-test-server"}},
        })
        .to_string(),
    )
    .unwrap();
    let app = desk.launch().await;
    app.click("[data-testid=open-settings]").await;
    app.wait_text(
        "[data-testid=tool-server-broken] [data-testid=tool-server-reason]",
        "cannot start",
    )
    .await;
    for (w, h) in [(900, 600), (1440, 900)] {
        desk.resize(&app, w, h).await;
        app.el("[data-testid=settings-goals]").await;
        let wide = app.js(OVERFLOWING).await;
        assert_eq!(wide, json!([]), "Settings overflow sideways at {w}×{h}");
        app.js(GOALS_IN_VIEW).await;
        app.shot(&format!("settings-6-goals-{w}x{h}")).await;
    }

    // An edit not saved: Back asks, "Keep editing" keeps it, "Discard" leaves without it.
    app.type_into("[data-testid=breaker-limit]", "7").await;
    app.el("[data-testid=settings-unsaved-goals]").await;
    app.click("[data-testid=settings-back]").await;
    app.wait_text(
        "[data-testid=settings-discard-confirm]",
        "Discard your changes?",
    )
    .await;
    app.shot("settings-7-back-asks").await;
    app.click("[data-testid=settings-keep-editing]").await;
    app.wait_gone("[data-testid=settings-discard-confirm]")
        .await;
    let kept = app
        .js("return document.querySelector('[data-testid=breaker-limit]').value")
        .await;
    assert_eq!(kept, json!("7"));
    app.click("[data-testid=settings-back]").await;
    app.click("[data-testid=settings-discard]").await;
    app.wait_gone("[data-testid=settings]").await;
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(desk.settings_file()).unwrap()).unwrap();
    assert_ne!(
        file["goal"]["breaker"]["repeated_reply_limit"],
        json!(7),
        "the edit was dropped, not saved: {file}"
    );
    app.close().await;
}

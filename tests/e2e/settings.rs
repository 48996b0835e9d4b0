//! Settings: beta flags taking effect at once, validation, API keys in the keyring.

use super::*;

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
    app.wait_text("[data-testid=field-error]", "Same reply this often")
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
    app.wait_text("[data-testid=transcript]", "Plan mode on")
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

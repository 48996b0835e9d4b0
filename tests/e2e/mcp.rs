//! Tool servers (MCP) in the window, against the reference server of `tests/mcp`: one added
//! in Settings starts by itself and lists its tools, one that cannot start says why, and a
//! call reads as its server's tool, with its progress while it runs and the image it returns.

use super::*;
use fantoccini::key::Key;
use serde_json::json;

/// A program of the MCP test servers (`scripts/setup.sh` installs them in tests/mcp).
fn mcp_bin(name: &str) -> PathBuf {
    let p = root().join("tests/mcp/node_modules/.bin").join(name);
    assert!(
        p.exists(),
        "{} missing: scripts/setup.sh installs the MCP test servers",
        p.display()
    );
    p
}

/// The app's PATH with the Node of tests/mcp first: the servers start with
/// `#!/usr/bin/env node`, and the app hands them its PATH.
fn path_with_node(desk: &Desk) -> String {
    let base = desk
        .env()
        .into_iter()
        .find(|(k, _)| *k == "PATH")
        .map(|(_, v)| v.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        "{}:{base}",
        root().join("tests/mcp/node_modules/.bin").display()
    )
}

fn write_settings(desk: &Desk, settings: serde_json::Value) {
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(desk.settings_file(), settings.to_string()).unwrap();
}

/// The state pill of server `name` in Settings.
fn state_of(name: &str) -> String {
    format!("[data-testid=tool-server-{name}] [data-testid=tool-server-state]")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_added_in_settings_starts_by_itself_and_lists_its_tools() {
    let desk = Desk::start();
    write_settings(&desk, json!({"model": script("chat.json")}));
    let path = path_with_node(&desk);
    let app = desk.launch_with(&[("PATH", path.as_str())]).await;
    app.click("[data-testid=open-settings]").await;
    app.el("[data-testid=tool-servers]").await;

    app.type_into("[data-testid=add-server-name]", "everything")
        .await;
    // Quoted: the path may hold blanks.
    let command = format!("\"{}\" stdio", mcp_bin("mcp-server-everything").display());
    app.type_into("[data-testid=add-server-command]", &command)
        .await;
    app.click("[data-testid=add-server-submit]").await;
    app.wait_text(&state_of("everything"), "ready").await;
    let tools = app
        .text("[data-testid=tool-server-everything] [data-testid=tool-server-tools]")
        .await;
    let count: u32 = tools
        .strip_suffix(" tools")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a tool count: {tools:?}"));
    assert!(count > 1, "{tools}");
    assert!(!app.exists("[data-testid=add-server-error]").await);
    // In the settings file as typed, beside what was there.
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(desk.settings_file()).unwrap()).unwrap();
    let server = &saved["mcp_servers"]["everything"];
    assert_eq!(
        server["command"],
        json!(mcp_bin("mcp-server-everything").display().to_string()),
        "{saved}"
    );
    assert_eq!(server["args"], json!(["stdio"]), "{saved}");
    assert_eq!(saved["model"], json!(script("chat.json")), "{saved}");
    app.shot("mcp-settings-ready").await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_says_why_in_settings() {
    let desk = Desk::start();
    write_settings(
        &desk,
        json!({
            "model": script("chat.json"),
            "mcp_servers": {"broken": {"command": "/nonexistent/waymark-test-server"}}
        }),
    );
    let app = desk.launch().await;
    app.click("[data-testid=open-settings]").await;
    let reason = "[data-testid=tool-server-broken] [data-testid=tool-server-reason]";
    let said = app.wait_text(reason, "cannot start").await;
    assert!(said.contains("/nonexistent/waymark-test-server"), "{said}");
    assert!(app.el(reason).await.is_displayed().await.unwrap());
    // Failed, or being tried again after failing (the reason stays shown meanwhile).
    let state = app.text(&state_of("broken")).await;
    assert!(state == "failed" || state == "starting", "{state}");
    app.js(&format!(
        "document.querySelector({reason:?}).scrollIntoView({{block: 'center'}}); return true"
    ))
    .await;
    app.shot("mcp-settings-failed").await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_call_shows_its_server_its_progress_and_the_image_it_returns() {
    let desk = Desk::start();
    let ws = workspace(&desk, "mcp");
    // The session, in `auto` mode (MCP tools run without asking); its first reply is a
    // greeting, the next one calls the server.
    let out = desk.exec(
        &ws,
        &script("mcp_call.json"),
        &["--permission", "auto", "Hello"],
    );
    succeeded(&out);
    // The server is the app's: the CLI run above had none.
    write_settings(
        &desk,
        json!({
            "model": script("chat.json"),
            "mcp_servers": {"everything": {
                "command": mcp_bin("mcp-server-everything").display().to_string(),
                "args": ["stdio"]
            }}
        }),
    );
    let path = path_with_node(&desk);
    let app = desk.launch_with(&[("PATH", path.as_str())]).await;
    app.el("[data-testid=session].current").await;
    // Ready before the model calls it.
    app.click("[data-testid=open-settings]").await;
    app.wait_text(&state_of("everything"), "ready").await;
    app.click("[data-testid=open-settings]").await;
    app.el("[data-testid=composer]").await;

    app.type_into(
        "[data-testid=composer]",
        "Show me a tiny image, then run the long operation\u{E007}",
    )
    .await;
    // The long operation's progress, on its own call, while it runs.
    let running = app
        .wait_js(
            "const p = document.querySelector('[data-testid=tool-progress]'); \
             if (!p) return null; \
             const call = p.closest('.tool')?.querySelector('[data-testid=tool-call]'); \
             return { tool: call?.dataset.tool ?? null, headline: call?.querySelector('[data-testid=tool-headline]')?.textContent ?? null, max: p.max, value: p.value }",
            "the long operation's progress bar",
        )
        .await;
    assert_eq!(
        running["tool"],
        json!("mcp__everything__trigger-long-running-operation"),
        "{running}"
    );
    assert_eq!(
        running["headline"],
        json!("Calling trigger-long-running-operation on everything…"),
        "{running}"
    );
    assert_eq!(running["max"].as_f64(), Some(8.0), "{running}");
    app.shot("mcp-call-progress").await;

    // Both calls end; the bar goes with the result.
    app.wait_text("[data-testid=transcript]", "Both calls are done.")
        .await;
    app.wait_gone("[data-testid=tool-progress]").await;
    let headlines = app
        .js("return [...document.querySelectorAll('[data-testid=tool-headline]')].map(h => h.textContent)")
        .await;
    assert_eq!(
        headlines,
        json!([
            "Called get-tiny-image on everything",
            "Called trigger-long-running-operation on everything"
        ])
    );
    // The image the first call returned, inline and loaded.
    let image = app
        .wait_js(
            "const i = document.querySelector('[data-testid=tool-image]'); \
             return i && i.complete && i.naturalWidth > 0 ? { width: i.naturalWidth, alt: i.alt, src: i.getAttribute('src').slice(0, 22) } : null",
            "the returned image to load",
        )
        .await;
    assert_eq!(
        image["alt"],
        json!("image returned by get-tiny-image"),
        "{image}"
    );
    assert_eq!(image["src"], json!("data:image/png;base64,"), "{image}");
    app.js("document.querySelector('[data-testid=tool-image]').scrollIntoView({block: 'center'}); return true")
        .await;
    app.shot("mcp-call-image").await;

    // The server's prompts complete as commands; one sent becomes the user's message.
    app.type_into("[data-testid=composer]", "/mcp__everything__sim")
        .await;
    app.wait_text(
        "[data-testid=completion]",
        "/mcp__everything__simple-prompt",
    )
    .await;
    app.shot("mcp-prompt-completion").await;
    app.press(Key::Tab).await;
    app.press(Key::Enter).await;
    app.wait_text(
        "[data-testid=transcript]",
        "This is a simple prompt without arguments.",
    )
    .await;
    app.close().await;
}

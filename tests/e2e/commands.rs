//! Slash commands in the real window (issue 37): each has a result of the app's own. `/help`
//! opens the sheet of shortcuts and commands, `/rewind` the list of points named by message
//! and time, `/goal` the Goal tab, `/mcp` Settings on the tool servers; `/plan on`,
//! `/plan off` and `/plan status` come back as a line in words. None shows a `waymark …`
//! command line, an internal id, a sha256 or a path in the data folder, and no toast repeats
//! what the transcript says.

use super::*;
use fantoccini::key::Key;

/// Asserts that the window shows no terminal text and no toast, after `what`.
async fn shows_words_only(app: &App, what: &str) {
    let (found, text) = app.internals_shown().await;
    assert!(
        found.is_empty(),
        "after {what} the window shows {found:?}:\n{text}"
    );
    assert!(
        !app.exists("[data-testid=toast]").await,
        "after {what} a toast shows: {}",
        app.text("[data-testid=toast]").await
    );
}

/// Types `text` in the composer and sends it with Enter.
async fn command(app: &App, text: &str) {
    app.type_into("[data-testid=composer]", &format!("{text}\u{E007}"))
        .await;
}

/// Waits until the newest line of the transcript in words starts with `start`.
async fn newest_chip(app: &App, start: &str) -> String {
    let found = app
        .wait_js(
            &format!(
                "const c = [...document.querySelectorAll('[data-testid=chip]')].at(-1); \
                 return c && c.textContent.startsWith({start:?}) ? c.textContent : null"
            ),
            &format!("a line starting {start:?} in the transcript"),
        )
        .await;
    found.as_str().unwrap_or_default().to_string()
}

/// Every command once in session `id`, the window at `size` (`1440x900`, `900x600`; a
/// `narrow` one has the side panel as a drawer): each result checked and shot.
async fn each_command(app: &App, desk: &Desk, id: &str, size: &str, narrow: bool) {
    // `/help`: the sheet, the commands listed under the shortcuts.
    command(app, "/help").await;
    app.wait_text("[data-testid=shortcuts-commands]", "/rewind")
        .await;
    app.wait_text("[data-testid=shortcuts]", "Ctrl+K").await;
    shows_words_only(app, "/help").await;
    app.shot(&format!("commands-1-help-{size}")).await;
    app.press(Key::Escape).await;
    app.wait_gone("[data-testid=shortcuts]").await;

    // `/rewind`: the points by message and time, newest first; one opens its preview.
    command(app, "/rewind").await;
    app.el("[data-testid=rewind-list]").await;
    let points = app
        .wait_js(
            "const p = [...document.querySelectorAll('[data-testid=rewind-point]')].map(b => b.innerText.replace(/\\s+/g, ' ')); \
             return p.length === 2 ? p : null",
            "two points to rewind to",
        )
        .await;
    let points: Vec<String> = serde_json::from_value(points).unwrap();
    assert!(
        points[0].starts_with("Before your message “Now make it say good morning”"),
        "{points:?}"
    );
    assert!(
        points[1].starts_with("Before your message “Add a greeting to the script”"),
        "{points:?}"
    );
    shows_words_only(app, "/rewind").await;
    app.shot(&format!("commands-2-rewind-list-{size}")).await;
    app.click("[data-testid=rewind-list] li:last-child [data-testid=rewind-point]")
        .await;
    app.el("[data-testid=rewind-cancel]").await;
    let title = app.text("[data-testid=rewind-title]").await;
    assert_eq!(
        title,
        "Rewind to before your message “Add a greeting to the script”?"
    );
    shows_words_only(app, "a point of /rewind").await;
    app.shot(&format!("commands-3-rewind-preview-{size}")).await;
    app.click("[data-testid=rewind-cancel]").await;
    app.wait_gone("[data-testid=rewind-dialog]").await;

    // `/goal` alone: the Goal tab.
    command(app, "/goal").await;
    app.el("[data-testid=tab-goal][aria-selected=true]").await;
    shows_words_only(app, "/goal").await;
    app.shot(&format!("commands-4-goal-tab-{size}")).await;
    if narrow {
        // Escape closes the drawer it opened (it covers the header's Details button).
        app.press(Key::Escape).await;
        app.wait_js(
            "return document.querySelector('[data-testid=side-panel]')?.hidden || null",
            "the drawer to close",
        )
        .await;
    }

    // `/plan on` (after `/plan off`, on the second round) and `/plan status`: a line in words.
    if narrow {
        command(app, "/plan off").await;
        newest_chip(app, "Plan mode is off:").await;
        shows_words_only(app, "/plan off").await;
    }
    command(app, "/plan on").await;
    let on = newest_chip(app, "Plan mode is on:").await;
    assert!(on.contains("planned, not implemented"), "{on}");
    shows_words_only(app, "/plan on").await;
    app.shot(&format!("commands-5-plan-on-{size}")).await;
    command(app, "/plan status").await;
    newest_chip(app, "Plan mode is on;").await;
    shows_words_only(app, "/plan status").await;
    app.shot(&format!("commands-6-plan-status-{size}")).await;

    // `/mcp`: Settings, on the tool servers.
    command(app, "/mcp").await;
    app.wait_js(
        "return document.activeElement?.dataset.testid === 'settings-tool-servers' || null",
        "Settings on the tool servers",
    )
    .await;
    shows_words_only(app, "/mcp").await;
    app.shot(&format!("commands-7-mcp-{size}")).await;
    app.click("[data-testid=open-settings]").await;
    app.el("[data-testid=composer]").await;

    // Nothing of it reached the model: the session still has its two turns.
    let out = desk.cli(&["show", "--session", id, "--json"]);
    succeeded(&out);
    let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(show["turns"], 2, "after the commands at {size}");
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_commands_answer_in_the_window_in_words() {
    let desk = Desk::start();
    let ws = workspace(&desk, "commands");
    let first = desk.exec(&ws, &script("chat.json"), &["Add a greeting to the script"]);
    succeeded(&first);
    let id = session_of(&first);
    succeeded(&desk.cli(&[
        "exec",
        "--json",
        "--session",
        &id,
        "Now make it say good morning",
    ]));

    let app = desk.launch().await;
    app.open_session(&id).await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=assistant-message]').length === 2 || null",
        "the two replies",
    )
    .await;
    desk.resize(&app, 1440, 900).await;
    each_command(&app, &desk, &id, "1440x900", false).await;
    // The same in a small window: the side panel is a drawer.
    desk.resize(&app, 900, 600).await;
    each_command(&app, &desk, &id, "900x600", true).await;
    app.close().await;
}

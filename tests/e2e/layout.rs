//! The layout on a laptop screen: both side columns close and open (buttons, Ctrl+B and
//! Ctrl+J) and keep that across a restart, and below 1100 px the side panel is a drawer
//! over the transcript, which keeps at least 480 px at 900×600.

use super::*;
use fantoccini::key::Key;

/// The width of the first element `css` matches, 0 when it is not shown.
fn width(css: &str) -> String {
    format!(
        "const e = document.querySelector('{css}'); \
         return e && e.offsetParent !== null ? Math.round(e.getBoundingClientRect().width) : 0"
    )
}

async fn width_of(app: &App, css: &str) -> i64 {
    app.js(&width(css)).await.as_i64().unwrap()
}

/// Waits until the width of `css` satisfies `test` (written in JS over `w`); returns it.
async fn wait_width(app: &App, css: &str, test: &str, what: &str) -> i64 {
    // Wrapped: a width of 0 would read as "not yet" to the wait.
    let got = app
        .wait_js(
            &format!(
                "const w = (() => {{ {} }})(); return ({test}) ? [w] : null",
                width(css)
            ),
            what,
        )
        .await;
    got[0].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn side_columns_collapse_and_a_narrow_window_keeps_the_transcript_wide() {
    let desk = Desk::start();
    let ws = workspace(&desk, "layout");
    succeeded(&desk.exec(&ws, &script("chat.json"), &["Hi"]));
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    let transcript = "[data-testid=transcript]";
    let wide = wait_width(&app, transcript, "w > 0", "the transcript").await;
    assert!(width_of(&app, "[data-testid=sidebar]").await > 0);
    assert!(width_of(&app, "[data-testid=side-panel]").await > 0);
    app.shot("layout-1-both").await;

    // `?` lists the shortcuts (outside a text field); Escape closes the list.
    app.js("document.activeElement?.blur(); return true").await;
    app.press_char('?').await;
    app.wait_text("[data-testid=shortcuts]", "Ctrl+K").await;
    app.shot("layout-1b-shortcuts").await;
    app.press(Key::Escape).await;
    app.wait_gone("[data-testid=shortcuts]").await;
    // Ctrl+K switches session by name.
    app.chord(Key::Control, 'k').await;
    app.el("[data-testid=quick-picker-input]").await;
    app.type_more("[data-testid=quick-picker-input]", "Hi\u{E007}")
        .await;
    app.wait_gone("[data-testid=quick-picker]").await;

    // Ctrl+B closes the session list: the transcript takes its width.
    app.chord(Key::Control, 'b').await;
    let without_list = wait_width(
        &app,
        transcript,
        &format!("w > {wide}"),
        "the list to close",
    )
    .await;
    assert_eq!(width_of(&app, "[data-testid=sidebar]").await, 0);
    // Ctrl+J closes the side panel too; its button brings it back.
    app.chord(Key::Control, 'j').await;
    wait_width(
        &app,
        transcript,
        &format!("w > {without_list}"),
        "the panel to close",
    )
    .await;
    assert_eq!(width_of(&app, "[data-testid=side-panel]").await, 0);
    app.shot("layout-2-both-closed").await;
    app.click("[data-testid=toggle-right]").await;
    wait_width(
        &app,
        "[data-testid=side-panel]",
        "w > 0",
        "the panel to open",
    )
    .await;

    // Kept across a restart: the list stays closed, the panel open.
    let app = desk.restart(app, || {}).await;
    app.el("[data-testid=session].current").await;
    wait_width(
        &app,
        "[data-testid=side-panel]",
        "w > 0",
        "the panel after the restart",
    )
    .await;
    assert_eq!(width_of(&app, "[data-testid=sidebar]").await, 0);
    app.click("[data-testid=toggle-left]").await;
    wait_width(&app, "[data-testid=sidebar]", "w > 0", "the list to open").await;

    // The splitters still resize both columns (a drag with the keyboard: arrow keys).
    let left = width_of(&app, "[data-testid=sidebar]").await;
    app.js("document.querySelector('[data-testid=resize-left]').focus(); return true")
        .await;
    app.press(Key::Right).await;
    wait_width(
        &app,
        "[data-testid=sidebar]",
        &format!("w > {left}"),
        "the list to widen",
    )
    .await;

    // 900×600, as a window manager resizes it: the side panel becomes a closed drawer and
    // the transcript keeps 480 px or more.
    let window = desk.xdotool(&["search", "--onlyvisible", "--name", "^Waymark$"]);
    desk.xdotool(&["windowsize", &window, "900", "600"]);
    app.wait_js(
        "return window.innerWidth <= 900 || null",
        "the window to narrow",
    )
    .await;
    let narrow = wait_width(&app, transcript, "w >= 480", "the transcript at 900 px").await;
    assert_eq!(
        width_of(&app, "[data-testid=side-panel]").await,
        0,
        "the drawer starts closed"
    );
    app.shot("layout-3-narrow").await;
    // Ctrl+J opens the drawer over the transcript, which keeps its width; Escape closes it.
    app.chord(Key::Control, 'j').await;
    wait_width(
        &app,
        "[data-testid=side-panel]",
        "w > 0",
        "the drawer to open",
    )
    .await;
    assert_eq!(width_of(&app, transcript).await, narrow);
    app.shot("layout-4-drawer").await;
    app.press(Key::Escape).await;
    wait_width(
        &app,
        "[data-testid=side-panel]",
        "w === 0",
        "the drawer to close",
    )
    .await;
    app.close().await;
}

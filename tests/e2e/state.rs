//! The window's own state across a restart: a comment draft, a panel's width and the open
//! session come back, kept in `ui-state.json` in the data folder (not in the webview's local
//! storage).

use super::*;
use fantoccini::key::Key;

/// The side panel's width on screen.
async fn right_width(app: &App) -> f64 {
    app.js("return document.querySelector('aside.right').getBoundingClientRect().width")
        .await
        .as_f64()
        .unwrap()
}

/// A chat session started with the CLI; its id.
fn chat_session(desk: &Desk, ws: &str) -> String {
    let ws = workspace(desk, ws);
    let out = desk.exec(
        &ws,
        &script("chat.json"),
        &["--permission", "auto", "Hello"],
    );
    succeeded(&out);
    crate::harness::session_of(&out)
}

/// Waits until the store's file holds what `check` looks for; its content.
async fn stored(
    desk: &Desk,
    what: &str,
    check: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let path = desk.ui_state_file();
    let start = Instant::now();
    loop {
        let v: serde_json::Value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        if check(&v) {
            return v;
        }
        assert!(
            start.elapsed() < harness::WAIT,
            "{} never held {what}: {v}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draft_a_panel_width_and_the_open_session_come_back_after_a_restart() {
    let desk = Desk::start();
    // The session under review, then a newer one: at start the app opens the newest.
    let (kept, _) = planned_session(&desk, "kept", "plan_wait.json", "ask");
    let newer = chat_session(&desk, "newer");
    let app = desk.launch().await;
    app.el(&format!("[data-session-id='{newer}'].current"))
        .await;
    app.open_session(&kept).await;
    app.click("[data-testid=tab-plan]").await;

    // A comment on the plan's second line, left as a draft.
    app.click("[data-testid=comment-mode]").await;
    app.wait_text("[data-testid=plan-lines]", "waits for review")
        .await;
    app.click("[data-testid=line-2]").await;
    app.type_into("[data-testid=comment-text]", "Kept across a restart.")
        .await;
    app.click("[data-testid=comment-add]").await;
    app.wait_text("[data-testid=comment-drafts]", "Kept across a restart.")
        .await;

    // The side panel four steps (64 px) narrower, moved from its edge with the keyboard (the
    // test window is too narrow to widen it: the center keeps its minimum).
    let before = right_width(&app).await;
    app.js("document.querySelector('[data-testid=resize-right]').focus(); return null")
        .await;
    assert_eq!(
        app.js("return document.activeElement?.dataset?.testid ?? null")
            .await,
        "resize-right",
        "the splitter takes the focus"
    );
    for _ in 0..4 {
        app.press(Key::Right).await;
    }
    let resized = right_width(&app).await;
    assert_eq!(resized, before - 64.0, "the panel did not narrow by 64 px");
    app.shot("state-1-before-restart").await;

    // All three are in the store's file before the app goes, and none in local storage.
    let kept_file = stored(&desk, "the draft, the width and the session", |v| {
        v["comment-drafts"]
            .to_string()
            .contains("Kept across a restart.")
            && v["panel-widths"]["right"].as_f64() == Some(resized)
            && v["last-session"] == kept.as_str()
    })
    .await;
    let local = app
        .js("return Object.keys(localStorage).filter(k => k.startsWith('waymark.')).length")
        .await;
    assert_eq!(
        local, 0,
        "window state in local storage; the store holds {kept_file}"
    );

    // While the app is closed the other session moves on, so it is the newest at start.
    let app = desk
        .restart(app, || {
            succeeded(&desk.cli(&["exec", "--json", "--session", &newer, "Once more."]));
        })
        .await;

    // The session open before the restart opens again, without a click.
    app.wait_js(
        &format!(
            "return document.querySelector(\"[data-session-id='{kept}']\")?.classList.contains('current')"
        ),
        "the session open before the restart to open again",
    )
    .await;
    app.wait_js(
        &format!("return document.querySelector('aside.right')?.getBoundingClientRect().width === {resized}"),
        "the side panel's width to come back",
    )
    .await;
    app.click("[data-testid=tab-plan]").await;
    app.click("[data-testid=comment-mode]").await;
    app.wait_text("[data-testid=comment-drafts]", "Kept across a restart.")
        .await;
    app.shot("state-2-after-restart").await;

    // The webview reaches that one file only: a store plugin's commands (an earlier build
    // loaded one; this guards against its return) open nothing at a path of its choosing.
    let elsewhere = desk.dir.path().join("elsewhere.json");
    let refused = app
        .js_async(&format!(
            "const done = arguments[arguments.length - 1]; \
             window.__TAURI_INTERNALS__.invoke('plugin:store|load', {{ path: {:?} }}) \
               .then(() => done('allowed'), e => done('refused: ' + e));",
            elsewhere.display().to_string()
        ))
        .await;
    assert!(
        refused.as_str().unwrap().starts_with("refused"),
        "{refused}"
    );
    assert!(!elsewhere.exists());
    // Nor any other store command, nor a key the window does not keep.
    for (cmd, args) in [
        ("plugin:store|get_store", r#"{ path: "ui-state.json" }"#),
        (
            "plugin:store|set",
            r#"{ rid: 0, key: "last-session", value: "x" }"#,
        ),
        ("ui_state_set", r#"{ key: "../notes", value: "x" }"#),
    ] {
        let answer = app
            .js_async(&format!(
                "const done = arguments[arguments.length - 1]; \
                 window.__TAURI_INTERNALS__.invoke('{cmd}', {args}) \
                   .then(() => done('allowed'), e => done('refused: ' + JSON.stringify(e)));"
            ))
            .await;
        // Refused for what the call is (no such plugin, not allowed), never for its
        // arguments (a resource id that does not exist would be refused too).
        let answer = answer.as_str().unwrap();
        assert!(answer.starts_with("refused"), "{cmd}: {answer}");
        assert!(
            cmd.starts_with("ui_state")
                || answer.contains("not allowed")
                || answer.contains("not found"),
            "{cmd}: {answer}"
        );
    }
    let file = std::fs::read_to_string(desk.ui_state_file()).unwrap();
    assert!(!file.contains("../notes"), "{file}");
    app.close().await;
}

/// The store plugin holds the window's state but never writes its file: at exit it does
/// not write it back (in place, through a link, with the default mode), so a file removed
/// while the app runs is not brought back by the plugin, and one only ever comes from
/// Waymark's own atomic, private write.
#[tokio::test(flavor = "multi_thread")]
async fn the_store_plugin_never_writes_the_state_file_itself() {
    let desk = Desk::start();
    let id = chat_session(&desk, "plugin");
    let app = desk.launch().await;
    app.el(&format!("[data-session-id='{id}'].current")).await;
    // Opening the session is kept (`last-session`): the file exists, written by Waymark.
    let file = desk.ui_state_file();
    app.wait_js(
        &format!("return {:?} && true", file.display().to_string()),
        "the page to run",
    )
    .await;
    let start = Instant::now();
    while !file.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no state file written"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    std::fs::remove_file(&file).unwrap();
    app.quit().await;
    assert!(!file.exists(), "the plugin wrote the state file at exit");
}

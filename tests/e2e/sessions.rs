//! The session list as a daily tool: search, rename, delete (with its data), a new session
//! in the same folder (a button, Ctrl+N), and "needs you" on a session whose goal is blocked.

use super::*;
use fantoccini::key::Key;

/// The titles the list shows, in order.
async fn titles(app: &App) -> Vec<String> {
    let v = app
        .js("return [...document.querySelectorAll('[data-testid=session] .title')].map(t => t.textContent)")
        .await;
    serde_json::from_value(v).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_searched_renamed_deleted_and_started_in_the_same_folder() {
    let desk = Desk::start();
    let alpha = workspace(&desk, "alpha");
    let beta = workspace(&desk, "beta");
    for text in ["Fix the parser", "Write the docs"] {
        succeeded(&desk.exec(&alpha, &script("chat.json"), &[text]));
    }
    ended(
        &desk.exec(&beta, &script("blocked.json"), &["/goal Rename the tool"]),
        3,
    );
    // A model in the settings: new sessions start without a file dialog or a question.
    desk.write_settings(&serde_json::json!({ "model": script("chat.json") }));
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=session]').length === 3 || null",
        "three sessions listed",
    )
    .await;

    // The session whose goal is blocked says it needs the user, and why.
    let badge = app
        .wait_js(
            "const b = [...document.querySelectorAll('[data-testid=session]')].find(s => s.textContent.includes('Rename the tool'))?.querySelector('[data-testid=needs-you]'); return b ? b.title : null",
            "the blocked goal's badge",
        )
        .await;
    assert!(badge.as_str().unwrap().contains("blocked"), "{badge}");
    app.shot("sessions-1-needs-you").await;

    // Search narrows the list; clearing it brings all back.
    app.type_into("[data-testid=session-search]", "docs").await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=session]').length === 1 || null",
        "one match",
    )
    .await;
    assert_eq!(titles(&app).await, ["Write the docs"]);
    app.el("[data-testid=session-search]")
        .await
        .clear()
        .await
        .unwrap();
    app.js("document.querySelector('[data-testid=session-search]').dispatchEvent(new Event('input')); return true").await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=session]').length === 3 || null",
        "all three again",
    )
    .await;

    // Rename: ✎, a new title, Enter.
    app.js("[...document.querySelectorAll('li.item')].find(l => l.textContent.includes('Write the docs')).querySelector('[data-testid=rename]').click(); return true").await;
    let input = app.el("[data-testid=rename-input]").await;
    input.clear().await.unwrap();
    app.type_into("[data-testid=rename-input]", "Docs pass\u{E007}")
        .await;
    app.wait_js(
        "return [...document.querySelectorAll('[data-testid=session] .title')].some(t => t.textContent === 'Docs pass') || null",
        "the new title",
    )
    .await;
    app.shot("sessions-2-renamed").await;

    // Delete, after a confirmation: gone from the list, its folder gone.
    let id = app
        .js("return [...document.querySelectorAll('[data-testid=session]')].find(s => s.textContent.includes('Fix the parser')).dataset.sessionId")
        .await;
    let id = id.as_str().unwrap().to_string();
    let folder = desk.data_dir().join("sessions").join(&id);
    assert!(folder.exists());
    app.js("[...document.querySelectorAll('li.item')].find(l => l.textContent.includes('Fix the parser')).querySelector('[data-testid=delete]').click(); return true").await;
    app.el("[data-testid=delete-confirm]").await;
    app.shot("sessions-3-confirm-delete").await;
    app.click("[data-testid=delete-yes]").await;
    app.wait_js(
        &format!("return document.querySelector(\"[data-session-id='{id}']\") ? null : true"),
        "the deleted session to go",
    )
    .await;
    assert!(!folder.exists(), "the session's folder was left");
    let listed = desk.cli(&["sessions", "--json"]);
    assert!(!String::from_utf8_lossy(&listed.stdout).contains(&id));

    // A new session in the same folder: the ＋ of its heading, then Ctrl+N.
    let before = titles(&app).await.len();
    app.js("[...document.querySelectorAll('.ws')].find(w => w.textContent.includes('alpha')).querySelector('[data-testid=new-here]').click(); return true").await;
    app.wait_js(
        &format!(
            "return document.querySelectorAll('[data-testid=session]').length === {} || null",
            before + 1
        ),
        "a new session in alpha",
    )
    .await;
    app.el("[data-testid=composer]").await;
    app.wait_js(
        "return document.activeElement?.dataset.testid === 'composer' || null",
        "the caret in the new session's composer",
    )
    .await;
    let blank = app
        .js("return document.querySelector('[data-testid=session].current').dataset.sessionId")
        .await;
    let blank = blank.as_str().unwrap().to_string();
    app.chord(Key::Control, 'n').await;
    // Another new session; the blank one it left (no title, nothing sent) is not kept.
    app.wait_js(
        &format!(
            "const cur = document.querySelector('[data-testid=session].current');              return (cur && cur.dataset.sessionId !== '{blank}'                && !document.querySelector(\"[data-session-id='{blank}']\")                && document.querySelectorAll('[data-testid=session]').length === {}) || null",
            before + 1
        ),
        "another new session (Ctrl+N), the blank one left behind gone",
    )
    .await;
    app.wait_js(
        "return document.querySelector('[data-testid=header-folder]')?.textContent === 'alpha' || null",
        "the header to name the folder",
    )
    .await;
    app.shot("sessions-4-new-here").await;
    app.close().await;
}

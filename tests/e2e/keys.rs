//! The window's keys as a user presses them: Escape stops a running turn, ↑ in the empty
//! composer recalls the message sent last, `?` lists every key, and A approves a plan under
//! review.

use super::*;
use fantoccini::key::Key;

#[tokio::test(flavor = "multi_thread")]
async fn escape_stops_the_turn_up_recalls_the_prompt_and_question_mark_lists_the_keys() {
    let desk = Desk::start();
    let ws = workspace(&desk, "keys");
    let out = desk.exec(&ws, &script("stop.json"), &["--permission", "auto", "Hi"]);
    succeeded(&out);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;

    // The reply runs `sleep 30`: Escape in the composer stops it.
    app.type_into("[data-testid=composer]", "Run the long command\u{E007}")
        .await;
    app.wait_text("[data-testid=transcript]", "Running a long command.")
        .await;
    app.el("[data-testid=stop]").await;
    app.press(Key::Escape).await;
    app.wait_text("[data-testid=transcript]", "Turn ended: aborted")
        .await;
    app.wait_gone("[data-testid=stop]").await;
    app.shot("keys-1-stopped-by-escape").await;
    assert!(
        !app.text("[data-testid=transcript]")
            .await
            .contains("This reply never comes")
    );

    // ↑ in the empty composer: the message sent last, then the one before; ↓ back down.
    assert_eq!(app.composer_value().await, "");
    app.press(Key::Up).await;
    app.wait_js(
        "return document.querySelector('[data-testid=composer]').value === 'Run the long command' || null",
        "the last message recalled",
    )
    .await;
    app.press(Key::Up).await;
    app.wait_js(
        "return document.querySelector('[data-testid=composer]').value === 'Hi' || null",
        "the message before it recalled",
    )
    .await;
    app.press(Key::Down).await;
    app.press(Key::Down).await;
    app.wait_js(
        "return document.querySelector('[data-testid=composer]').value === '' || null",
        "the composer empty again",
    )
    .await;

    // `?` outside a text field: the sheet, Escape in it; Escape closes it.
    app.js("document.activeElement?.blur(); return true").await;
    app.press_char('?').await;
    let sheet = app
        .wait_text("[data-testid=shortcuts]", "Stop the running turn")
        .await;
    for key in ["Esc", "Ctrl+N", "Shift+Tab", "↑"] {
        assert!(sheet.contains(key), "the sheet lacks {key}: {sheet}");
    }
    app.shot("keys-2-sheet").await;
    app.press(Key::Escape).await;
    app.wait_gone("[data-testid=shortcuts]").await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_under_review_is_approved_with_its_key() {
    let desk = Desk::start();
    let (app, _, ws) = on_plan_tab(&desk, "approve-key", "plan_approve.json", "auto-edit").await;
    app.wait_text("[data-testid=plan-doc]", "Write DONE.txt")
        .await;
    // The button shows its key; screen readers are told it in aria-keyshortcuts.
    let shown = app
        .js(
            "const b = document.querySelector('[data-testid=approve]'); \
             return [b.querySelector('kbd')?.textContent, b.getAttribute('aria-keyshortcuts')]",
        )
        .await;
    assert_eq!(shown, serde_json::json!(["A", "A"]));
    app.shot("keys-3-plan-keys").await;

    // Typed in the composer, `a` is a letter of the message.
    app.click("[data-testid=composer]").await;
    app.press_char('a').await;
    app.wait_js(
        "return document.querySelector('[data-testid=composer]').value === 'a' || null",
        "the letter in the composer",
    )
    .await;
    assert!(app.exists("[data-testid=approval-bar]").await);
    app.el("[data-testid=composer]")
        .await
        .clear()
        .await
        .unwrap();

    // Outside a text field, it approves.
    app.js("document.activeElement?.blur(); return true").await;
    app.press_char('a').await;
    app.wait_gone("[data-testid=approval-bar]").await;
    app.wait_text(
        "[data-testid=transcript]",
        "Implemented: DONE.txt is written.",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(ws.join("DONE.txt")).unwrap(),
        "implemented\n"
    );
    app.close().await;
}

/// Shift+Tab in and out of plan mode (PM-4, PM-21): armed outside plan mode, the next message
/// enters Plan; armed in plan mode, the next message leaves it, implementing nothing.
#[tokio::test(flavor = "multi_thread")]
async fn shift_tab_enters_plan_mode_and_in_plan_mode_leaves_it() {
    let desk = Desk::start();
    let ws = workspace(&desk, "shift-tab");
    let out = desk.exec(&ws, &script("chat.json"), &["Hi"]);
    succeeded(&out);
    let id = session_of(&out);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.send_with_plan_chip("Look around first").await;
    app.wait_text(
        "[data-testid=composer-dock]",
        "Plan mode · read-only investigation",
    )
    .await;
    app.wait_text("[data-testid=composer-dock]", "Shift+Tab: leave Plan")
        .await;
    app.shot("keys-4-plan-mode").await;
    // Armed in plan mode: the chip says the next message leaves; again cancels.
    app.el("[data-testid=composer]")
        .await
        .click()
        .await
        .unwrap();
    app.shift_tab().await;
    app.wait_text("[data-testid=plan-chip]", "Next message leaves Plan")
        .await;
    app.shift_tab().await;
    app.wait_gone("[data-testid=plan-chip]").await;
    app.shift_tab().await;
    app.wait_text("[data-testid=plan-chip]", "Next message leaves Plan")
        .await;
    app.shot("keys-5-leaves-plan-armed").await;
    app.type_into("[data-testid=composer]", "Never mind, just answer\u{E007}")
        .await;
    app.wait_text("[data-testid=composer-dock]", "Shift+Tab: plan first")
        .await;
    app.shot("keys-6-left-plan").await;
    assert_eq!(listed_session(&desk, &id)["interaction_mode"], "default");
    app.quit().await;
}

//! The composer: Enter sends what is typed (a whole command too), Tab takes a completion,
//! Escape closes the list and keeps the draft, `@` completes the workspace's files, and a
//! failed turn offers Retry and Edit & resend.

use super::*;
use fantoccini::key::Key;

#[tokio::test(flavor = "multi_thread")]
async fn enter_escape_mentions_retry_and_edit_and_resend() {
    let desk = Desk::start();
    let ws = workspace(&desk, "composer");
    // The first reply fails: the session opens on a failed turn.
    let _ = desk.exec(&ws, &script("composer.json"), &["Fix the greeting"]);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;

    // Retry sends the failed message again.
    app.el("[data-testid=retry-bar]").await;
    app.shot("composer-3-failed").await;
    app.click("[data-testid=retry]").await;
    app.wait_text("[data-testid=transcript]", "Second try worked.")
        .await;
    app.wait_gone("[data-testid=retry-bar]").await;

    // Escape closes the completion list and keeps what was typed.
    app.type_into("[data-testid=composer]", "/go").await;
    app.el("[data-testid=completion]").await;
    app.press(Key::Escape).await;
    app.wait_gone("[data-testid=completion]").await;
    assert_eq!(app.composer_value().await, "/go");
    // Typing opens it again; Enter on a whole command sends it, never a completion of it.
    app.type_more("[data-testid=composer]", "al").await;
    app.el("[data-testid=completion]").await;
    app.press(Key::Enter).await;
    app.wait_js(
        "return document.querySelector('[data-testid=composer]').value === '' || null",
        "/goal to be sent as typed",
    )
    .await;
    assert!(
        !app.text("[data-testid=transcript]")
            .await
            .contains("Goal paused"),
        "Enter completed /goal to another command"
    );

    // `@` completes a file of the workspace; Enter takes it.
    app.type_into("[data-testid=composer]", "Look at @gre")
        .await;
    app.wait_text("[data-testid=completion]", "@src/greet.sh")
        .await;
    app.shot("composer-4-mention").await;
    app.press(Key::Enter).await;
    app.wait_js(
        "return document.querySelector('[data-testid=composer]').value === 'Look at @src/greet.sh ' || null",
        "the mention to be taken",
    )
    .await;
    app.el("[data-testid=composer]")
        .await
        .clear()
        .await
        .unwrap();

    // A second failure: Edit & resend puts the message back to change.
    app.type_into("[data-testid=composer]", "Break it again\u{E007}")
        .await;
    app.el("[data-testid=edit-resend]").await;
    app.click("[data-testid=edit-resend]").await;
    app.wait_js(
        "return document.querySelector('[data-testid=composer]').value === 'Break it again' || null",
        "the message back in the composer",
    )
    .await;
    app.type_more("[data-testid=composer]", ", gently\u{E007}")
        .await;
    app.wait_text("[data-testid=transcript]", "The edited message worked.")
        .await;
    assert!(
        app.text("[data-testid=transcript]")
            .await
            .contains("Break it again, gently")
    );
    app.shot("composer-5-resent").await;
    app.close().await;
}

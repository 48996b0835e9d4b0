//! "Help me write this goal" (G-48): `/goal draft <rough words>` in the composer drafts an
//! objective, checks and a budget in the Goal tab; nothing starts until the user sets it.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_goal_drafted_from_rough_words_is_edited_then_set() {
    let desk = Desk::start();
    let ws = workspace(&desk, "draft");
    let out = desk.exec(&ws, &script("chat.json"), &["Hello"]);
    assert!(out.status.success());
    let id = session_of(&out);
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.type_into(
        "[data-testid=composer]",
        "/goal draft make the greeting friendlier",
    )
    .await;
    app.click("[data-testid=send]").await;
    // The offline model drafts from the words; the Goal tab shows it for editing.
    app.el("[data-testid=goal-draft-form]").await;
    let objective = app
        .js("return document.querySelector('[data-testid=goal-draft-objective]').value")
        .await;
    assert_eq!(objective, "make the greeting friendlier");
    assert!(
        app.text("[data-testid=goal-draft-reasoning]")
            .await
            .contains("Why this budget")
    );
    // Nothing is set yet.
    assert!(!app.exists("[data-testid=goal-objective]").await);
    app.shot("draft-1-drafted").await;
    app.type_into("[data-testid=goal-draft-budget]", "turns=3")
        .await;
    app.click("[data-testid=goal-draft-set]").await;
    app.wait_text(
        "[data-testid=goal-objective]",
        "make the greeting friendlier",
    )
    .await;
    app.wait_text("[data-testid=goal-criteria]", "project's tests pass")
        .await;
    app.wait_gone("[data-testid=goal-draft-form]").await;
    app.shot("draft-2-set").await;
    app.quit().await;
}

//! The goal queue in the window (G-46): goals are queued from the Goal tab, reordered, and
//! one is started now over the goal in hand; the Goals board shows the line too.

use super::*;

/// The objectives of the queue on the Goal tab, in line order.
const LINE: &str = "return [...document.querySelectorAll('[data-testid=goal-queue] [data-testid=queued-text]')].map((e) => e.textContent).join(' | ')";

#[tokio::test(flavor = "multi_thread")]
async fn the_goal_queue_is_added_to_reordered_and_started_from_the_goal_tab() {
    let desk = Desk::start();
    let ws = workspace(&desk, "queue");
    // A goal that blocks on its first turn: it stays unfinished while the queue is built.
    let out = desk.exec(&ws, &script("blocked.json"), &["/goal Rename the tool"]);
    ended(&out, 3);
    let id = session_of(&out);
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-status]", "blocked").await;
    app.wait_text("[data-testid=goal-queue]", "Nothing queued")
        .await;

    for text in ["Write the docs", "Tag the release turns=3"] {
        app.type_into("[data-testid=queue-new]", text).await;
        app.click("[data-testid=queue-add]").await;
    }
    app.wait_js(
        &format!("{LINE} === 'Write the docs | Tag the release' || null"),
        "both goals in line",
    )
    .await;
    assert!(
        app.text("[data-testid=goal-queue]")
            .await
            .contains("turns=3")
    );
    // Nothing started over the blocked goal.
    assert_eq!(
        app.text("[data-testid=goal-objective]").await,
        "Rename the tool"
    );
    app.js("document.querySelector('[data-testid=goal-queue]').scrollIntoView({block: 'center'})")
        .await;
    app.shot("queue-1-two-queued").await;

    // The second moves up to the head of the line.
    app.click("[data-testid=queued-goal]:nth-child(2) [data-testid=queued-up]")
        .await;
    app.wait_js(
        &format!("{LINE} === 'Tag the release | Write the docs' || null"),
        "the line reordered",
    )
    .await;
    // The board shows the same line under the session's row.
    app.click("[data-testid=open-board]").await;
    app.wait_text("[data-testid=board-queue]", "Tag the release")
        .await;
    app.shot("queue-2-on-the-board").await;
    app.click("[data-testid=open-board]").await;
    app.click("[data-testid=tab-goal]").await;

    // Start now over the blocked goal asks first, then replaces it.
    desk.resize(&app, 900, 600).await;
    app.click("[data-testid=toggle-right]").await;
    app.click("[data-testid=tab-goal]").await;
    app.click("[data-testid=queued-goal]:nth-child(1) [data-testid=queued-start]")
        .await;
    app.wait_text(
        "[data-testid=queued-start-confirm]",
        "current goal is cleared",
    )
    .await;
    app.js("document.querySelector('[data-testid=queued-start-confirm]').scrollIntoView({block: 'center'})")
        .await;
    app.shot("queue-3-start-now-asks-900x600").await;
    app.click("[data-testid=queued-start-yes]").await;
    app.wait_text("[data-testid=goal-objective]", "Tag the release")
        .await;
    app.wait_js(
        &format!("{LINE} === 'Write the docs' || null"),
        "one goal left in line",
    )
    .await;
    app.shot("queue-4-started").await;
    // The app holds the same line.
    let listed = desk.cli(&["goal", "queue", "list", "--session", &id]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(text.trim(), "1. Write the docs", "{text}");
    app.quit().await;
}

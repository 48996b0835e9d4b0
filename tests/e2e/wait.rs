//! A goal that waits (G-47) in the window: the Goal tab counts down to its time and says no
//! model call happens; the Goals board shows the same; "Wake now" ends the wait and the goal
//! carries on to completion.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_goal_counts_down_and_wakes_now() {
    let desk = Desk::start();
    let ws = workspace(&desk, "wait");
    // `exec` does not wait with it (a zero wait limit): it exits 7, the goal waiting.
    let out = desk.exec(
        &ws,
        &script("wait.json"),
        &[
            "--permission",
            "auto",
            "--wait-limit",
            "0",
            "/goal Ship the release",
        ],
    );
    ended(&out, 7);
    let id = session_of(&out);
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.click("[data-testid=tab-goal]").await;
    let text = app
        .wait_text(
            "[data-testid=goal-wait-text]",
            "the nightly build runs within the hour",
        )
        .await;
    assert!(text.contains("Waiting until"), "{text}");
    // The countdown moves.
    let left = |v: serde_json::Value| v.as_str().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    let first = left(
        app.js("return document.querySelector('[data-testid=goal-wait]').dataset.left")
            .await,
    );
    assert!((3000..=3600).contains(&first), "{first}");
    app.wait_js(
        &format!("return Number(document.querySelector('[data-testid=goal-wait]').dataset.left) < {first} || null"),
        "the countdown to move",
    )
    .await;
    app.shot("wait-1-goal-tab").await;
    // The board shows the wait too.
    app.click("[data-testid=open-board]").await;
    app.wait_text("[data-testid=board-wait]", "Waiting until")
        .await;
    app.shot("wait-2-board").await;
    app.click("[data-testid=open-board]").await;
    app.click("[data-testid=tab-goal]").await;
    desk.resize(&app, 900, 600).await;
    app.click("[data-testid=toggle-right]").await;
    app.click("[data-testid=tab-goal]").await;
    app.js("document.querySelector('[data-testid=goal-wait]').scrollIntoView({block: 'center'})")
        .await;
    app.shot("wait-3-goal-tab-900x600").await;

    app.click("[data-testid=goal-wake-now]").await;
    app.wait_text("[data-testid=goal-status]", "complete").await;
    app.wait_gone("[data-testid=goal-wait]").await;
    app.wait_text("[data-testid=goal-timeline]", "Woke from its wait")
        .await;
    app.shot("wait-4-woken-and-complete").await;
    app.quit().await;
}

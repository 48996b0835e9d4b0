//! The first run without a model: the offline demo.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn first_run_demo_plans_implements_and_its_goal_ends_blocked_with_a_notification() {
    let desk = Desk::start();
    let app = desk.launch().await;
    // The user works elsewhere while the demo runs.
    let _other = desk.focus_elsewhere();
    app.start_demo().await;

    // The goal demo opens first (newest); sample its gauges while it runs.
    app.click("[data-testid=tab-goal]").await;
    let mut seen = Vec::new();
    let start = Instant::now();
    loop {
        let v = app
            .js("return [document.querySelector('[data-testid=gauge-tokens] .used')?.textContent ?? '', document.querySelector('[data-testid=goal-status]')?.textContent ?? '']")
            .await;
        let tokens = v[0].as_str().unwrap_or("").to_string();
        let status = v[1].as_str().unwrap_or("").to_string();
        if !tokens.is_empty() && seen.last() != Some(&tokens) {
            seen.push(tokens);
        }
        if status == "blocked" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "goal never blocked; gauges showed {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        seen.len() >= 3,
        "the token gauge should move during the run: {seen:?}"
    );
    app.wait_text("[data-testid=goal-reason]", "The agent says it is blocked")
        .await;
    app.wait_text("[data-testid=goal-timeline]", "blocked")
        .await;
    // The list says it needs the user, while it is open, without a reload.
    let badge = app
        .wait_js(
            "const b = document.querySelector('[data-testid=session].current [data-testid=needs-you]'); return b ? b.title : null",
            "the blocked goal's badge in the list",
        )
        .await;
    assert!(badge.as_str().unwrap().contains("blocked"), "{badge}");
    app.shot("demo-1-goal-blocked").await;

    // The window is in the background (nothing focused it): the notification went over
    // D-Bus to the notification daemon, and the window shows no toast repeating it.
    desk.wait_notification("Goal blocked").await;
    // Its body carries the agent's question, so it can be answered from where the user is.
    assert!(
        desk.notifications()
            .contains("It asks: Should names containing quotes be rejected or printed as given?"),
        "{}",
        desk.notifications()
    );
    desk.screen("demo-2-notification-on-screen");
    assert!(!app.exists("[data-testid=toast]").await);

    // The agent's question is in the Goal tab, answered in place: the answer reaches the
    // transcript as the user's message and the question goes.
    app.wait_text(
        "[data-testid=goal-question]",
        "rejected or printed as given",
    )
    .await;
    // An answer that is neither choice: the agent asks again instead of guessing.
    app.type_into("[data-testid=goal-reply]", "You decide.")
        .await;
    app.click("[data-testid=goal-reply-send]").await;
    app.wait_text("[data-testid=goal-question]", "could not tell which")
        .await;
    app.type_into("[data-testid=goal-reply]", "Print them as given.")
        .await;
    app.shot("demo-2b-goal-reply").await;
    app.click("[data-testid=goal-reply-send]").await;
    app.wait_text("[data-testid=transcript]", "Print them as given.")
        .await;
    app.wait_js(
        "return document.querySelector('[data-testid=goal-question]') === null",
        "the answered question to go",
    )
    .await;
    // With the answer the agent finishes, and the scripted reviewer confirms it.
    app.wait_text("[data-testid=goal-status]", "complete").await;
    app.shot("demo-2c-goal-complete-after-reply").await;

    // The plan demo: wait for its approval, approve, allow the test run, see it done.
    app.open_plan_demo().await;
    app.el("[data-testid=approval-bar]").await;
    app.wait_text("[data-testid=plan-doc]", "Risks").await;
    app.shot("demo-3-plan-review").await;
    app.click("[data-testid=approve]").await;
    app.el("[data-testid=question-dialog][data-kind=permission]")
        .await;
    app.shot("demo-4-permission-dialog").await;
    app.click("[data-testid=allow-once]").await;
    app.wait_text("[data-testid=transcript]", "the test passes")
        .await;
    app.shot("demo-5-implemented").await;
    app.close().await;
}

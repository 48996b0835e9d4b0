//! Every review path of the offline demo ends well: approve as a goal (the scripted reviewer
//! confirms it), "Not now" then "Review again" with the comment kept, revise with a comment
//! then the revised plan, and "Run the demo again" replacing the demo instead of copying it.
//! (Approve, and the reply to the blocked goal, are in `demo.rs`.)

use super::*;

/// Opens the plan demo of a first run and waits for its review.
async fn plan_demo(desk: &Desk) -> App {
    let app = desk.launch().await;
    app.start_demo().await;
    app.open_plan_demo().await;
    app.wait_text("[data-testid=approval-bar]", "v1").await;
    app
}

/// Drafts a comment on the plan's "Run the test" line.
async fn comment_on_the_test_step(app: &App) {
    app.click("[data-testid=comment-mode]").await;
    app.wait_text("[data-testid=plan-lines]", "Run the test")
        .await;
    app.click("[data-testid=line-7]").await;
    app.type_into("[data-testid=comment-text]", "Show the test's output too.")
        .await;
    app.click("[data-testid=comment-add]").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn demo_approve_as_goal_ends_complete() {
    let desk = Desk::start();
    let app = plan_demo(&desk).await;
    app.click("[data-testid=approve-goal]").await;
    app.click("[data-testid=approve-goal-send]").await;
    // The test run asks first (the demo allows writes, not commands).
    app.el("[data-testid=question-dialog][data-kind=permission]")
        .await;
    app.click("[data-testid=allow-once]").await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-status]", "complete").await;
    app.wait_text("[data-testid=goal-reason]", "the reviewer confirmed it")
        .await;
    let objective = app.text("[data-testid=goal-objective]").await;
    assert!(
        objective.starts_with("Give `greet.sh` a test")
            || objective.starts_with("Give greet.sh a test"),
        "{objective}"
    );
    app.shot("demo-paths-1-goal-complete").await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn demo_not_now_then_review_again_keeps_the_comment() {
    let desk = Desk::start();
    let app = plan_demo(&desk).await;
    comment_on_the_test_step(&app).await;
    app.wait_text("[data-testid=comment-drafts]", "output too")
        .await;
    app.click("[data-testid=defer]").await;
    app.el("[data-testid=plan-deferred]").await;
    app.shot("demo-paths-2-deferred").await;
    app.click("[data-testid=review-again]").await;
    // The same revision comes back, with the comment still drafted on it.
    app.wait_text("[data-testid=approval-bar]", "v1").await;
    app.wait_gone("[data-testid=plan-deferred]").await;
    // Still commenting, as the user left it: the drafted comment is there.
    assert!(
        app.text("[data-testid=approval-bar]")
            .await
            .contains("Revise with comments (1)")
    );
    app.wait_text("[data-testid=comment-drafts]", "output too")
        .await;
    app.shot("demo-paths-3-reviewed-again").await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn demo_revise_with_a_comment_gives_the_revised_plan_then_the_demo_runs_again() {
    let desk = Desk::start();
    let app = plan_demo(&desk).await;
    comment_on_the_test_step(&app).await;
    app.click("[data-testid=revise]").await;
    app.click("[data-testid=revise-send]").await;
    app.wait_text("[data-testid=approval-bar]", "v2").await;
    app.wait_text("[data-testid=plan-doc]", "Revised after your review")
        .await;
    // The transcript says what the user asked, in a line, not the model's instructions.
    app.wait_text(
        "[data-testid=card]",
        "You asked for changes to the plan v1 · 1 line comment",
    )
    .await;
    app.shot("demo-paths-4-revised").await;

    // Run the demo again: two demo sessions, not four.
    app.click("[data-testid=demo-again]").await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=session]').length === 2 || null",
        "the demo replaced, not copied",
    )
    .await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn focus_review_gives_the_plan_the_window_beside_its_comments() {
    let desk = Desk::start();
    let app = plan_demo(&desk).await;
    app.click("[data-testid=focus-review]").await;
    app.wait_text("[data-testid=plan-lines]", "Run the test")
        .await;
    // The side panel has the whole window; the list and the transcript are out of the way.
    let g = app
        .js("const w = (s) => document.querySelector(s)?.getBoundingClientRect().width ?? 0; return [w('[data-testid=side-panel]'), innerWidth, w('[data-testid=transcript]'), w('[data-testid=sidebar]')]")
        .await;
    let g: Vec<f64> = serde_json::from_value(g).unwrap();
    assert!(g[0] >= g[1] - 2.0, "{g:?}");
    assert_eq!((g[2], g[3]), (0.0, 0.0), "{g:?}");
    // A comment is written beside the lines, not under them.
    app.click("[data-testid=line-7]").await;
    app.type_into("[data-testid=comment-text]", "Show the test's output too.")
        .await;
    app.click("[data-testid=comment-add]").await;
    let beside = app
        .js("const l = document.querySelector('[data-testid=plan-lines]').getBoundingClientRect(); const d = document.querySelector('[data-testid=comment-drafts]').getBoundingClientRect(); return d.left >= l.right && d.top < l.bottom")
        .await;
    assert_eq!(beside, true);
    app.shot("focus-1-review-beside-comments").await;
    // Escape leaves it, with the comment kept for the review.
    app.js("document.activeElement?.blur(); return true").await;
    app.press(fantoccini::key::Key::Escape).await;
    app.wait_js(
        "return (document.querySelector('[data-testid=transcript]')?.getBoundingClientRect().width ?? 0) > 300",
        "the transcript back",
    )
    .await;
    app.click("[data-testid=comment-mode]").await;
    app.wait_text(
        "[data-testid=comment-drafts]",
        "Show the test's output too.",
    )
    .await;
    // Sent back from focus review, the review ends and so does the focus.
    app.click("[data-testid=focus-review]").await;
    app.click("[data-testid=revise]").await;
    app.type_into("[data-testid=revise-text]", "One more step, please.")
        .await;
    app.click("[data-testid=revise-send]").await;
    app.wait_js(
        "return (document.querySelector('[data-testid=transcript]')?.getBoundingClientRect().width ?? 0) > 300",
        "the transcript back after the answer",
    )
    .await;
    app.close().await;
}

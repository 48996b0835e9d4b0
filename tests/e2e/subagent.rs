//! A subagent's work shows under the `task` call that started it, as it happens: its calls
//! appear nested while the task still runs, the nest folds away, and the report follows.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_subagents_calls_show_nested_under_its_task_live() {
    let desk = Desk::start();
    let ws = workspace(&desk, "subagent");
    let out = desk.exec(
        &ws,
        &script("subagent.json"),
        &["--permission", "auto", "Hello"],
    );
    succeeded(&out);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;

    app.type_into("[data-testid=composer]", "Survey the sources")
        .await;
    app.click("[data-testid=send]").await;
    // Live: the child's command shows under the task call while both still run.
    let nested = "[data-testid=tool-call][data-tool=task] ~ [data-testid=subagent-transcript]";
    app.el(&format!("{nested} [data-testid=tool-call][data-tool=bash]"))
        .await;
    let live = app
        .wait_js(
            "const s = document.querySelector('[data-testid=subagent-summary]'); \
             return s && s.textContent.includes('working') ? s.textContent : null",
            "the subagent still working",
        )
        .await;
    assert!(live.as_str().unwrap().contains("general"), "{live}");
    // The child's call is not also a call of the agent's own.
    assert_eq!(
        app.js("return document.querySelectorAll('[data-testid=transcript] [data-testid=tool-call][data-tool=bash]').length")
            .await,
        serde_json::json!(1)
    );
    app.shot("subagent-1-live").await;

    app.wait_text(
        "[data-testid=transcript]",
        "All done: src holds one greeting script.",
    )
    .await;
    app.wait_text("[data-testid=subagent-summary]", "1 call")
        .await;
    app.shot("subagent-2-done").await;
    app.click("[data-testid=subagent-summary]").await;
    app.wait_js(
        "return document.querySelector('[data-testid=subagent-transcript]').open === false || null",
        "the nest folded",
    )
    .await;
    desk.resize(&app, 900, 600).await;
    app.shot("subagent-3-folded-900").await;
    app.close().await;
}

/// A subagent's permission question is the user's to answer, in the same dialog as the
/// agent's, saying a subagent asks; allowed, the child's write happens and its report follows.
#[tokio::test(flavor = "multi_thread")]
async fn a_subagents_permission_question_is_answered_in_the_window() {
    let desk = Desk::start();
    let ws = workspace(&desk, "subagent-ask");
    let out = desk.exec(&ws, &script("subagent_ask.json"), &["Hello"]);
    succeeded(&out);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.type_into("[data-testid=composer]", "Write the notes")
        .await;
    app.click("[data-testid=send]").await;
    let said = app
        .wait_text("[data-testid=permission-summary]", "A subagent")
        .await;
    assert!(said.contains("notes.txt"), "{said}");
    app.shot("subagent-4-asks").await;
    app.click("[data-testid=allow-once]").await;
    app.wait_text("[data-testid=transcript]", "The notes are written.")
        .await;
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "src holds greet.sh\n"
    );
    app.wait_text("[data-testid=subagent-summary]", "1 call")
        .await;
    app.close().await;
}

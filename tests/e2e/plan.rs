//! Plan review in the window: approve, not now, revise, reject; editing before approval;
//! the Plan tab repainting on disk changes, and showing the submitted revision under review
//! when the file drifts; a hostile plan staying inert.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn plan_review_not_now_revise_then_reject() {
    let desk = Desk::start();
    let (app, _, ws) = on_plan_tab(&desk, "review", "plan_review.json", "ask").await;
    app.el("[data-testid=approval-bar]").await;
    app.wait_text("[data-testid=plan-doc]", "draft one").await;
    app.shot("plan-1-awaiting-approval").await;

    // Not now: the review closes, the session stays in plan mode, nothing is implemented.
    app.click("[data-testid=defer]").await;
    app.wait_gone("[data-testid=approval-bar]").await;
    app.wait_text("[data-testid=session].current", "plan").await;

    // A new message in plan mode: the model revises and asks again.
    app.type_into("[data-testid=composer]", "Add a rollback step.")
        .await;
    app.click("[data-testid=send]").await;
    app.wait_text("[data-testid=approval-bar]", "v2").await;
    app.wait_text("[data-testid=plan-doc]", "Rollback").await;

    // Revise… with feedback: the model gets it and offers a third draft with options.
    app.click("[data-testid=revise]").await;
    app.type_into("[data-testid=revise-text]", "Please add a test first.")
        .await;
    app.click("[data-testid=revise-send]").await;
    app.wait_text("[data-testid=approval-bar]", "v3").await;
    app.wait_text("[data-testid=plan-options]", "Rename everywhere")
        .await;
    app.wait_text("[data-testid=transcript]", "Please add a test first.")
        .await;
    app.wait_text("[data-testid=revisions]", "v3").await;

    // Any two revisions side by side.
    app.click("[data-testid=show-diff]").await;
    app.wait_text("[data-testid=diff]", "Add a test.").await;
    app.shot("plan-2-revised-with-diff").await;

    // Reject & exit: back to default mode, the workspace untouched.
    app.click("[data-testid=reject]").await;
    app.wait_gone("[data-testid=approval-bar]").await;
    app.wait_text(
        "[data-testid=transcript]",
        "Plan mode is off: you rejected the plan.",
    )
    .await;
    app.shot("plan-3-rejected").await;
    assert_eq!(
        std::fs::read_to_string(ws.join("src/greet.sh")).unwrap(),
        "echo \"Hello, ${1:-world}\"\n"
    );
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_edited_in_the_app_then_approved_implements_the_edit() {
    let desk = Desk::start();
    let (app, id, ws) = on_plan_tab(&desk, "approve", "plan_approve.json", "auto-edit").await;
    app.wait_text("[data-testid=plan-doc]", "Write DONE.txt")
        .await;

    app.click("[data-testid=edit-plan]").await;
    let edited =
        "## Summary\nWrite DONE.txt (EDITED BY THE USER).\n\n## Steps\n1. Create `DONE.txt`.\n";
    app.type_into("[data-testid=plan-editor]", edited).await;
    app.click("[data-testid=save-plan]").await;
    app.wait_text("[data-testid=revisions]", "edited by you")
        .await;
    app.wait_text("[data-testid=plan-doc]", "EDITED BY THE USER")
        .await;
    // The review is of the user's revision now, and says so.
    app.wait_text("[data-testid=approval-bar]", "v2").await;

    app.click("[data-testid=approve]").await;
    app.wait_text(
        "[data-testid=transcript]",
        "Implemented: DONE.txt is written.",
    )
    .await;
    // The implementation message is a card; what the agent was sent holds the edit.
    app.wait_text("[data-testid=card]", "Implementing the approved plan v2")
        .await;
    app.click("[data-testid=card] .card-detail summary").await;
    app.wait_text("[data-testid=card]", "EDITED BY THE USER")
        .await;
    app.shot("plan-4-approved-edit-implemented").await;
    assert_eq!(
        std::fs::read_to_string(ws.join("DONE.txt")).unwrap(),
        "implemented\n"
    );
    app.close().await;

    // The stored history agrees: v2 is the user's and it is what was approved.
    let out = desk.cli(&["plan", "revisions", "--session", &id]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("user"), "{text}");
}

/// Writes `text` to the plan file and waits for the Plan tab to show `marker`; returns the
/// milliseconds from the write to the frame that first showed it (watched from outside the
/// page, see [`harness::watch_plan_paint`]).
async fn repaint_after_write(
    app: &harness::App,
    path: &std::path::Path,
    text: &str,
    marker: &str,
    atomic: bool,
) -> f64 {
    app.js(&harness::watch_plan_paint(marker)).await;
    let before = now_ms();
    if atomic {
        rename_write(path, text);
    } else {
        std::fs::write(path, text).unwrap();
    }
    let painted = app
        .wait_js("return window.__planPainted", "the plan repaint")
        .await;
    painted.as_f64().unwrap() - before
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_tab_repaints_when_plan_md_changes_on_disk() {
    let desk = Desk::start();
    let (app, id, _) = on_plan_tab(&desk, "live", "plan_wait.json", "ask").await;
    app.wait_text("[data-testid=plan-doc]", "waits for review")
        .await;
    // Not now: no review pending, so the tab follows the file (under review it shows the
    // submitted revision, see the next test).
    app.click("[data-testid=defer]").await;
    app.wait_gone("[data-testid=approval-bar]").await;
    app.el("[data-testid=plan-doc][data-shows=file]").await;
    let path = plan_path(&desk, &id);
    let mut latencies = Vec::new();
    for i in 0..6 {
        let marker = format!("edit number {i}");
        let text =
            format!("## Summary\nLive plan, {marker}.\n\n| a | b |\n|---|---|\n| {i} | x |\n");
        latencies.push(repaint_after_write(&app, &path, &text, &marker, i % 2 == 1).await);
    }
    app.shot("plan-5-live-repaint").await;
    eprintln!("plan change -> repaint (ms), plain and rename writes: {latencies:.1?}");
    // Deleting the file empties the tab; writing it again brings it back.
    std::fs::remove_file(&path).unwrap();
    app.el("[data-testid=plan-empty]").await;
    std::fs::write(&path, "## Summary\nBack again.\n").unwrap();
    app.wait_text("[data-testid=plan-doc]", "Back again.").await;
    app.close().await;
}

/// Plan mode before anything is submitted: the Plan tab shows the agent's draft as such, not
/// "No plan yet", and says the agent is investigating while there is no file; the Changes tab
/// leaves the session's own plan file out.
#[tokio::test(flavor = "multi_thread")]
async fn a_draft_plan_shows_before_submission_and_is_not_a_change() {
    let desk = Desk::start();
    let ws = workspace(&desk, "draft");
    let out = desk.exec(
        &ws,
        &script("plan_draft.json"),
        &[
            "--permission",
            "ask",
            "--plan",
            "Plan the change before touching anything.",
        ],
    );
    succeeded(&out);
    let id = session_of(&out);
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.click("[data-testid=tab-plan]").await;
    app.wait_text("[data-testid=plan-doc]", "DRAFT-MARKER")
        .await;
    app.wait_text("[data-testid=plan-draft]", "Draft — not submitted yet")
        .await;
    let side = app.text("[data-testid=side-panel]").await;
    assert!(!side.contains("No plan yet"), "{side}");
    assert!(!side.contains("/plan on"), "{side}");
    app.shot("plan-12-draft-before-submission").await;

    // The agent wrote only its plan file: nothing changed in the project.
    app.click("[data-testid=tab-changes]").await;
    app.el("[data-testid=changes-empty]").await;
    let listed = app
        .js("return [...document.querySelectorAll('[data-testid=changed-file]')].map(e => e.textContent).join('|')")
        .await;
    assert_eq!(listed, "", "{listed}");
    let tab = app.text("[data-testid=tab-changes]").await;
    assert!(!tab.chars().any(|c| c.is_ascii_digit()), "{tab}");

    // No file yet (the agent still investigating): said so, never "turn plan mode on".
    std::fs::remove_file(plan_path(&desk, &id)).unwrap();
    app.click("[data-testid=tab-plan]").await;
    app.wait_text(
        "[data-testid=plan-empty]",
        "The agent is investigating; the plan appears here as it is written.",
    )
    .await;
    let side = app.text("[data-testid=side-panel]").await;
    assert!(!side.contains("No plan yet"), "{side}");
    app.close().await;
}

/// Under review the tab shows the revision that was submitted, which is what approving
/// implements; when plan.md changes on disk it says so, keeps showing the submitted text,
/// and shows the file only when asked.
#[tokio::test(flavor = "multi_thread")]
async fn the_plan_under_review_stays_the_submitted_revision_when_the_file_changes() {
    let desk = Desk::start();
    let (app, id, ws) = on_plan_tab(&desk, "drift", "plan_wait.json", "ask").await;
    app.el("[data-testid=approval-bar]").await;
    app.el("[data-testid=plan-doc][data-shows=submitted]").await;
    app.wait_text("[data-testid=plan-doc]", "waits for review")
        .await;
    app.wait_text("[data-testid=plan-shown]", "v1 as submitted")
        .await;

    rename_write(
        &plan_path(&desk, &id),
        "## Summary\nCHANGED ON DISK after the review was asked for.\n",
    );
    app.wait_text(
        "[data-testid=plan-drift]",
        "plan.md has changed since v1 was submitted",
    )
    .await;
    let doc = app.text("[data-testid=plan-doc]").await;
    assert!(doc.contains("waits for review"), "{doc}");
    assert!(!doc.contains("CHANGED ON DISK"), "{doc}");
    app.shot("plan-5b-drift-shows-submitted").await;

    // The file, on request; then back to what approving implements.
    app.click("[data-testid=plan-drift-toggle]").await;
    app.el("[data-testid=plan-doc][data-shows=file]").await;
    app.wait_text("[data-testid=plan-doc]", "CHANGED ON DISK")
        .await;
    app.wait_text(
        "[data-testid=plan-drift]",
        "Approving implements v1 as submitted, not this",
    )
    .await;
    app.shot("plan-5c-drift-shows-file").await;
    app.click("[data-testid=plan-drift-toggle]").await;
    app.el("[data-testid=plan-doc][data-shows=submitted]").await;
    app.wait_text("[data-testid=plan-doc]", "waits for review")
        .await;
    assert!(!ws.join("DONE.txt").exists());
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_xss_payload_in_plan_md_does_not_run_in_the_webview() {
    let desk = Desk::start();
    let (id, ws) = planned_session(&desk, "xss", "plan_wait.json", "ask");
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.click("[data-testid=tab-plan]").await;
    app.el("[data-testid=approval-bar]").await;
    // Model-written markup that would approve its own plan if anything in it ran.
    let steal = "window.__TAURI_INTERNALS__ && window.__TAURI_INTERNALS__.invoke('answer',{id:'x',questionnaireId:'x',answer:{answer:'approve'}}); window.__pwned='ran'";
    let payload = format!(
        "## Summary\nXSS-MARKER plan.\n\n\
         <script>{steal}</script>\n\n\
         <img src=x onerror=\"{steal}\">\n\n\
         <svg onload=\"{steal}\"><circle r=1 /></svg>\n\n\
         <iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>\n\n\
         <details open ontoggle=\"{steal}\"><summary>d</summary>x</details>\n\n\
         <math><mtext><table><mglyph><style><img src=x onerror=\"{steal}\">\n\n\
         <a href=\"javascript:window.__pwned='href'\">js link</a> [md link](javascript:window.__pwned='md')\n\n\
         <form action=\"javascript:window.__pwned='form'\"><button>go</button></form>\n\n\
         <object data=\"javascript:window.__pwned='object'\"></object><embed src=\"javascript:1\">\n\n\
         <div style=\"background:url(http://127.0.0.1:9/x)\" onclick=\"{steal}\">styled</div>\n\n\
         [the docs](https://example.com/docs?from=plan) ![remote](http://127.0.0.1:9/pixel.png) <base href=\"http://127.0.0.1:9/\"> <meta http-equiv=\"refresh\" content=\"0;url=http://127.0.0.1:9/\">\n"
    );
    rename_write(&plan_path(&desk, &id), &payload);
    // Under review the tab shows the submitted revision: the file, changed since, on request.
    app.click("[data-testid=plan-drift-toggle]").await;
    app.el("[data-testid=plan-doc][data-shows=file]").await;
    app.wait_text("[data-testid=plan-doc]", "XSS-MARKER").await;
    // Click everything clickable inside the rendered plan.
    app.js("document.querySelectorAll('[data-testid=plan-doc] a, [data-testid=plan-doc] button, [data-testid=plan-doc] div, [data-testid=plan-doc] summary').forEach(e => e.click()); return true")
        .await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let report = app
        .js("const d = document.querySelector('[data-testid=plan-doc]'); \
             return { pwned: window.__pwned ?? null, \
                      dangerous: d.querySelectorAll('script,iframe,object,embed,form,svg,math,base,meta,style,img').length, \
                      handlers: [...d.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on') || a.name === 'style')).length, \
                      jsLinks: [...d.querySelectorAll('[href],[src]')].filter(e => /^\\s*javascript:/i.test(e.getAttribute('href') ?? e.getAttribute('src') ?? '')).length, \
                      url: location.href }")
        .await;
    app.shot("plan-6-xss-inert").await;
    assert_eq!(report["pwned"], serde_json::Value::Null, "{report}");
    assert_eq!(report["dangerous"], 0, "{report}");
    assert_eq!(report["handlers"], 0, "{report}");
    assert_eq!(report["jsLinks"], 0, "{report}");
    assert!(
        report["url"]
            .as_str()
            .unwrap()
            .starts_with("tauri://localhost"),
        "{report}"
    );
    // A real click on an http link goes to the system browser, the webview stays put.
    app.click("[data-testid=plan-doc] a[href^='https://example.com']")
        .await;
    desk.wait_opened("https://example.com/docs?from=plan").await;
    assert!(
        app.client
            .current_url()
            .await
            .unwrap()
            .as_str()
            .starts_with("tauri://localhost")
    );
    // Only Waymark's own commands are reachable over IPC: plugins refuse the webview (but
    // get/set on the window-state store the app opened, see state.rs).
    let refused = app
        .js_async(
            "const done = arguments[arguments.length - 1]; \
             window.__TAURI_INTERNALS__.invoke('plugin:opener|open_url', {url: 'https://example.com/evil'}) \
               .then(() => done('allowed'), e => done('refused: ' + e));",
        )
        .await;
    assert!(
        refused.as_str().unwrap().starts_with("refused"),
        "{refused}"
    );
    assert!(!desk.opened().contains("evil"));
    // The plan is still waiting for the user: nothing approved it.
    app.el("[data-testid=approval-bar]").await;
    let out = desk.cli(&["show", "--session", &id]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("The plan is ready for review"), "{shown}");
    assert!(!ws.join("DONE.txt").exists());
    app.close().await;
}

/// Review beyond approve/reject (PM-25 … PM-28) in the window: comments on two passages go
/// with a revise and the next revision marks one addressed, one unchanged; the plan is
/// approved as a goal with the budget from its `## Budget`, and the steps gauge moves as the
/// reviewer checks them; the plan list shows both plans with their outcomes; export writes
/// the approved plan into the workspace.
#[tokio::test(flavor = "multi_thread")]
async fn plan_comments_revise_approve_as_goal_history_and_export() {
    let desk = Desk::start();
    // A first plan, rejected from the CLI: the history then holds two.
    let (id, ws) = planned_session(&desk, "beyond", "plan_beyond.json", "auto-edit");
    let q = pending_questionnaire_of(&desk, &id);
    let out = desk.cli(&["answer", "--session", &id, &q, "reject", "--no-run"]);
    succeeded(&out);
    let out = desk.cli(&[
        "exec",
        "--json",
        "--session",
        &id,
        "--plan",
        "Make the greeting louder.",
    ]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.click("[data-testid=tab-plan]").await;
    app.wait_text("[data-testid=approval-bar]", "v1").await;

    // Comment on two passages: a line picked in the gutter each time.
    app.click("[data-testid=comment-mode]").await;
    app.wait_text("[data-testid=plan-lines]", "Add an exclamation mark")
        .await;
    app.click("[data-testid=line-5]").await;
    app.type_into("[data-testid=comment-text]", "How? Name the command.")
        .await;
    app.click("[data-testid=comment-add]").await;
    app.click("[data-testid=line-6]").await;
    app.type_into("[data-testid=comment-text]", "Keep this one as it is.")
        .await;
    app.click("[data-testid=comment-add]").await;
    app.wait_text("[data-testid=comment-drafts]", "Keep this one")
        .await;
    app.shot("plan-7-two-comments").await;
    app.click("[data-testid=revise]").await;
    app.wait_text("[data-testid=revise-send]", "Revise with 2 comments")
        .await;
    app.click("[data-testid=revise-send]").await;

    // The model's v2 changed the first passage and kept the second.
    app.wait_text("[data-testid=approval-bar]", "v2").await;
    app.wait_text("[data-testid=transcript]", "2 comments on plan v1 sent")
        .await;
    if app
        .js("return document.querySelector('[data-testid=plan-lines]') === null")
        .await
        .as_bool()
        .unwrap()
    {
        app.click("[data-testid=comment-mode]").await;
    }
    app.wait_text("[data-testid=comment-states]", "addressed")
        .await;
    let states = app
        .js("return [...document.querySelectorAll('[data-testid=comment-state]')].map(e => e.dataset.state).join(',')")
        .await;
    assert_eq!(states, "addressed,unchanged");
    app.shot("plan-8-comments-addressed-and-unchanged").await;

    // Approve & pursue as goal: the budget comes from the plan.
    app.click("[data-testid=approve-goal]").await;
    let budget = app
        .js("return ['tokens', 'turns', 'time'].map(f => document.querySelector(`[data-testid=approve-goal-${f}]`).value)")
        .await;
    assert_eq!(budget, serde_json::json!(["40K", "6", "1h"]));
    app.shot("plan-9-approve-as-goal").await;
    app.click("[data-testid=approve-goal-send]").await;
    app.click("[data-testid=tab-goal]").await;
    // Called by the plan's summary; the revision it implements is in its details.
    app.wait_text("[data-testid=goal-criteria]", "revision v2")
        .await;
    let tokens = app.text("[data-testid=gauge-tokens]").await;
    assert!(tokens.contains("40K"), "{tokens}");
    // The reviewer finds one step of two met, then both.
    app.wait_js(
        "return document.querySelector('[data-testid=goal-steps]')?.dataset.met === '1'",
        "the steps gauge at 1 of 2",
    )
    .await;
    app.shot("goal-7-steps-one-of-two").await;
    app.wait_text("[data-testid=goal-status]", "complete").await;
    app.wait_text("[data-testid=goal-steps-count]", "2 / 2")
        .await;
    app.shot("goal-8-steps-all-met").await;

    // Both plans, with their outcomes.
    app.click("[data-testid=tab-plan]").await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=plan-item]').length === 2",
        "two plans listed",
    )
    .await;
    let outcomes = app
        .js("return [...document.querySelectorAll('[data-testid=plan-item]')].map(e => e.dataset.status).join(',')")
        .await;
    assert_eq!(outcomes, "approved,rejected");
    app.shot("plan-10-history").await;

    // Save to workspace: the approved revision lands in docs/plans/.
    app.click("[data-testid=plan-export]").await;
    let saved = app
        .wait_text("[data-testid=plan-exported]", "docs/plans/")
        .await;
    let rel = saved.trim_start_matches("Saved to ").trim().to_string();
    let written = std::fs::read_to_string(ws.join(&rel)).unwrap();
    assert!(written.contains("with `tr`"), "{written}");
    app.shot("plan-11-exported").await;
    app.close().await;
}

/// Trust, round three (item 11): text the review would not show (an HTML comment) is marked
/// where it stands with a "hidden text" marker whose toggle shows it, and the approved plan
/// reaches the implementing turn with that part between markers saying it was hidden.
#[tokio::test(flavor = "multi_thread")]
async fn hidden_plan_text_is_marked_shown_on_request_and_flagged_to_the_implementer() {
    let desk = Desk::start();
    let (app, id, _ws) = on_plan_tab(&desk, "hidden", "plan_hidden.json", "auto-edit").await;
    app.el("[data-testid=approval-bar]").await;
    app.wait_text("[data-testid=plan-doc]", "VISIBLE-MARKER")
        .await;
    let before = hidden_state(&app).await;
    assert_eq!(before["toggleShown"], true, "{before}");
    assert_eq!(before["textShown"], false, "{before}");
    assert!(
        !before["page"]
            .as_str()
            .unwrap()
            .contains("HIDDEN-INSTRUCTION"),
        "{before}"
    );
    app.shot("plan-7-hidden-text-marked").await;
    app.click("[data-testid=plan-doc] .plan-hidden-toggle")
        .await;
    app.wait_js(
        "const t = document.querySelector('[data-testid=plan-doc] .plan-hidden-text'); \
         return (t && !t.hidden) || null",
        "the hidden text to show",
    )
    .await;
    let after = hidden_state(&app).await;
    assert_eq!(after["textShown"], true, "{after}");
    assert!(
        after["text"]
            .as_str()
            .unwrap()
            .contains("HIDDEN-INSTRUCTION"),
        "{after}"
    );
    app.shot("plan-8-hidden-text-shown").await;
    let window = desk.xdotool(&["search", "--onlyvisible", "--name", "^Waymark$"]);
    desk.xdotool(&["windowsize", &window, "900", "600"]);
    app.wait_js(
        "return window.innerWidth <= 900 || null",
        "the window to narrow",
    )
    .await;
    app.shot("plan-9-hidden-text-900x600").await;
    // Approved: the implementing turn gets the frozen text, the hidden part flagged.
    app.click("[data-testid=approve]").await;
    app.wait_gone("[data-testid=approval-bar]").await;
    app.wait_text("[data-testid=transcript]", "Implemented.")
        .await;
    let out = desk.cli(&["show", "--session", &id, "--json"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("the user saw only a marker here") && shown.contains("HIDDEN-INSTRUCTION"),
        "{shown}"
    );
    app.close().await;
}

/// Whether the plan under review shows a hidden-text marker and its text.
async fn hidden_state(app: &harness::App) -> serde_json::Value {
    app.js(
        "const d = document.querySelector('[data-testid=plan-doc]'); \
         const b = d.querySelector('.plan-hidden-toggle'); \
         const t = d.querySelector('.plan-hidden-text'); \
         return { toggle: b ? b.textContent : null, \
                  toggleShown: !!b && b.getBoundingClientRect().width > 0, \
                  textShown: !!t && !t.hidden && t.getBoundingClientRect().height > 0, \
                  text: t ? t.textContent : null, \
                  page: d.innerText }",
    )
    .await
}

//! Goal checks in the window (G-49, G-51, G-52): the Goal tab's pass counts rising run by run
//! on two checks, a goal paused because its checks were weakened with what changed, and the
//! question a protected path raises even in `auto`.

use super::*;

/// Node's test runner on two suites over `math.mjs`, each with a failing test.
fn node_project(ws: &std::path::Path) {
    std::fs::write(
        ws.join("math.mjs"),
        "export const add = (a, b) => a - b;\nexport const sub = (a, b) => a + b;\n",
    )
    .unwrap();
    for (file, f, cases) in [
        (
            "add.test.mjs",
            "add",
            [("adds", "2, 2", "4"), ("adds zero", "2, 0", "2")],
        ),
        (
            "sub.test.mjs",
            "sub",
            [("subtracts", "5, 3", "2"), ("subtracts zero", "2, 0", "2")],
        ),
    ] {
        let tests: String = cases
            .iter()
            .map(|(name, args, want)| {
                format!("test('{name}', () => {{ assert.equal({f}({args}), {want}); }});\n")
            })
            .collect();
        std::fs::write(
            ws.join(file),
            format!("import test from 'node:test';\nimport assert from 'node:assert';\nimport {{ {f} }} from './math.mjs';\n\n{tests}"),
        )
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_goal_with_two_checks_shows_its_pass_counts_rising() {
    let desk = Desk::start();
    let ws = workspace(&desk, "checks");
    node_project(&ws);
    let out = desk.exec(
        &ws,
        &script("checks_rising.json"),
        &[
            "--permission",
            "auto",
            "/goal fix the math check=\"node --test add.test.mjs\" check=\"node --test sub.test.mjs\"",
        ],
    );
    succeeded(&out);
    let id = session_of(&out);
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-checks-count]", "4 / 4")
        .await;
    // Each check: the baseline and its runs at the three claims, passing more each time.
    let runs = app
        .js("return [...document.querySelectorAll('[data-testid=goal-check]')].map((c) => \
               [c.querySelector('code').textContent, c.querySelector('[data-testid=goal-check-state]').textContent, \
                c.querySelector('[data-testid=goal-check-baseline]').textContent, \
                c.querySelectorAll('[data-testid=goal-check-history] .run').length])")
        .await;
    assert_eq!(
        runs,
        serde_json::json!([
            [
                "node --test add.test.mjs",
                "2/2 tests passing",
                "At the start: 1/2 tests passing",
                4
            ],
            [
                "node --test sub.test.mjs",
                "2/2 tests passing",
                "At the start: 1/2 tests passing",
                4
            ]
        ])
    );
    app.wait_text("[data-testid=goal-status]", "complete").await;
    app.wait_text(
        "[data-testid=goal-timeline]",
        "Baseline check `node --test add.test.mjs`",
    )
    .await;
    app.js("document.querySelector('[data-testid=goal-checks]').scrollIntoView({block: 'start'}); return true")
        .await;
    app.shot("checks-1-pass-counts-rising").await;
    // The board counts them too.
    app.click("[data-testid=open-board]").await;
    app.wait_text("[data-testid=board-checks]", "4/4 tests passing")
        .await;
    app.shot("checks-2-board").await;
    app.quit().await;
    // The checks left nothing in the workspace.
    let mut names: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["add.test.mjs", "math.mjs", "src", "sub.test.mjs"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_weakened_check_pauses_the_goal_and_the_panel_says_what_changed() {
    let desk = Desk::start();
    let ws = workspace(&desk, "weakened");
    std::fs::write(ws.join("math.mjs"), "export const sub = (a, b) => a + b;\n").unwrap();
    std::fs::write(
        ws.join("math.test.mjs"),
        "import test from 'node:test';\nimport assert from 'node:assert';\nimport { sub } from './math.mjs';\n\ntest('subtracts', () => { assert.equal(sub(5, 3), 2); });\ntest('subtracts zero', () => { assert.equal(sub(2, 0), 2); });\n",
    )
    .unwrap();
    let out = desk.exec(
        &ws,
        &script("checks_weakened.json"),
        &[
            "--permission",
            "auto",
            "/goal fix the subtractor check=\"node --test\"",
        ],
    );
    ended(&out, 6);
    let id = session_of(&out);
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text(
        "[data-testid=goal-reason]",
        "the checks pass, but they were weakened",
    )
    .await;
    let found = app
        .js("return [...document.querySelectorAll('[data-testid=goal-weakened-item]')].map((e) => e.textContent)")
        .await;
    assert_eq!(
        found,
        serde_json::json!([
            "node --test ran 2 tests at the start and 1 now",
            "math.test.mjs holds 1 test now, 2 at the start",
            "math.test.mjs lost 1 assertion (2 at the start, 1 now)"
        ])
    );
    app.js("document.querySelector('[data-testid=goal-weakened]').scrollIntoView({block: 'center'}); return true")
        .await;
    app.shot("checks-3-weakened-pause").await;
    desk.resize(&app, 900, 600).await;
    app.click("[data-testid=toggle-right]").await;
    app.click("[data-testid=tab-goal]").await;
    app.js("document.querySelector('[data-testid=goal-weakened]').scrollIntoView({block: 'center'}); return true")
        .await;
    app.shot("checks-4-weakened-pause-900x600").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_to_a_protected_path_asks_in_auto_mode_with_its_diff() {
    let desk = Desk::start();
    let ws = workspace(&desk, "protected");
    std::fs::write(ws.join("check.sh"), "#!/bin/sh\ntest -f done.txt\n").unwrap();
    let out = desk.exec(
        &ws,
        &script("checks_protected.json"),
        &[
            "--permission",
            "auto",
            "/goal make the check pass check=\"sh ./check.sh\"",
        ],
    );
    ended(&out, 3);
    let id = session_of(&out);
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.el("[data-testid=question-dialog][data-kind=permission]")
        .await;
    app.wait_text(
        "[data-testid=question-dialog]",
        "protected while the goal runs",
    )
    .await;
    app.wait_text("[data-testid=permission-diff]", "exit 0")
        .await;
    assert!(
        !app.exists("[data-testid=allow-session]").await,
        "no grant is offered for a protected path"
    );
    let mode = app
        .js("return document.querySelector('[data-testid=mode-picker]')?.value ?? null")
        .await;
    assert_eq!(mode, serde_json::json!("auto"), "the session is in auto");
    app.shot("checks-5-protected-path-question").await;
    app.click("[data-testid=deny]").await;
    app.wait_gone("[data-testid=question-dialog]").await;
    assert_eq!(
        std::fs::read_to_string(ws.join("check.sh")).unwrap(),
        "#!/bin/sh\ntest -f done.txt\n"
    );
    app.quit().await;
}

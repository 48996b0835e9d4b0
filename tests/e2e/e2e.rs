//! End-to-end tests of the desktop app: the real binary in a real WebKitGTK window under
//! Xvfb, driven over WebDriver; the model is the offline scripted one. Every test saves
//! screenshots to target/e2e-screenshots/.

mod harness;

use harness::{App, Desk, root};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn script(name: &str) -> String {
    format!(
        "scripted:{}",
        root().join("tests/e2e/scripts").join(name).display()
    )
}

/// A workspace folder with one file in it.
fn workspace(desk: &Desk, name: &str) -> PathBuf {
    let ws = desk.dir.path().join(name);
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/greet.sh"), "echo \"Hello, ${1:-world}\"\n").unwrap();
    ws
}

/// Starts a session with the CLI that plans and stops at the approval (exit 3); its id.
fn planned_session(
    desk: &Desk,
    ws: &str,
    script_name: &str,
    permission: &str,
) -> (String, PathBuf) {
    let ws = workspace(desk, ws);
    let out = desk.exec(
        &ws,
        &script(script_name),
        &[
            "--permission",
            permission,
            "--plan",
            "Plan the change before touching anything.",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "exec should stop at the plan approval: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    (v["session_id"].as_str().unwrap().to_string(), ws)
}

/// A planned session (see [`planned_session`]) opened in the app on its Plan tab.
async fn on_plan_tab(
    desk: &Desk,
    ws: &str,
    script_name: &str,
    permission: &str,
) -> (harness::App, String, PathBuf) {
    let (id, ws) = planned_session(desk, ws, script_name, permission);
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.click("[data-testid=tab-plan]").await;
    (app, id, ws)
}

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
    app.wait_text("[data-testid=transcript]", "Plan mode off (rejected)")
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

    app.click("[data-testid=approve]").await;
    app.wait_text(
        "[data-testid=transcript]",
        "Implemented: DONE.txt is written.",
    )
    .await;
    app.wait_text("[data-testid=transcript]", "EDITED BY THE USER")
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

#[tokio::test(flavor = "multi_thread")]
async fn first_run_demo_plans_implements_and_its_goal_ends_blocked_with_a_notification() {
    let desk = Desk::start();
    let app = desk.launch().await;
    app.el("[data-testid=demo-banner]").await;

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
    app.wait_text("[data-testid=goal-reason]", "worker reported")
        .await;
    app.wait_text("[data-testid=goal-timeline]", "blocked")
        .await;
    app.shot("demo-1-goal-blocked").await;

    // The notification went over D-Bus to the notification daemon.
    desk.wait_notification("Goal blocked").await;
    desk.screen("demo-2-notification-on-screen");

    // The plan demo: wait for its approval, approve, allow the test run, see it done.
    let plan_id = app
        .wait_js(
            "return [...document.querySelectorAll('[data-testid=session]')].find(b => b.textContent.includes('Plan first'))?.dataset.sessionId",
            "the plan demo in the list",
        )
        .await;
    app.open_session(plan_id.as_str().unwrap()).await;
    app.click("[data-testid=tab-plan]").await;
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

/// Path of a session's plan file in the desk's data folder.
fn plan_path(desk: &Desk, id: &str) -> PathBuf {
    desk.data_dir()
        .join("sessions")
        .join(id)
        .join("artifacts/plan.md")
}

fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

/// Writes the plan as an editor would: to a temp file beside it, then a rename over it.
fn rename_write(path: &std::path::Path, text: &str) {
    let tmp = path.with_file_name(".plan.md.tmp~");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Writes `text` to the plan file and waits for the Plan tab to show `marker`; returns the
/// milliseconds from the write to the repaint (as the page recorded it).
async fn repaint_after_write(
    app: &harness::App,
    path: &std::path::Path,
    text: &str,
    marker: &str,
    atomic: bool,
) -> f64 {
    let before = now_ms();
    if atomic {
        rename_write(path, text);
    } else {
        std::fs::write(path, text).unwrap();
    }
    let painted = app
        .wait_js(
            &format!(
                "const d = document.querySelector('[data-testid=plan-doc]'); \
                 return d && d.textContent.includes({marker:?}) && d.dataset.paintedAt ? Number(d.dataset.paintedAt) : null"
            ),
            "the plan repaint",
        )
        .await;
    painted.as_f64().unwrap() - before
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_tab_repaints_when_plan_md_changes_on_disk() {
    let desk = Desk::start();
    let (app, id, _) = on_plan_tab(&desk, "live", "plan_wait.json", "ask").await;
    app.wait_text("[data-testid=plan-doc]", "waits for review")
        .await;
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
    let start = Instant::now();
    while !desk.opened().contains("https://example.com/docs?from=plan") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the link did not reach the browser: {:?}",
            desk.opened()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        app.client
            .current_url()
            .await
            .unwrap()
            .as_str()
            .starts_with("tauri://localhost")
    );
    // Only Waymark's own commands are reachable over IPC: plugins refuse the webview.
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

#[tokio::test(flavor = "multi_thread")]
async fn a_beta_flag_toggled_in_settings_changes_behaviour_without_a_restart() {
    let desk = Desk::start();
    let ws = workspace(&desk, "flags");
    let out = desk.exec(&ws, &script("chat.json"), &["Hello"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;

    // Plan mode off in Settings.
    app.click("[data-testid=open-settings]").await;
    app.click("[data-testid=flag-plan-mode]").await;
    app.click("[data-testid=settings-save]").await;
    app.el("[data-testid=settings-saved]").await;
    app.shot("settings-1-plan-mode-off").await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(desk.settings_file()).unwrap()).unwrap();
    assert_eq!(saved["beta"]["desktop_plan_mode"], false, "{saved}");

    // The open session refuses the next entry at once, by command and by the composer chip.
    app.click("[data-testid=open-settings]").await;
    app.type_into("[data-testid=composer]", "/plan on\u{E007}")
        .await;
    app.wait_text("[data-testid=toast]", "beta.desktop_plan_mode")
        .await;
    app.send_with_plan_chip("Plan the refactor").await;
    app.wait_text("[data-testid=toast]", "beta.desktop_plan_mode")
        .await;
    app.shot("settings-2-entry-refused").await;

    // An invalid value is refused with the key named, and the file keeps the last good settings.
    app.click("[data-testid=open-settings]").await;
    app.type_into("[data-testid=breaker-limit]", "0").await;
    app.click("[data-testid=settings-save]").await;
    app.wait_text(
        "[data-testid=settings-error]",
        "goal.breaker.repeated_reply_limit",
    )
    .await;
    app.shot("settings-3-validation").await;
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(desk.settings_file()).unwrap()).unwrap();
    assert_eq!(kept, saved);

    // An API key goes to the system keyring, never into the settings file.
    let key_row = "[data-testid=key-OPENAI_API_KEY]";
    app.type_into(
        &format!("{key_row} [data-testid=key-input]"),
        "sk-e2e-secret-123",
    )
    .await;
    app.click(&format!("{key_row} [data-testid=key-store]"))
        .await;
    app.wait_text(&format!("{key_row} [data-testid=key-state]"), "in keyring")
        .await;
    app.shot("settings-4-key-in-keyring").await;
    assert!(
        !std::fs::read_to_string(desk.settings_file())
            .unwrap()
            .contains("sk-e2e")
    );
    app.click(&format!("{key_row} [data-testid=key-remove]"))
        .await;
    app.wait_text(&format!("{key_row} [data-testid=key-state]"), "not stored")
        .await;

    // Back on: entering plan mode works again.
    app.type_into("[data-testid=breaker-limit]", "3").await;
    app.click("[data-testid=flag-plan-mode]").await;
    app.click("[data-testid=settings-save]").await;
    app.el("[data-testid=settings-saved]").await;
    app.click("[data-testid=open-settings]").await;
    app.type_into("[data-testid=composer]", "/plan on\u{E007}")
        .await;
    app.wait_text("[data-testid=transcript]", "Plan mode on")
        .await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn goal_gauges_follow_the_run_and_raising_a_spent_budget_resumes_it() {
    let desk = Desk::start();
    let ws = workspace(&desk, "goal");
    let chat = desk.exec(&ws, &script("chat.json"), &["Hello"]);
    assert!(chat.status.success());
    let out = desk.exec(
        &ws,
        &script("goal_budget.json"),
        &["--permission", "auto", "/goal Do the two steps budget=5K"],
    );
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("budget_limited"), "{log}");
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-status]", "budget limited")
        .await;
    let level = app
        .js("return document.querySelector('[data-testid=gauge-tokens]').dataset.level")
        .await;
    assert_eq!(level, "danger");
    assert!(
        app.text("[data-testid=gauge-tokens]")
            .await
            .contains("limit reached")
    );
    assert!(
        app.js("return Number(document.querySelector('[data-testid=burndown]').dataset.points)")
            .await
            .as_u64()
            .unwrap()
            >= 2
    );
    app.shot("goal-1-budget-limited").await;

    // Raise the spent dimension: the goal resumes and the gauges move again.
    app.click("[data-testid=goal-budget]").await;
    app.type_into("[data-testid=budget-tokens]", "20K").await;
    app.click("[data-testid=budget-save]").await;
    app.wait_text("[data-testid=goal-timeline]", "budget raised")
        .await;
    app.wait_text(
        "[data-testid=transcript]",
        "Back at it after the budget was raised.",
    )
    .await;
    // The script then repeats itself: the breaker pauses the goal, which is worth a notification.
    app.wait_text("[data-testid=goal-status]", "paused").await;
    app.wait_text("[data-testid=goal-reason]", "no progress")
        .await;
    desk.wait_notification("Goal paused").await;
    app.shot("goal-2-resumed-then-paused").await;
    desk.screen("goal-3-notification");

    // Clicking the notification brings that session back while another one is shown.
    let goal_id = app
        .js("return document.querySelector('[data-testid=session].current').dataset.sessionId")
        .await;
    app.click("[data-testid=session]:not(.current)").await;
    app.wait_js(
        &format!("return document.querySelector('[data-testid=session].current')?.dataset.sessionId !== {goal_id}"),
        "the other session to open",
    )
    .await;
    let clicked = std::process::Command::new("dunstctl")
        .arg("action")
        .arg("0")
        .env("DBUS_SESSION_BUS_ADDRESS", &desk.bus)
        .status()
        .unwrap();
    assert!(clicked.success());
    app.wait_js(
        &format!("return document.querySelector('[data-testid=session].current')?.dataset.sessionId === {goal_id}"),
        "the notification's session to open",
    )
    .await;
    app.click("[data-testid=tab-goal]").await;

    // A second launch hands over to this window and exits.
    let mut second = std::process::Command::new(harness::app_binary())
        .envs(desk.env())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = second.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the second instance kept running"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{status}");
    app.el("[data-testid=goal-status]").await;

    // Pause/resume/clear from the buttons.
    app.click("[data-testid=goal-resume]").await;
    app.wait_text("[data-testid=goal-timeline]", "active — resumed")
        .await;
    app.click("[data-testid=goal-clear]").await;
    app.wait_text("[data-testid=tab-goal]", "Goal").await;
    app.el("[data-testid=goal-new]").await;
    app.quit().await;
    // The window's size and place were saved on the way out.
    let start = Instant::now();
    let state = loop {
        let found = walk(&desk.home())
            .into_iter()
            .find(|p| p.ends_with(".window-state.json"));
        if let Some(p) = found {
            break p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no window state saved under {}",
            desk.home().display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(saved.contains("\"main\""), "{saved}");
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn composer_completes_slash_commands_and_stop_ends_the_turn() {
    let desk = Desk::start();
    let ws = workspace(&desk, "stop");
    let out = desk.exec(&ws, &script("stop.json"), &["--permission", "auto", "Hi"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;

    // `/` opens completion; Tab takes the highlighted command.
    app.type_into("[data-testid=composer]", "/go").await;
    app.wait_text("[data-testid=completion]", "/goal pause")
        .await;
    app.shot("composer-1-completion").await;
    app.el("[data-testid=composer]")
        .await
        .send_keys("\u{E004}")
        .await
        .unwrap();
    let value = app
        .js("return document.querySelector('[data-testid=composer]').value")
        .await;
    assert_eq!(value, "/goal ");
    app.el("[data-testid=composer]")
        .await
        .clear()
        .await
        .unwrap();

    // Stop kills the running tool and ends the turn.
    app.type_into("[data-testid=composer]", "Run the long command\u{E007}")
        .await;
    app.wait_text("[data-testid=transcript]", "Running a long command.")
        .await;
    app.click("[data-testid=stop]").await;
    app.wait_text("[data-testid=transcript]", "Turn ended: aborted")
        .await;
    app.wait_gone("[data-testid=stop]").await;
    app.shot("composer-2-stopped").await;
    assert!(
        !app.text("[data-testid=transcript]")
            .await
            .contains("This reply never comes")
    );
    app.close().await;
}

/// Waits until the mock model has answered `n` times in the open transcript.
async fn wait_replies(app: &App, n: usize) {
    app.wait_js(
        &format!(
            "return document.querySelector('[data-testid=transcript]').innerText.split('nothing to change (check').length - 1 >= {n}"
        ),
        "the model's reply",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_api_key_stored_in_the_keyring_is_what_the_provider_sends() {
    let desk = Desk::start();
    let auth_log = desk.dir.path().join("auth.log");
    let mut server = std::process::Command::new("python3");
    server
        .arg(root().join("scripts/mock_openai.py"))
        .env("MOCK_AUTH_LOG", &auth_log)
        .stdout(std::process::Stdio::piped());
    let mut server = harness::spawn(&mut server);
    let port = harness::first_line(server.child());
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(
        desk.settings_file(),
        format!(r#"{{"model": "mock", "providers": {{"mock": {{"kind": "openai", "base_url": "http://127.0.0.1:{port}/v1", "api_key_env": "MOCK_KEY", "model": "m1"}}}}}}"#),
    )
    .unwrap();
    // The CLI starts the session with a key from its environment…
    let ws = workspace(&desk, "keyed");
    let mut cli = std::process::Command::new(harness::target_dir().join("debug/waymark"));
    let out = cli
        .arg("--data-dir")
        .arg(desk.data_dir())
        .args([
            "exec",
            "--json",
            "--workspace",
            ws.to_str().unwrap(),
            "Check the project",
        ])
        .envs(desk.env())
        .env("MOCK_KEY", "from-the-environment")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // …the app, which has no such variable, opens it, and a turn says what is missing…
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.type_into("[data-testid=composer]", "Try without a key\u{E007}")
        .await;
    app.wait_text("[data-testid=transcript]", "MOCK_KEY is not set")
        .await;
    app.shot("settings-5a-key-missing").await;
    // …until the key is in the keyring.
    app.click("[data-testid=open-settings]").await;
    app.type_into(
        "[data-testid=key-MOCK_KEY] [data-testid=key-input]",
        "from-the-keyring",
    )
    .await;
    app.click("[data-testid=key-MOCK_KEY] [data-testid=key-store]")
        .await;
    app.wait_text(
        "[data-testid=key-MOCK_KEY] [data-testid=key-state]",
        "in keyring",
    )
    .await;
    // The session already open picks the key up on its next turn, no restart needed…
    app.click("[data-testid=open-settings]").await;
    let replies = app
        .text("[data-testid=transcript]")
        .await
        .matches("nothing to change (check")
        .count();
    app.type_into("[data-testid=composer]", "Once more\u{E007}")
        .await;
    wait_replies(&app, replies + 1).await;
    let sent = std::fs::read_to_string(&auth_log).unwrap();
    assert!(
        sent.lines()
            .next()
            .unwrap()
            .contains("from-the-environment"),
        "{sent}"
    );
    assert!(
        sent.lines().last().unwrap().contains("from-the-keyring"),
        "{sent}"
    );
    app.shot("settings-5b-keyring-key-used").await;
    // …and the key is still there after a restart.
    app.quit().await;
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    assert!(
        !app.exists("[data-testid=demo-banner]").await,
        "a model is configured: no demo"
    );
    let requests = std::fs::read_to_string(&auth_log).unwrap().lines().count();
    app.type_into("[data-testid=composer]", "After a restart\u{E007}")
        .await;
    wait_replies(&app, replies + 2).await;
    let sent = std::fs::read_to_string(&auth_log).unwrap();
    assert!(sent.lines().count() > requests, "{sent}");
    assert!(
        sent.lines().last().unwrap().contains("from-the-keyring"),
        "{sent}"
    );
    assert!(
        !std::fs::read_to_string(desk.settings_file())
            .unwrap()
            .contains("from-the")
    );
    app.shot("settings-5c-keyring-key-after-restart").await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn open_folder_uses_the_native_chooser_and_a_plan_ready_while_unfocused_notifies() {
    let desk = Desk::start();
    // A model that writes a plan and asks for review, then does so again with a second draft.
    let draft = |n: u32| {
        serde_json::json!({
            "text": format!("Draft {n} written."),
            "tool_calls": [
                {"name": "write", "arguments": {"path": "${session_dir}/artifacts/plan.md", "content": format!("## Summary\nDraft {n} of the plan.\n")}},
                {"name": "ExitPlanMode", "arguments": {}}
            ]
        })
    };
    let two_plans = desk.dir.path().join("two_plans.json");
    std::fs::write(
        &two_plans,
        serde_json::json!({"responses": [draft(1), draft(2)], "when_exhausted": "repeat_last"})
            .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(
        desk.settings_file(),
        serde_json::json!({ "model": format!("scripted:{}", two_plans.display()) }).to_string(),
    )
    .unwrap();
    // No sub-folder: the chooser's location bar would complete the path into it.
    let ws = desk.dir.path().join("picked");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("README.md"), "picked\n").unwrap();
    let app = desk.launch().await;
    app.click("[data-testid=open-folder]").await;
    // The native folder chooser (GTK): type the folder into its location bar, real X input.
    let dialog = desk.xdotool(&[
        "search",
        "--sync",
        "--onlyvisible",
        "--name",
        "Open a project folder",
    ]);
    desk.xdotool(&["windowfocus", "--sync", &dialog]);
    desk.xdotool(&["key", "--clearmodifiers", "ctrl+l"]);
    desk.xdotool(&["type", "--delay", "2", ws.to_str().unwrap()]);
    desk.screen("folder-1-chooser");
    desk.xdotool(&["key", "Return"]);
    // A session in that folder opens.
    app.wait_text("[data-testid=session].current", "").await;
    let listed = desk.cli(&["sessions"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains(ws.to_str().unwrap()), "{listed}");
    app.el(&format!("nav.sessions .ws[title='{}']", ws.display()))
        .await;
    app.shot("folder-2-session-opened").await;

    // While the window has the focus, a plan ready for review raises no notification…
    let window = desk.xdotool(&["search", "--onlyvisible", "--name", "^Waymark$"]);
    desk.xdotool(&["windowfocus", "--sync", &window]);
    app.send_with_plan_chip("Plan the change").await;
    app.wait_text("[data-testid=plan-doc]", "Draft 1").await;
    app.el("[data-testid=approval-bar]").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !desk.notifications().contains("Plan ready for review"),
        "{}",
        desk.notifications()
    );
    app.click("[data-testid=defer]").await;
    app.wait_gone("[data-testid=approval-bar]").await;

    // …but when another window has it, the next draft does.
    let _other = harness::spawn(
        std::process::Command::new("display")
            .args(["-size", "320x200", "-title", "elsewhere", "xc:lightgray"])
            .env("DISPLAY", &desk.display)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let elsewhere = desk.xdotool(&["search", "--sync", "--onlyvisible", "--name", "elsewhere"]);
    desk.xdotool(&["windowfocus", "--sync", &elsewhere]);
    app.type_into("[data-testid=composer]", "Add a rollback step\u{E007}")
        .await;
    desk.wait_notification("Plan ready for review").await;
    app.wait_text("[data-testid=plan-doc]", "Draft 2").await;
    app.el("[data-testid=approval-bar]").await;
    desk.screen("folder-3-plan-notification");
    assert!(
        desk.notifications()
            .contains("Plan ready for review — Plan the change"),
        "the notification names the session by its title: {}",
        desk.notifications()
    );
    app.close().await;
}

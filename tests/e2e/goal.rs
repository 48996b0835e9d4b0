//! The Goal tab following a scripted goal run, and its controls.

use super::*;

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
    ended(&out, 5);
    let app = desk.launch().await;
    // Notifications are for a window in the background.
    let _other = desk.focus_elsewhere();
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
    app.wait_text(
        "[data-testid=goal-timeline]",
        "Resumed with a larger budget",
    )
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
    app.wait_text("[data-testid=goal-timeline]", "Resumed")
        .await;
    // Clear asks first; "Keep it" keeps the goal, "Clear the goal" clears it.
    app.click("[data-testid=goal-clear]").await;
    app.el("[data-testid=goal-clear-confirm]").await;
    app.click("[data-testid=goal-clear-no]").await;
    app.wait_gone("[data-testid=goal-clear-confirm]").await;
    assert!(app.exists("[data-testid=goal-objective]").await);
    app.click("[data-testid=goal-clear]").await;
    app.click("[data-testid=goal-clear-yes]").await;
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

/// A goal running when the app closes is paused, and when the app opens again it says so
/// with a banner and waits: it resumes only from the banner's button (G-24).
#[tokio::test(flavor = "multi_thread")]
async fn a_goal_stopped_by_closing_the_app_waits_with_a_banner() {
    let desk = Desk::start();
    let ws = workspace(&desk, "closing");
    let out = desk.exec(
        &ws,
        &script("goal_slow.json"),
        &["--permission", "auto", "Hello"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.type_into("[data-testid=composer]", "/goal keep checking the folder")
        .await;
    app.click("[data-testid=send]").await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-status]", "active").await;
    app.quit().await;

    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    let banner = app
        .wait_text(
            "[data-testid=goal-stopped-banner]",
            "stopped when Waymark closed",
        )
        .await;
    assert!(banner.contains("keep checking the folder"), "{banner}");
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-status]", "paused").await;
    app.shot("goal-2-stopped-by-closing").await;
    app.click("[data-testid=goal-stopped-resume]").await;
    app.wait_text("[data-testid=goal-status]", "active").await;
    app.wait_js(
        "return document.querySelector('[data-testid=goal-stopped-banner]') === null",
        "the banner to go once the goal resumed",
    )
    .await;
    app.quit().await;
}

/// A goal stopped by the provider's rate limit counts down in the Goal tab and resumes by
/// itself when the limit resets (actor `system`); once the automatic resumes are used up it
/// stays limited, raises a notification on the private bus, and "Resume now" carries on.
#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_goal_counts_down_resumes_by_itself_then_notifies_at_the_cap() {
    let desk = Desk::start();
    let ws = workspace(&desk, "limits");
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(
        desk.settings_file(),
        r#"{"goal": {"verification": "none", "usage_limit": {"auto_resumes": 1}}}"#,
    )
    .unwrap();
    succeeded(&desk.exec(
        &ws,
        &script("goal_limit.json"),
        &["--permission", "auto", "Hello"],
    ));
    let app = desk.launch().await;
    // Notifications are for a window in the background.
    let _other = desk.focus_elsewhere();
    app.el("[data-testid=session].current").await;
    app.type_into("[data-testid=composer]", "/goal File both notes")
        .await;
    app.click("[data-testid=send]").await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-status]", "usage limited")
        .await;
    let counting = app
        .wait_text("[data-testid=goal-limit-text]", "Resumes by itself in")
        .await;
    assert!(counting.contains("automatic resume 1 of 1"), "{counting}");
    let first = app
        .js("return Number(document.querySelector('[data-testid=goal-limit]')?.dataset.left ?? -1)")
        .await
        .as_i64()
        .unwrap();
    assert!((1..=6).contains(&first), "{first}");
    app.shot("goal-4-usage-limit-countdown").await;
    // The countdown moves…
    app.wait_js(
        &format!("return Number(document.querySelector('[data-testid=goal-limit]')?.dataset.left ?? 99) < {first}"),
        "the countdown to tick",
    )
    .await;
    // …and at the reset the system resumes the goal; the provider limits it again, and with
    // the one automatic resume used it stays limited and notifies.
    app.wait_text("[data-testid=goal-timeline]", "Resumed")
        .await;
    let stuck = app
        .wait_text(
            "[data-testid=goal-limit-text]",
            "No automatic resumes left (1 in a row allowed)",
        )
        .await;
    assert!(stuck.contains("The limit resets at"), "{stuck}");
    let timeline = app.text("[data-testid=goal-timeline]").await;
    assert!(timeline.contains("Waymark"), "{timeline}");
    assert!(
        app.js("return document.querySelector('[data-testid=goal-cancel-auto]') === null")
            .await
            .as_bool()
            .unwrap()
    );
    desk.wait_notification("Goal stopped: usage limit").await;
    assert!(
        desk.notifications()
            .contains("no automatic resumes are left (1 in a row allowed)"),
        "{}",
        desk.notifications()
    );
    app.shot("goal-5-usage-limit-used-up").await;
    desk.screen("goal-6-usage-limit-notification");
    app.click("[data-testid=goal-resume-now]").await;
    app.wait_text("[data-testid=goal-status]", "complete").await;
    app.quit().await;
}

/// G-44: an alert switched off in Settings gives no notification. The goal's state still
/// shows in the window; only the interruption goes.
#[tokio::test(flavor = "multi_thread")]
async fn an_alert_switched_off_in_settings_gives_no_notification() {
    let desk = Desk::start();
    let ws = workspace(&desk, "quiet");
    let out = desk.exec(
        &ws,
        &script("goal_budget.json"),
        &["--permission", "auto", "/goal Do the two steps budget=5K"],
    );
    ended(&out, 5);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.click("[data-testid=open-settings]").await;
    app.click("[data-testid=alert-goal_paused]").await;
    app.click("[data-testid=settings-save]").await;
    app.el("[data-testid=settings-saved]").await;
    app.shot("alerts-1-goal-paused-off").await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(desk.settings_file()).unwrap()).unwrap();
    assert_eq!(saved["notifications"]["goal_paused"], false, "{saved}");
    assert_eq!(saved["notifications"]["goal_blocked"], true, "{saved}");
    app.click("[data-testid=open-settings]").await;

    // In the background, the goal resumes with a larger budget, then the breaker pauses it.
    let _other = desk.focus_elsewhere();
    app.click("[data-testid=tab-goal]").await;
    app.click("[data-testid=goal-budget]").await;
    app.type_into("[data-testid=budget-tokens]", "20K").await;
    app.click("[data-testid=budget-save]").await;
    app.wait_text("[data-testid=goal-status]", "paused").await;
    app.wait_text("[data-testid=goal-reason]", "no progress")
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !desk.notifications().contains("Goal paused"),
        "switched off, yet notified: {}",
        desk.notifications()
    );
    app.shot("alerts-2-paused-quietly").await;
    app.quit().await;
}

/// Issue 38, item 10: the dialog for a goal the agent proposes offers the permission mode of
/// the goal's run; the mode chosen is the session's before the goal's first turn.
#[tokio::test(flavor = "multi_thread")]
async fn a_proposed_goal_is_set_with_the_permission_mode_chosen_in_its_dialog() {
    let desk = Desk::start();
    let ws = workspace(&desk, "proposal");
    let out = desk.exec(&ws, &script("chat.json"), &["Hello"]);
    succeeded(&out);
    let id = session_of(&out);
    let app = desk.launch().await;
    app.open_session(&id).await;
    app.pick_other_model(&script("goal_proposal.json")).await;
    app.type_into("[data-testid=composer]", "Tidy up my notes\u{E007}")
        .await;
    app.wait_text("[role=dialog]", "Tidy the notes folder")
        .await;
    let shown = app
        .js("return document.querySelector('[data-testid=goal-mode]').value")
        .await;
    assert_eq!(shown, "ask");
    app.js("const s = document.querySelector('[data-testid=goal-mode]'); s.value = 'auto-edit'; s.dispatchEvent(new Event('change', {bubbles: true})); return true")
        .await;
    app.shot("goal-4-proposal-mode").await;
    app.click("[data-testid=approve-goal]").await;
    app.wait_text("[data-testid=transcript]", "Tidying the notes.")
        .await;
    assert_eq!(listed_session(&desk, &id)["permission_mode"], "auto-edit");
    app.quit().await;
}

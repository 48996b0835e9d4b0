//! The window itself: the composer, Stop, the native folder chooser, notifications while
//! another window has the focus, the toast's place above the composer.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn composer_completes_slash_commands_and_stop_ends_the_turn() {
    let desk = Desk::start();
    let ws = workspace(&desk, "stop");
    std::fs::write(ws.join("AGENTS.md"), "Keep replies short.\n").unwrap();
    let out = desk.exec(&ws, &script("stop.json"), &["--permission", "auto", "Hi"]);
    succeeded(&out);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    // The page's JavaScript runs without JIT: the app sets it (this harness does not).
    let web_env = app.web_process_env();
    assert!(
        web_env.iter().any(|v| v == "JSC_useJIT=0"),
        "the web process runs with the JIT on: {:?}",
        web_env
            .iter()
            .filter(|v| v.starts_with("JSC_"))
            .collect::<Vec<_>>()
    );

    // The instruction file the session started with is named above the transcript.
    app.wait_text("[data-testid=instructions]", "Follows AGENTS.md")
        .await;
    app.click("[data-testid=instructions] summary").await;
    app.wait_text("[data-testid=instructions]", "project · 20 bytes")
        .await;
    app.shot("instructions-1-listed").await;

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
    desk.choose_folder(&ws, Some("folder-1-chooser"));
    // A session in that folder opens.
    app.wait_text("[data-testid=session].current", "").await;
    let listed = desk.cli(&["sessions"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains(ws.to_str().unwrap()), "{listed}");
    app.el(&format!("nav.sessions .ws[title='{}']", ws.display()))
        .await;
    app.shot("folder-2-session-opened").await;

    // While the window has the focus, a plan ready for review raises no notification…
    desk.focus_app();
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
    let _other = desk.focus_elsewhere();
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

/// Where the toast whose text contains `needle` is, against the composer's dock (the
/// composer and the bar above it) and the center column; null while there is none.
fn toast_place(needle: &str) -> String {
    format!(
        "const t = [...document.querySelectorAll('[data-testid=toast]')].find(e => e.textContent.includes({needle:?})); \
         const d = document.querySelector('[data-testid=composer-dock]'); \
         if (!t || !d) return null; \
         const box = e => {{ const r = e.getBoundingClientRect(); return {{ left: r.left, top: r.top, right: r.right, bottom: r.bottom }}; }}; \
         const toast = box(t), dock = box(d), center = box(document.querySelector('main.center')); \
         const overlaps = toast.left < dock.right && toast.right > dock.left && toast.top < dock.bottom && toast.bottom > dock.top; \
         return {{ overlaps, above: toast.bottom <= dock.top, within: toast.left >= center.left && toast.right <= center.right, \
                  toast, dock, center, window: [innerWidth, innerHeight] }};"
    )
}

/// The toast a blocked goal raises sits above the composer and inside the center column, at
/// the window's size at start and at smaller and larger ones (each later toast is the refusal
/// of an unknown command, a tall one that lists the commands). Before, it sat at a fixed
/// height over the window's bottom edge, centered on the window: over the side panel in a
/// narrow window, and over the composer once that grew past the gap.
#[tokio::test(flavor = "multi_thread")]
async fn the_goal_blocked_toast_never_covers_the_composer() {
    let desk = Desk::start();
    // First run: the offline demo, whose goal session opens first and ends blocked; the
    // window has the focus, so that is said by a toast.
    let app = desk.launch().await;
    desk.focus_app();
    app.start_demo().await;
    let place = app
        .wait_js(&toast_place("Goal blocked"), "the goal-blocked toast")
        .await;
    assert_eq!(place["overlaps"], false, "{place}");
    assert_eq!(place["above"], true, "{place}");
    assert_eq!(place["within"], true, "{place}");
    app.shot("toast-1-goal-blocked").await;

    // Resized as a window manager would, with real X requests to the app's window.
    let window = desk.xdotool(&["search", "--onlyvisible", "--name", "^Waymark$"]);
    let mut sizes = Vec::new();
    for (w, h) in [(900u32, 560u32), (1100, 680), (1440, 900)] {
        // No `--sync`: the page's own size is waited for below.
        desk.xdotool(&["windowsize", &window, &w.to_string(), &h.to_string()]);
        let seen = app
            .wait_js(
                &format!("return window.innerWidth <= {w} && window.innerWidth > {w} - 80 && [innerWidth, innerHeight]"),
                "the window to take its new size",
            )
            .await;
        sizes.push(seen.to_string());
        app.type_into("[data-testid=composer]", "/nosuch\u{E007}")
            .await;
        let place = app
            .wait_js(
                &toast_place("unknown command"),
                "the unknown command's toast",
            )
            .await;
        assert_eq!(place["overlaps"], false, "at {w}x{h}: {place}");
        assert_eq!(place["above"], true, "at {w}x{h}: {place}");
        assert_eq!(place["within"], true, "at {w}x{h}: {place}");
        app.shot(&format!("toast-2-at-{w}x{h}")).await;
        app.wait_gone("[data-testid=toast]").await;
    }
    sizes.dedup();
    assert_eq!(sizes.len(), 3, "the window did not resize: {sizes:?}");
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_alert_is_a_toast_while_the_window_has_the_focus_and_never_also_a_notification() {
    let desk = Desk::start();
    let app = desk.launch().await;
    app.el("[data-testid=setup-card]").await;
    desk.focus_app();
    // The goal demo gets blocked and asks a question: said in the window, with the question…
    app.start_demo().await;
    let said = app.wait_text("[data-testid=toast]", "Goal blocked").await;
    assert!(said.contains("It asks:"), "{said}");
    app.shot("alert-1-toast-while-focused").await;
    // …and not a second time by the desktop.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !desk.notifications().contains("Goal blocked"),
        "{}",
        desk.notifications()
    );
    app.close().await;
}

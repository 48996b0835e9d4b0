//! Every control shows what the store holds: the header's pickers after quick switches
//! across new sessions.

use super::*;
use fantoccini::key::Key;

/// The permission mode the store holds for `id`, as `waymark sessions --json` lists it.
fn stored_mode(desk: &Desk, id: &str) -> String {
    let out = desk.cli(&["sessions", "--json"]);
    succeeded(&out);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {listed}"));
    found["permission_mode"].as_str().unwrap().to_string()
}

/// The open session's id and the mode its header's picker shows.
async fn shown(app: &App) -> (String, String) {
    let v = app
        .js("return [document.querySelector('[data-testid=session].current')?.dataset.sessionId ?? null, document.querySelector('[data-testid=mode-picker]').value]")
        .await;
    (
        v[0].as_str().unwrap_or_default().to_string(),
        v[1].as_str().unwrap().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mode_picker_never_shows_a_mode_the_session_is_not_in() {
    let desk = Desk::start();
    let ws = workspace(&desk, "picker");
    succeeded(&desk.exec(&ws, &script("chat.json"), &["Hello"]));
    desk.write_settings(&serde_json::json!({ "model": script("chat.json") }));
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    for round in 0..3 {
        // Another model through "Other model…", then "Allow everything", then a new
        // session at once, and the same there.
        for _ in 0..2 {
            let (before, _) = shown(&app).await;
            app.pick_other_model(&script("blocked.json")).await;
            app.click("[data-testid=mode-picker] option[value=auto]")
                .await;
            app.chord(Key::Control, 'n').await;
            // The next clicks go to the new session as soon as the window has it open.
            app.wait_js(
                &format!("return (document.querySelector('[data-testid=session].current')?.dataset.sessionId ?? '{before}') !== '{before}' || null"),
                "the new session open",
            )
            .await;
        }
        // Settled: whatever each click did, the picker shows the store.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let (id, mode) = shown(&app).await;
        assert!(!id.is_empty(), "round {round}: no session open");
        assert_eq!(
            mode,
            stored_mode(&desk, &id),
            "round {round}: picker vs store for {id}"
        );
    }
    app.shot("truth-1-picker-agrees").await;
    app.close().await;
}

/// A running command's output shows in the transcript as it arrives, not behind a click and
/// not only at its end.
#[tokio::test(flavor = "multi_thread")]
async fn a_running_command_streams_its_output_into_the_transcript() {
    let desk = Desk::start();
    let ws = workspace(&desk, "ticks");
    // The script goes on from the replies the session already has: the first is the chat's.
    succeeded(&desk.exec(
        &ws,
        &script("chat.json"),
        &["--permission", "auto", "Hello"],
    ));
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.pick_other_model(&script("ticks.json")).await;
    app.wait_text(
        "[data-testid=transcript]",
        "Now on Offline script (ticks.json)",
    )
    .await;
    app.type_into("[data-testid=composer]", "Count again\u{E007}")
        .await;
    // The call is running: its first lines show while it still runs (six lines a second
    // apart), in the transcript itself.
    app.wait_js(
        "return document.querySelector('[data-testid=tool-live]') ? true : null",
        "the running command's live output",
    )
    .await;
    let started = Instant::now();
    let live = app
        .wait_js(
            "const l = document.querySelector('[data-testid=tool-live]'); return l && l.textContent.includes('tick 1') ? l.textContent : null",
            "the first line",
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the first line took {:?}",
        started.elapsed()
    );
    assert!(!live.as_str().unwrap().contains("tick 6"), "{live}");
    app.shot("truth-2-live-command-output").await;
    app.wait_text("[data-testid=transcript]", "Counted to six.")
        .await;
    assert!(!app.exists("[data-testid=tool-live]").await);
    app.close().await;
}

/// A refused model switch stays beside the picker until dismissed; a provider written into
/// the settings file while the app runs is usable at once, without a restart.
#[tokio::test(flavor = "multi_thread")]
async fn a_provider_added_to_the_file_while_the_app_runs_is_usable_at_once() {
    let desk = Desk::start();
    let ws = workspace(&desk, "later");
    succeeded(&desk.exec(&ws, &script("chat.json"), &["Hello"]));
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.pick_other_model("lab:m1").await;
    app.wait_text("[data-testid=switch-refused]", "lab").await;
    // Said in full, inside the window, its dismiss button in reach.
    let inside = app
        .js("const r = document.querySelector('[data-testid=switch-refused-dismiss]').getBoundingClientRect(); return r.right <= innerWidth && r.bottom <= innerHeight && r.width > 0")
        .await;
    assert_eq!(inside, true);
    app.shot("truth-3-refused-switch").await;
    // Still there a while later, until dismissed.
    tokio::time::sleep(Duration::from_secs(9)).await;
    assert!(app.exists("[data-testid=switch-refused]").await);
    app.click("[data-testid=switch-refused-dismiss]").await;
    app.wait_gone("[data-testid=switch-refused]").await;
    app.press(fantoccini::key::Key::Escape).await;
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(
        desk.settings_file(),
        serde_json::json!({"providers": {"lab": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}}})
            .to_string(),
    )
    .unwrap();
    app.wait_text("[data-testid=toast]", "in force now").await;
    app.pick_other_model("lab:m1").await;
    app.wait_text("[data-testid=transcript]", "Now on lab:m1")
        .await;
    assert!(!app.exists("[data-testid=switch-refused]").await);
    app.close().await;
}

/// A call the goal's budget would refuse is never asked about: in `ask` mode, once the
/// tokens are used up, the write is refused at once and no permission question opens.
#[tokio::test(flavor = "multi_thread")]
async fn no_permission_question_for_a_call_the_budget_would_refuse() {
    let desk = Desk::start();
    let ws = workspace(&desk, "spent");
    // The script goes on from the replies the session already has: the first is the chat's.
    succeeded(&desk.exec(&ws, &script("chat.json"), &["--permission", "ask", "Hello"]));
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.pick_other_model(&script("budget_refuse.json")).await;
    app.wait_text(
        "[data-testid=transcript]",
        "Now on Offline script (budget_refuse.json)",
    )
    .await;
    app.type_into(
        "[data-testid=composer]",
        "/goal Write the file budget=1K\u{E007}",
    )
    .await;
    app.wait_text("[data-testid=transcript]", "Summary: nothing written.")
        .await;
    assert!(
        !app.exists("[data-testid=question-dialog]").await,
        "asked about a call the budget refuses"
    );
    assert!(!ws.join("a.txt").exists());
    app.shot("truth-4-budget-refused-unasked").await;
    app.close().await;
}

/// A turn whose model cannot be reached is said in words with a next step (issue 37, 7):
/// "Could not reach lab at 127.0.0.1:9 — is it running?" with Open settings and Retry, the
/// raw error in a closed fold; Retry and Edit & resend stay after a switch of model, and Open
/// settings opens Settings.
#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_cannot_be_reached_is_said_in_words_with_a_next_step() {
    let desk = Desk::start();
    // Port 9 on loopback: nothing listens there, so the connection is refused.
    desk.write_settings(&serde_json::json!({"providers": {
        "lab": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}
    }}));
    let ws = workspace(&desk, "unreachable");
    succeeded(&desk.exec(&ws, &script("chat.json"), &["Hello"]));
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    let switch = |spec: &'static str| {
        let app = &app;
        async move {
            app.pick_other_model(spec).await;
            app.wait_text("[data-testid=transcript]", &format!("Now on {spec}"))
                .await;
        }
    };
    switch("lab:m1").await;
    app.type_into("[data-testid=composer]", "Say hello\u{E007}")
        .await;
    app.wait_text(
        "[data-testid=transcript]",
        "Could not reach lab at 127.0.0.1:9 — is it running?",
    )
    .await;
    for button in ["retry", "edit-resend", "error-settings"] {
        assert!(
            app.exists(&format!("[data-testid={button}]")).await,
            "no {button} button"
        );
    }
    // The runtime's own words wait in a closed fold.
    let fold = app
        .js("const d = [...document.querySelectorAll('[data-testid=chip-detail]')].at(-1); return d ? d.open : null")
        .await;
    assert_eq!(fold, false, "the raw error is in a closed fold");
    app.shot("truth-7-error-next-step").await;
    desk.resize(&app, 900, 600).await;
    app.shot("truth-7-error-next-step-900x600").await;
    // Another model: the failed message can still be sent again.
    switch("lab:m2").await;
    assert!(app.exists("[data-testid=retry]").await);
    assert!(app.exists("[data-testid=edit-resend]").await);
    app.click("[data-testid=error-settings]").await;
    app.el("[data-testid=settings]").await;
    app.close().await;
}

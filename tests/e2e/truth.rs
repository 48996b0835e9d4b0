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
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(
        desk.settings_file(),
        serde_json::json!({ "model": script("chat.json") }).to_string(),
    )
    .unwrap();
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    for round in 0..3 {
        // Another model through "Other model…", then "Allow everything", then a new
        // session at once, and the same there.
        for _ in 0..2 {
            let (before, _) = shown(&app).await;
            app.click("[data-testid=model-picker] option[value=__other__]")
                .await;
            app.type_into("[data-testid=model-other]", &script("blocked.json"))
                .await;
            app.type_more("[data-testid=model-other]", "\u{E007}").await;
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

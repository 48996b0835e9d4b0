//! A hook's run shows in the transcript as one line: its event, command, where it is set,
//! and what it decided; a hook that refuses a call says so, and the call shows refused.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_hooks_run_shows_as_one_line_in_the_transcript() {
    let desk = Desk::start();
    desk.write_settings(&serde_json::json!({"hooks": {
        "import_claude": false,
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "grep -q 'rm -rf' && { echo 'rm is not allowed here' >&2; exit 2; }; exit 0"}]}]
    }}));
    let ws = workspace(&desk, "hooks");
    std::fs::create_dir_all(ws.join("build")).unwrap();
    let out = desk.exec(
        &ws,
        &script("hook.json"),
        &["--permission", "auto", "Clean the build folder"],
    );
    succeeded(&out);
    assert!(ws.join("build").exists(), "the hook did not stop the rm");
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    let line = app
        .wait_text("[data-testid=transcript]", "Hook PreToolUse")
        .await;
    assert!(line.contains("(settings): block"), "{line}");
    app.wait_text("[data-testid=transcript]", "the build folder stays")
        .await;
    app.shot("hooks-1-blocked").await;
    app.close().await;
}

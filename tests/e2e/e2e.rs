//! End-to-end tests of the desktop app: the real binary in a real WebKitGTK window under
//! Xvfb, driven over WebDriver; the model is the offline scripted one. Every test saves
//! screenshots to target/e2e-screenshots/.

mod a11y;
mod blocked;
mod checks;
mod commands;
mod composer;
mod demo;
mod demo_paths;
mod draft;
mod goal;
mod harness;
mod hooks;
mod images;
mod keys;
mod layout;
mod mcp;
mod plan;
mod queue;
mod safety;
mod sessions;
mod settings;
mod setup;
mod state;
mod subagent;
mod transcript;
mod truth;
mod wait;
mod window;

use harness::{App, Desk, root, session_of};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn script(name: &str) -> String {
    format!(
        "scripted:{}",
        root().join("tests/e2e/scripts").join(name).display()
    )
}

/// Asserts that a CLI run succeeded (its stderr in the failure message).
fn succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts that a CLI run ended with exit code `code` (G-42: 3 a goal blocked on you, 5 its
/// budget spent, 6 paused).
fn ended(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Session `id` as `waymark sessions --json` lists it (what the store holds).
fn listed_session(desk: &Desk, id: &str) -> serde_json::Value {
    let out = desk.cli(&["sessions", "--json"]);
    succeeded(&out);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    listed
        .as_array()
        .and_then(|all| all.iter().find(|s| s["id"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("session {id} is not listed: {listed}"))
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
    (session_of(&out), ws)
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

/// The id of the questionnaire a session waits on (from `waymark show --json`).
fn pending_questionnaire_of(desk: &Desk, id: &str) -> String {
    let out = desk.cli(&["show", "--session", id, "--json"]);
    succeeded(&out);
    let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    show["questionnaires"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["status"] == "pending")
        .and_then(|q| q["id"].as_str())
        .expect("a pending questionnaire")
        .to_string()
}

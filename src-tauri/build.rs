/// Every IPC command the webview may call; each gets an `allow-<name>` permission that
/// capabilities/default.json grants (a command missing there is refused at runtime).
const COMMANDS: &[&str] = &[
    "app_info",
    "list_sessions",
    "pick_workspace",
    "create_session",
    "open_session",
    "session_events",
    "submit",
    "answer",
    "stop",
    "edit_plan",
    "plan_view",
    "plan_diff",
    "goal_timeline",
    "get_settings",
    "save_settings",
    "set_api_key",
    "delete_api_key",
    "open_link",
    "start_demo",
];

fn main() {
    // Reads src-tauri/tauri.conf.json (a symlink to the top-level one) and capabilities/*.json.
    let attrs = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(e) = tauri_build::try_build(attrs) {
        eprintln!("tauri build script: {e:#}");
        std::process::exit(1);
    }
}

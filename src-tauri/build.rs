/// Every IPC command the webview may call: the one list. Each gets an `allow-<name>`
/// permission, and capabilities/default.json (granting exactly these) is written from it
/// below. `collect_commands!` in src/lib.rs must register the same commands; a test checks
/// it against the generated bindings.
const COMMANDS: &[&str] = &[
    "app_info",
    "list_sessions",
    "search_sessions",
    "pick_workspace",
    "create_session",
    "open_session",
    "rename_session",
    "workspace_files",
    "delete_session",
    "drop_blank_session",
    "session_events",
    "submit",
    "answer",
    "stop",
    "edit_plan",
    "review_plan_again",
    "plan_view",
    "plan_diff",
    "plan_revision",
    "render_markdown",
    "export_plan",
    "goal_timeline",
    "goal",
    "parse_goal",
    "draft_goal",
    "get_settings",
    "save_settings",
    "mcp_servers",
    "mcp_prompts",
    "mcp_add_server",
    "mcp_remove_server",
    "mcp_set_enabled",
    "mcp_set_read_only",
    "set_permission_mode",
    "set_model",
    "test_model_setup",
    "list_setup_models",
    "save_model_setup",
    "set_api_key",
    "delete_api_key",
    "open_link",
    "start_demo",
    "ui_state_get",
    "ui_state_set",
    "checkpoints",
    "rewind_preview",
    "rewind",
    "worktree",
    "worktree_diff",
    "worktree_merge",
    "worktree_discard",
    "create_worktree_session",
    "approve_in_worktree",
    "goal_board",
    "board_reply",
    "board_goal",
    "daily_spend",
];

/// What the main window may use besides the commands: event listening, the read-only
/// notification-permission query the notification plugin's own page script makes on load.
/// The window's state goes through `ui_state_get` and `ui_state_set` (src/ui_state.rs),
/// which take only known keys within size limits; the store plugin that holds it is loaded,
/// but none of its commands is granted to the page.
const EXTRA_PERMISSIONS: &[&str] = &[
    "core:event:allow-listen",
    "core:event:allow-unlisten",
    "notification:allow-is-permission-granted",
];

/// The capability file, from `COMMANDS`; rewritten only when it changes.
fn write_capability() {
    let mut permissions: Vec<String> = EXTRA_PERMISSIONS.iter().map(|p| p.to_string()).collect();
    permissions.extend(
        COMMANDS
            .iter()
            .map(|c| format!("allow-{}", c.replace('_', "-"))),
    );
    let list = permissions
        .iter()
        .map(|p| format!("    \"{p}\""))
        .collect::<Vec<_>>()
        .join(",\n");
    let text = format!(
        r#"{{
  "$schema": "../gen/schemas/desktop-schema.json",
  "identifier": "default",
  "description": "The main window: Waymark's own commands and event listening. No plugin is reachable from the webview (notifications, settings, dialogs and links go through the commands), except the read-only notification-permission query the notification plugin's own page script makes when the page loads. The window's state goes through ui_state_get and ui_state_set, which take only its known keys. Written by build.rs from its command list: do not edit.",
  "windows": [
    "main"
  ],
  "permissions": [
{list}
  ]
}}
"#
    );
    let path = std::path::Path::new("capabilities/default.json");
    if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str())
        && let Err(e) = std::fs::write(path, text)
    {
        eprintln!("cannot write {}: {e}", path.display());
        std::process::exit(1);
    }
    // Packed relative relocations (DT_RELR, glibc 2.36+, binutils 2.38+): the loader reads
    // a few KiB instead of 1.3 MiB of relocation entries, and those pages stay out of memory.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
    {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

fn main() {
    write_capability();
    // Reads src-tauri/tauri.conf.json (a symlink to the top-level one) and capabilities/*.json.
    let attrs = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(e) = tauri_build::try_build(attrs) {
        eprintln!("tauri build script: {e:#}");
        std::process::exit(1);
    }
    // Packed relative relocations (DT_RELR, glibc 2.36+, binutils 2.38+): the loader reads
    // a few KiB instead of 1.3 MiB of relocation entries, and those pages stay out of memory.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
    {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

//! IPC tests through Tauri's mock runtime (no window) and the bindings check.

use super::*;

/// `cargo test export_bindings` regenerates ui/src/bindings.ts; the test script then fails
/// when the committed file differs.
#[test]
fn export_bindings_ts() {
    export_bindings(&specta_builder::<tauri::Wry>()).unwrap();
    let ts = std::fs::read_to_string(BINDINGS_PATH).unwrap();
    assert!(
        ts.contains("answer: (id: string, questionnaireId: string"),
        "{ts}"
    );
    assert!(ts.contains("sessionEvent"), "{ts}");
}

/// The build script's command list (which becomes the ACL) matches the registered commands,
/// and the capability grants exactly those plus event listening.
#[test]
fn capability_grants_exactly_the_registered_commands() {
    let build = include_str!("../build.rs");
    let list = build
        .split_once("const COMMANDS: &[&str] = &[")
        .and_then(|(_, rest)| rest.split_once("];"))
        .map(|(list, _)| list)
        .unwrap();
    let mut declared: Vec<String> = list
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix('"')?
                .strip_suffix("\",")
                .map(str::to_string)
        })
        .collect();
    declared.sort();
    let ts = std::fs::read_to_string(BINDINGS_PATH).unwrap();
    let mut registered: Vec<String> = ts
        .lines()
        .filter_map(|l| {
            let at = l.find("__TAURI_INVOKE")?;
            let rest = &l[at..];
            let start = rest.find("(\"")? + 2;
            Some(rest[start..start + rest[start..].find('"')?].to_string())
        })
        .collect();
    registered.sort();
    registered.dedup();
    assert_eq!(declared, registered);
    let cap: serde_json::Value =
        serde_json::from_str(include_str!("../capabilities/default.json")).unwrap();
    let mut granted: Vec<String> = cap["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    granted.sort();
    let mut expected: Vec<String> = declared
        .iter()
        .map(|c| format!("allow-{}", c.replace('_', "-")))
        .chain([
            "core:event:allow-listen".into(),
            "core:event:allow-unlisten".into(),
            // Asked by the notification plugin's page script on load; it only reads.
            "notification:allow-is-permission-granted".into(),
        ])
        .collect();
    expected.sort();
    assert_eq!(granted, expected);
}

/// The UI keeps the keys the app accepts, by the same names (ui_state.rs `KEYS`).
#[test]
fn the_ui_keeps_the_keys_the_app_accepts() {
    let ui = include_str!("../../ui/src/lib/uistate.ts");
    let line = ui
        .lines()
        .find(|l| l.starts_with("const KEYS = {"))
        .expect("ui/src/lib/uistate.ts declares `const KEYS = {`");
    let mut named: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
    let mut accepted = ui_state::KEYS.to_vec();
    named.sort();
    accepted.sort();
    assert_eq!(named, accepted);
}

#[cfg(target_os = "linux")]
#[test]
fn compositing_goes_off_only_without_a_gpu_render_node_and_without_a_user_choice() {
    use std::ffi::OsStr;
    let no_gpu = tempfile::tempdir().unwrap();
    std::fs::write(no_gpu.path().join("card0"), "").unwrap();
    let gpu = tempfile::tempdir().unwrap();
    std::fs::write(gpu.path().join("card0"), "").unwrap();
    std::fs::write(gpu.path().join("renderD128"), "").unwrap();
    let missing = no_gpu.path().join("no-such-dir");

    assert!(super::composite_on_cpu_only(None, no_gpu.path()));
    assert!(super::composite_on_cpu_only(None, &missing));
    assert!(!super::composite_on_cpu_only(None, gpu.path()));
    // The user's setting wins either way.
    assert!(!super::composite_on_cpu_only(
        Some(OsStr::new("0")),
        no_gpu.path()
    ));
    assert!(!super::composite_on_cpu_only(
        Some(OsStr::new("1")),
        gpu.path()
    ));
}

/// The web view's JavaScript runs without JIT unless the user chose otherwise; the user's
/// compositing choice is kept as it is.
#[cfg(target_os = "linux")]
#[test]
fn the_web_view_runs_without_jit_unless_the_user_turns_it_on() {
    let no_gpu = tempfile::tempdir().unwrap();
    let none = |_: &str| None;
    assert_eq!(
        super::webview_env(none, no_gpu.path()),
        [
            ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
            ("JSC_useJIT", "0")
        ]
    );
    let user = |name: &str| {
        ["JSC_useJIT", "WEBKIT_DISABLE_COMPOSITING_MODE"]
            .contains(&name)
            .then(|| "1".into())
    };
    assert!(super::webview_env(user, no_gpu.path()).is_empty());
}

/// A provider key stored in the keyring under any variable name is the one used: no `_KEY`
/// suffix is assumed. Names that hold no key never touch the keyring.
#[test]
fn keys_under_any_name_come_from_the_keyring_first() {
    let names = vec!["OPENAI_API_KEY".to_string(), "MOONSHOT_AUTH".to_string()];
    let asked = std::cell::RefCell::new(Vec::new());
    let keyring = |n: &str| {
        asked.borrow_mut().push(n.to_string());
        (n == "MOONSHOT_AUTH").then(|| "from-keyring".to_string())
    };
    let env = |n: &str| match n {
        "MOONSHOT_AUTH" | "OPENAI_API_KEY" | "OPENAI_BASE_URL" => Some(format!("env-{n}")),
        _ => None,
    };
    assert_eq!(
        read_var("MOONSHOT_AUTH", &names, keyring, env).as_deref(),
        Some("from-keyring")
    );
    assert_eq!(
        read_var("OPENAI_API_KEY", &names, keyring, env).as_deref(),
        Some("env-OPENAI_API_KEY")
    );
    assert_eq!(
        read_var("OPENAI_BASE_URL", &names, keyring, env).as_deref(),
        Some("env-OPENAI_BASE_URL")
    );
    assert_eq!(*asked.borrow(), ["MOONSHOT_AUTH", "OPENAI_API_KEY"]);
}

/// Agent messages render as the plans do: Markdown becomes HTML, and what a hostile model
/// writes as HTML (a script, an event handler, a `javascript:` link, a remote image) stays
/// inert. Too many messages at once, or one too long, are refused or left as plain text.
#[test]
fn agent_messages_render_with_the_plan_renderer_and_hostile_html_stays_inert() {
    use crate::commands::{
        RENDER_BATCH, RENDER_BATCH_BYTES, RENDER_CAP, render_all as render_markdown,
    };
    let hostile = "## Done\n\n- one\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn main() {}\n```\n\n<script>alert(1)</script><img src=\"https://evil.example/x.png\" onerror=\"alert(2)\"><a href=\"javascript:alert(3)\">x</a><div onclick=\"alert(4)\">y</div>";
    let out = render_markdown(vec![hostile.into(), "x".repeat(RENDER_CAP + 1)]).unwrap();
    let html = out[0].as_deref().unwrap();
    for kept in [
        "<h2>Done</h2>",
        "<li>one</li>",
        "<table>",
        "<code class=\"language-rust\">",
    ] {
        assert!(html.contains(kept), "{kept} missing: {html}");
    }
    // What the page would not show is behind a marker, as escaped text only.
    assert!(html.contains("plan-hidden-toggle"), "{html}");
    let mut shown = String::new();
    let mut rest = html;
    while let Some(at) = rest.find("class=\"plan-hidden-text\"") {
        shown.push_str(&rest[..at]);
        rest = &rest[at..];
        rest = rest.find("</code>").map_or("", |end| &rest[end..]);
    }
    shown.push_str(rest);
    for gone in [
        "<script",
        "onerror",
        "javascript:",
        "onclick",
        "evil.example",
        "<img",
    ] {
        assert!(!shown.contains(gone), "{gone} survived: {html}");
    }
    assert_eq!(out[1], None, "a message past the cap shows as plain text");
    let e = render_markdown(vec![String::new(); RENDER_BATCH + 1]).unwrap_err();
    assert_eq!(e.code, "too_large");
    // Many large messages at once: those past the batch's budget show as plain text.
    let big = "a".repeat(RENDER_CAP);
    let n = RENDER_BATCH_BYTES / RENDER_CAP + 2;
    let out = render_markdown(vec![big; n]).unwrap();
    let rendered = out.iter().filter(|h| h.is_some()).count();
    assert_eq!(rendered, RENDER_BATCH_BYTES / RENDER_CAP);
}

/// The window names each goal reason with the same words as the notifications.
#[test]
fn the_window_and_the_notifications_name_goal_reasons_alike() {
    let ts = include_str!("../../ui/src/lib/goal.ts");
    for r in waymark_protocol::GoalReason::ALL {
        let line = format!("{}: {:?},", r.as_str(), r.words());
        assert!(ts.contains(&line), "ui/src/lib/goal.ts lacks `{line}`");
    }
}

/// Only the app's own pages load in the window: a link in a reply or a plan (a phishing
/// page, a file, a data URL) never replaces the app.
#[test]
fn the_window_loads_only_the_apps_own_pages() {
    let ok = |u: &str| super::may_navigate(&tauri::Url::parse(u).unwrap());
    assert!(ok("tauri://localhost/index.html"));
    assert!(ok("http://tauri.localhost/"));
    for bad in [
        "https://evil.example/login",
        "http://localhost:8080/",
        "tauri://evil.example/",
        "file:///etc/passwd",
        "data:text/html,<script>1</script>",
        "javascript:alert(1)",
        "https://tauri.localhost.evil.example/",
    ] {
        assert!(!ok(bad), "{bad}");
    }
}

#[test]
fn the_folder_picker_opens_beside_the_newest_project_never_in_the_data_folder() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let data = root.join("data");
    let demo = data.join("demo/1/greet-plan-demo");
    let project = root.join("code/app");
    std::fs::create_dir_all(&demo).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let gone = root.join("removed/project");
    // Newest first: the demo's sample project, a folder since removed, then a real project.
    let listed = [demo.as_path(), gone.as_path(), project.as_path()];
    assert_eq!(
        commands::start_folder(listed.into_iter(), &data),
        Some(root.join("code"))
    );
    assert_eq!(
        commands::start_folder([demo.as_path()].into_iter(), &data),
        None
    );
}

/// Of a session the window does not show, the page gets only the events its lists react to:
/// every type the session list reloads on (store.ts) and the goal figures the board reads.
#[test]
fn the_page_gets_every_event_its_lists_react_to() {
    let store = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/lib/store.ts"),
    )
    .unwrap();
    let line = store
        .lines()
        .find(|l| l.contains("const shown: WireEvent[\"type\"][] = ["))
        .expect("the list's event types in store.ts");
    let names: Vec<&str> = line
        .split('"')
        .skip(3)
        .step_by(2)
        .filter(|n| n.contains('.'))
        .collect();
    assert!(names.len() >= 9, "{names:?}");
    for n in names.iter().chain(&["goal.updated", "turn.finished"]) {
        assert!(
            crate::forward::LISTED_EVENTS.contains(n),
            "{n} is not sent for sessions the window does not show"
        );
    }
    for n in ["assistant.delta", "tool.progress", "assistant.message"] {
        assert!(!crate::forward::LISTED_EVENTS.contains(&n), "{n}");
    }
}

//! Waymark's desktop app: a Tauri 2 window over `waymark-runtime`. Commands are thin (convert,
//! call the runtime, map the error); events reach the webview typed through tauri-specta.

pub mod alerts;
pub mod commands;
mod demo;
pub mod dto;
pub mod error;
pub mod events;
pub mod forward;
mod host;
pub mod mcp;
mod memory;
pub mod plan_watch;
pub mod safety;
pub mod settings;
pub mod settings_watch;
mod ui_state;

pub use host::Host;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tauri::{Manager, Runtime};
use tauri_specta::{Builder, Event as _, collect_commands, collect_events};
use waymark_runtime::{RuntimeOptions, paths, sandbox};

/// The commands and events the webview may use; the TypeScript bindings come from here.
pub fn specta_builder<R: Runtime>() -> Builder<R> {
    Builder::<R>::new()
        .commands(collect_commands![
            commands::app_info,
            commands::list_sessions,
            commands::search_sessions,
            commands::pick_workspace::<tauri::Wry>,
            commands::create_session::<tauri::Wry>,
            commands::open_session::<tauri::Wry>,
            commands::rename_session,
            commands::workspace_files::<tauri::Wry>,
            commands::delete_session,
            commands::drop_blank_session,
            commands::session_events,
            commands::submit,
            commands::answer,
            commands::stop,
            commands::edit_plan,
            commands::review_plan_again,
            commands::plan_view,
            commands::plan_diff,
            commands::plan_revision,
            commands::render_markdown,
            commands::export_plan,
            commands::goal_timeline,
            commands::goal,
            commands::parse_goal,
            commands::draft_goal,
            commands::get_settings,
            commands::save_settings,
            commands::set_permission_mode,
            commands::set_model,
            commands::test_model_setup,
            commands::list_setup_models,
            commands::save_model_setup,
            commands::set_api_key,
            commands::delete_api_key,
            commands::open_link::<tauri::Wry>,
            commands::start_demo::<tauri::Wry>,
            safety::checkpoints,
            safety::rewind_preview::<tauri::Wry>,
            safety::rewind,
            safety::worktree::<tauri::Wry>,
            safety::worktree_diff::<tauri::Wry>,
            safety::worktree_merge::<tauri::Wry>,
            safety::worktree_discard::<tauri::Wry>,
            safety::create_worktree_session::<tauri::Wry>,
            safety::approve_in_worktree::<tauri::Wry>,
            safety::goal_board,
            safety::board_reply::<tauri::Wry>,
            safety::board_goal::<tauri::Wry>,
            safety::daily_spend,
            mcp::mcp_servers,
            mcp::mcp_prompts,
            mcp::mcp_add_server,
            mcp::mcp_remove_server,
            mcp::mcp_set_enabled,
            mcp::mcp_set_read_only,
            ui_state::ui_state_get::<tauri::Wry>,
            ui_state::ui_state_set::<tauri::Wry>,
        ])
        .events(collect_events![
            events::SessionEvent,
            events::PlanFileChanged,
            events::FocusSession,
            events::AlertRaised
        ])
        // Sequence numbers, token counts and millisecond timestamps stay far below 2^53.
        .dangerously_cast_bigints_to_number()
}

/// Whether the window may load `url`: the app's own pages (the bundled UI; the Vite server
/// on loopback in a development build). Anything else opens in the system browser instead,
/// through `open_link`, when the user clicks it.
pub fn may_navigate(url: &tauri::Url) -> bool {
    match url.scheme() {
        "tauri" => url.host_str() == Some("localhost"),
        "http" | "https" => {
            url.host_str() == Some("tauri.localhost")
                || (cfg!(debug_assertions)
                    && url.host_str() == Some("localhost")
                    && url.port() == Some(5173))
        }
        _ => false,
    }
}

/// Where the generated bindings live (committed; a test fails when they are stale).
pub const BINDINGS_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../ui/src/bindings.ts");

/// The page is local: WebKit needs no page or resource caches sized for browsing.
#[cfg(target_os = "linux")]
fn lean_webview(window: &tauri::WebviewWindow<tauri::Wry>) {
    let _ = window.with_webview(|w| {
        use webkit2gtk::{CacheModel, SettingsExt, WebContextExt, WebViewExt};
        if let Some(ctx) = w.inner().context() {
            ctx.set_cache_model(CacheModel::DocumentViewer);
        }
        // `WAYMARK_WEB_CONSOLE=1`: the page's console messages go to stderr (diagnostics, and
        // the start-up benchmark, which launches the app without WebDriver).
        if std::env::var_os("WAYMARK_WEB_CONSOLE").is_some()
            && let Some(settings) = WebViewExt::settings(&w.inner())
        {
            settings.set_enable_write_console_messages_to_stdout(true);
        }
    });
}

/// Whether WebKit should draw without accelerated compositing: yes when there is no GPU
/// render node (Mesa would composite on the CPU through llvmpipe, which costs start-up time,
/// memory and scrolling frames), unless the user chose either way with
/// `WEBKIT_DISABLE_COMPOSITING_MODE` (`0` keeps compositing on).
#[cfg(target_os = "linux")]
fn composite_on_cpu_only(user_choice: Option<&std::ffi::OsStr>, dri: &std::path::Path) -> bool {
    if user_choice.is_some() {
        return false;
    }
    let has_render_node = std::fs::read_dir(dri).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("renderD"))
    });
    !has_render_node
}

/// What the app sets in its environment for WebKit before the window opens, each only when the
/// user has not set that variable:
/// - `WEBKIT_DISABLE_COMPOSITING_MODE=1` without a GPU render node (see
///   [`composite_on_cpu_only`]);
/// - `JSC_useJIT=0`: the page's JavaScript runs in JavaScriptCore's interpreter. The page is
///   small and does little per event, so the interpreter keeps up (plan repaint and a long
///   transcript are measured by `scripts/bench.sh --desktop`), while the web process is about
///   9 MB smaller and no JIT compiler is exposed to the model-written text the page shows.
///   `JSC_useJIT=1` turns the JIT back on.
#[cfg(target_os = "linux")]
fn webview_env(
    get: impl Fn(&str) -> Option<std::ffi::OsString>,
    dri: &std::path::Path,
) -> Vec<(&'static str, &'static str)> {
    let mut set = Vec::new();
    if composite_on_cpu_only(get("WEBKIT_DISABLE_COMPOSITING_MODE").as_deref(), dri) {
        set.push(("WEBKIT_DISABLE_COMPOSITING_MODE", "1"));
    }
    if get("JSC_useJIT").is_none() {
        set.push(("JSC_useJIT", "0"));
    }
    set
}

/// Writes the TypeScript bindings.
pub fn export_bindings<R: Runtime>(builder: &Builder<R>) -> anyhow::Result<()> {
    builder
        .export(specta_typescript::Typescript::default(), BINDINGS_PATH)
        .map_err(|e| anyhow::anyhow!("cannot write {BINDINGS_PATH}: {e}"))
}

/// Brings the window forward and tells the UI to show `session_id`.
pub fn focus_session<R: Runtime>(app: &tauri::AppHandle<R>, session_id: &str) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.unminimize();
        let _ = w.show();
        let _ = w.set_focus();
    }
    let _ = events::FocusSession {
        session_id: session_id.to_string(),
    }
    .emit(app);
}

fn data_dir() -> PathBuf {
    std::env::var_os("WAYMARK_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(paths::default_data_dir)
}

fn settings_file() -> PathBuf {
    std::env::var_os("WAYMARK_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(paths::default_config_file)
}

/// How the app reads a variable: a name the settings read an API key from — whatever it is
/// called — comes from the keyring first; everything else, and a key not in the keyring,
/// from the environment.
fn read_var(
    name: &str,
    key_names: &[String],
    keyring: impl Fn(&str) -> Option<String>,
    env: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let stored = if key_names.iter().any(|k| k == name) {
        keyring(name)
    } else {
        None
    };
    stored.or_else(|| env(name))
}

/// Runtime options of the app: API keys come from the OS keyring first, then the environment.
fn runtime_options(config: waymark_config::Config) -> RuntimeOptions {
    let mut opts = RuntimeOptions::new(data_dir(), config);
    // The window's views run while sessions work: they read through their own connections.
    opts.read_pool = true;
    opts.user_instructions = waymark_runtime::instructions::user_file(&settings_file());
    opts.settings_dir = settings_file().parent().map(std::path::Path::to_path_buf);
    opts.env = Arc::new(|name: &str| {
        // The settings in force name the key variables (they may change while running).
        let config = settings::load(&settings_file()).unwrap_or_default();
        read_var(
            name,
            &waymark_runtime::secrets::key_names(&config),
            |n| settings::Keyring::get(n).ok().flatten(),
            |n| std::env::var(n).ok(),
        )
    });
    if let Ok(exe) = std::env::current_exe() {
        opts.sandbox_helper = Some(vec![exe.into_os_string(), sandbox::HELPER_ARG.into()]);
    }
    if let Some(home) = std::env::var_os("HOME") {
        opts.cwd = PathBuf::from(home);
    }
    opts
}

/// The app's entry point (also the plan-mode sandbox helper when re-executed as one).
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()) == Some(sandbox::HELPER_ARG) {
        // The sandbox helper's streams are the command's.
        #[allow(clippy::disallowed_methods)]
        let code = sandbox::helper_main(&args[2..], &mut std::io::stdout(), &mut std::io::stderr());
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    // Before any other thread starts (the sandbox helper above runs alone and exits).
    memory::fewer_arenas();
    #[cfg(target_os = "linux")]
    for (name, value) in webview_env(
        |name| std::env::var_os(name),
        std::path::Path::new("/dev/dri"),
    ) {
        // SAFETY: no other thread exists yet (the app has not started), so nothing reads the
        // environment concurrently; WebKit reads these when it starts its web process.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var(name, value)
        };
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("waymark: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// SIGTERM or SIGINT (a logout, `kill`, Ctrl-C in a terminal) closes the app the normal way,
/// so open sessions are released and running goals pause as closed by the app.
#[cfg(unix)]
fn exit_on_signal<R: Runtime>(app: tauri::AppHandle<R>) {
    use tokio::signal::unix::{SignalKind, signal};
    tauri::async_runtime::spawn(async move {
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        app.exit(0);
    });
}

/// Puts hand edits of the settings file in force while the app runs, and says so in the
/// window (or why the file does not load).
fn watch_settings(app: &tauri::AppHandle) {
    use tauri_specta::Event;
    let host = app.state::<Host>();
    let (current, apply) = (app.clone(), app.clone());
    let watch = settings_watch::SettingsWatch::start(
        host.settings_path.clone(),
        move || {
            let host = current.state::<Host>();
            let saying = host
                .settings_error
                .lock()
                .map(|e| e.is_some())
                .unwrap_or(true);
            (!saying).then(|| (*host.runtime.config()).clone())
        },
        move |change| {
            let (title, body) = settings_watch::apply(&apply.state::<Host>(), change);
            let _ = events::AlertRaised {
                session_id: String::new(),
                title,
                body: waymark_protocol::display::escape_block(&body),
            }
            .emit(&apply);
        },
    );
    match watch {
        Ok(w) => host.keep_settings_watch(w),
        Err(e) => eprintln!("waymark: the settings file is not watched: {e}"),
    }
}

fn run() -> anyhow::Result<()> {
    let specta = specta_builder::<tauri::Wry>();
    let settings_path = settings_file();
    // A file that does not load keeps its spending limit in force (or holds the cap at $0).
    let (config, settings_error) = waymark_runtime::settings::load_guarded(&settings_path);
    let runtime = waymark_runtime::Runtime::open(runtime_options(config)).map_err(|e| {
        anyhow::anyhow!("cannot open the data folder {}: {e}", data_dir().display())
    })?;
    // The log (level from WAYMARK_LOG); a bad level is reported with the settings error.
    let secrets = runtime.redactor_source();
    let settings_error = match waymark_runtime::logging::init(&data_dir(), None, secrets) {
        Ok(()) => settings_error,
        Err(e) => Some(settings_error.map_or(e.to_string(), |s| format!("{s}; {e}"))),
    };
    // A value the file quotes back in its error may be a secret.
    let settings_error = settings_error.map(|e| runtime.redactor().redact(&e).into_owned());
    let host = Host::new(runtime, settings_path, settings_error);

    let app = tauri::Builder::default()
        // First: a second launch hands over to the running window.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Some(w) = app.get_webview_window("main") {
                let _ = w.unminimize();
                let _ = w.show();
                let _ = w.set_focus();
            }
        }))
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_store::Builder::new().build())
        // The window shows the app's own pages only: a link a model wrote never replaces it.
        .plugin(
            tauri::plugin::Builder::<tauri::Wry, ()>::new("navigation-guard")
                .on_navigation(|_, url| may_navigate(url))
                .build(),
        )
        .manage(host)
        .invoke_handler(specta.invoke_handler())
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::Focused(f) = event
                && let Some(h) = window.try_state::<Host>()
            {
                h.focused.store(*f, std::sync::atomic::Ordering::Relaxed);
            }
        })
        .setup(move |app| {
            specta.mount_events(app);
            // Before the page runs, so its first read finds the state.
            ui_state::open(app.handle(), &data_dir());
            #[cfg(unix)]
            exit_on_signal(app.handle().clone());
            #[cfg(target_os = "linux")]
            if let Some(w) = app.get_webview_window("main") {
                lean_webview(&w);
            }
            // The offline demo starts when the user asks for it on the setup card, or at once
            // with WAYMARK_DEMO=1 (the memory benchmark, a quick look).
            watch_settings(app.handle());
            let handle = app.handle().clone();
            if std::env::var_os("WAYMARK_DEMO").is_some_and(|v| v == "1") {
                tauri::async_runtime::spawn(async move {
                    let host = handle.state::<Host>();
                    if let Err(e) = demo::start(&handle, &host).await {
                        eprintln!("waymark: {}", e.message);
                    }
                });
            }
            Ok(())
        })
        .build(tauri::generate_context!())?;
    app.run(|app, event| {
        if let tauri::RunEvent::Exit = event {
            let host = app.state::<Host>();
            tauri::async_runtime::block_on(host.close_all());
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests;

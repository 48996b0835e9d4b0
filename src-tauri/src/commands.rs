//! The IPC commands: each converts its arguments, calls `waymark-runtime` and maps the error.
//! (`#[tauri::command]` functions live in a module: at the crate root they clash with the
//! macro's generated names.)

use crate::dto::{AppInfo, KeyStatus, SettingsView, SetupCheck, Submitted};
use crate::error::{IpcError, IpcResult};
use crate::host::Host;
use crate::settings::{self, Keyring};
use tauri::{AppHandle, State};
use waymark_config::Config;
use waymark_config::setup::{ModelSetup, SETUP_KEY};
use waymark_protocol::{
    Answer, Event, GoalOp, ImageInput, Intent, MessageSource, Op, PermissionMode, PlanDiff,
    PlanRevisionText, PlanView, Position, RevisionRef, SessionSummary, SessionView,
};
use waymark_runtime::SessionSpec;
use waymark_runtime::session::OpOutcome;

// Views and settings are async commands: they run on the async runtime, where the store's
// blocking calls step aside (`block_in_place`), never on the window's main thread.

/// How many events one read of the log returns.
const VIEW_EVENTS: u64 = 50_000;

/// How many of the newest events the view of a session being opened carries: enough for
/// the screen and the scroll above it, so a long session opens as fast as a short one; the
/// window then reads the rest of the log (`session_events` from the start).
const VIEW_NEWEST: u64 = 2_000;

#[tauri::command]
#[specta::specta]
pub fn app_info(host: State<'_, Host>) -> AppInfo {
    let config = host.runtime.config();
    let opts = host.runtime.options();
    AppInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        data_dir: opts.data_dir.display().to_string(),
        settings_file: host.settings_path.display().to_string(),
        demo: config.model.is_none(),
        default_model: config.model.clone(),
        settings_error: host
            .settings_error
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default(),
    }
}

#[tauri::command]
#[specta::specta]
pub async fn list_sessions(host: State<'_, Host>) -> IpcResult<Vec<SessionSummary>> {
    Ok(host.runtime.list_sessions()?)
}

/// Sessions whose messages (the user's, the agent's replies) hold `query`, newest first.
#[tauri::command]
#[specta::specta]
pub async fn search_sessions(host: State<'_, Host>, query: String) -> IpcResult<Vec<String>> {
    Ok(host.runtime.search_sessions(&query)?)
}

/// The folder picker behind "Open folder…"; `None` when the user cancels.
#[tauri::command]
#[specta::specta]
pub async fn pick_workspace<R: tauri::Runtime>(app: AppHandle<R>) -> Option<String> {
    use tauri::Manager;
    use tauri_plugin_dialog::DialogExt;
    let host = app.state::<Host>();
    // It opens beside the project used last (projects usually sit side by side), else in
    // the home folder — not in GTK's "Recent" list, which holds files, not projects, and
    // never in the app's own data folder (where the demo's sample projects live).
    let data_dir = host.runtime.options().data_dir.clone();
    let start = start_folder(
        host.runtime
            .list_sessions()
            .ok()
            .unwrap_or_default()
            .iter()
            .map(|s| std::path::Path::new(&s.workspace)),
        &data_dir,
    )
    .or_else(|| std::env::var_os("HOME").map(std::path::PathBuf::from));
    let mut dialog = app.dialog().file().set_title("Open a project folder");
    if let Some(dir) = start {
        dialog = dialog.set_directory(dir);
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    dialog.pick_folder(move |p| {
        let _ = tx.send(p.and_then(|p| p.into_path().ok()));
    });
    rx.await.ok().flatten().map(|p| p.display().to_string())
}

/// Where the folder picker opens: beside the newest workspace that is a folder outside the
/// app's data folder, if any.
pub(crate) fn start_folder<'a>(
    newest_first: impl Iterator<Item = &'a std::path::Path>,
    data_dir: &std::path::Path,
) -> Option<std::path::PathBuf> {
    let data_dir = data_dir
        .canonicalize()
        .unwrap_or_else(|_| data_dir.to_path_buf());
    newest_first
        .filter(|w| !w.starts_with(&data_dir))
        .filter_map(|w| w.parent().map(std::path::Path::to_path_buf))
        .find(|d| d.is_dir())
}

/// Creates a session in `workspace` (the settings' model unless `model` names one).
#[tauri::command]
#[specta::specta]
pub async fn create_session<R: tauri::Runtime>(
    app: AppHandle<R>,
    host: State<'_, Host>,
    workspace: String,
    model: Option<String>,
    permission_mode: Option<PermissionMode>,
) -> IpcResult<SessionView> {
    let id = host.create(
        &app,
        SessionSpec {
            workspace: Some(workspace.into()),
            model: model.filter(|m| !m.trim().is_empty()),
            permission_mode,
            hold: false,
        },
    )?;
    view(&app, &host, &id)
}

/// Workspace files whose path holds `query`, for `@` in the composer.
/// The walk runs on a thread for blocking work, never on the ones events go through.
#[tauri::command]
#[specta::specta]
pub async fn workspace_files<R: tauri::Runtime>(
    app: AppHandle<R>,
    id: String,
    query: String,
) -> IpcResult<Vec<String>> {
    use tauri::Manager as _;
    tauri::async_runtime::spawn_blocking(move || {
        Ok(app
            .state::<Host>()
            .runtime
            .workspace_files(&id, &query, 20)?)
    })
    .await
    .map_err(|e| IpcError::new("failed", e.to_string()))?
}

/// Gives a session the title the list shows.
#[tauri::command]
#[specta::specta]
pub async fn rename_session(host: State<'_, Host>, id: String, title: String) -> IpcResult<()> {
    Ok(host.runtime.rename_session(&id, &title)?)
}

/// Deletes a session and everything kept for it (closing it here first). The window asks
/// the user to confirm before calling this.
#[tauri::command]
#[specta::specta]
pub async fn delete_session(host: State<'_, Host>, id: String) -> IpcResult<()> {
    host.delete(&id).await
}

/// Deletes a session the window left while it was blank, if it still is: the app decides,
/// in the step that deletes it, so a message that reached it meanwhile keeps it. False: kept.
#[tauri::command]
#[specta::specta]
pub async fn drop_blank_session(host: State<'_, Host>, id: String) -> IpcResult<bool> {
    host.delete_blank(&id).await
}

/// Opens a session in this window (taking its lease) and returns what the window shows.
#[tauri::command]
#[specta::specta]
pub async fn open_session<R: tauri::Runtime>(
    app: AppHandle<R>,
    host: State<'_, Host>,
    id: String,
) -> IpcResult<SessionView> {
    host.open(&app, &id)?;
    view(&app, &host, &id)
}

pub(crate) fn view<R: tauri::Runtime>(
    app: &AppHandle<R>,
    host: &Host,
    id: &str,
) -> IpcResult<SessionView> {
    host.watch_plan(app, id)?;
    crate::memory::TRIM.request();
    // Shown from here: its events all go to the page (they may start before the view is
    // read; the page puts the two together by `seq`).
    let previous = host.show(id);
    match host.runtime.session_view(id, VIEW_NEWEST) {
        Ok(v) => Ok(v),
        Err(e) => {
            // The page goes on showing what it showed.
            host.show_again(previous);
            Err(e.into())
        }
    }
}

/// Logged events after `after` (the UI catches up after a gap).
#[tauri::command]
#[specta::specta]
pub async fn session_events(
    host: State<'_, Host>,
    id: String,
    after: u32,
) -> IpcResult<Vec<Event>> {
    crate::memory::TRIM.request();
    Ok(host.runtime.events(&id, u64::from(after), VIEW_EVENTS)?)
}

/// Sends a message (slash commands included). `plan`: the composer's "next message enters
/// Plan" chip (PM-4). `key` makes a retried send idempotent.
#[tauri::command]
#[specta::specta]
pub async fn submit(
    host: State<'_, Host>,
    id: String,
    text: String,
    intent: Option<Intent>,
    key: Option<String>,
    images: Vec<ImageInput>,
) -> IpcResult<Submitted> {
    let outcome = host
        .handle(&id)?
        .submit(Op::Submit {
            text,
            source: MessageSource::User,
            position: Position::Tail,
            idempotency_key: key,
            intent,
            images,
        })
        .await?;
    Ok(match outcome {
        OpOutcome::Admitted { message_id, .. } => Submitted::Admitted { message_id },
        OpOutcome::Command { output } => Submitted::Command { output },
        OpOutcome::Answered | OpOutcome::Done => Submitted::Command {
            output: String::new(),
        },
    })
}

/// Answers a questionnaire (plan approval, permission prompt, plan entry, goal approval).
#[tauri::command]
#[specta::specta]
pub async fn answer(
    host: State<'_, Host>,
    id: String,
    questionnaire_id: String,
    answer: Answer,
) -> IpcResult<()> {
    host.handle(&id)?
        .submit(Op::Answer {
            questionnaire_id,
            answer,
        })
        .await?;
    Ok(())
}

/// The Stop button: the running turn stops, the running tool is killed.
#[tauri::command]
#[specta::specta]
pub async fn stop(host: State<'_, Host>, id: String) -> IpcResult<()> {
    host.handle(&id)?.submit(Op::Stop).await?;
    Ok(())
}

/// The header's mode picker: tool calls decided from now on follow `mode`.
#[tauri::command]
#[specta::specta]
pub async fn set_permission_mode(
    host: State<'_, Host>,
    id: String,
    mode: PermissionMode,
) -> IpcResult<()> {
    host.handle(&id)?
        .submit(Op::SetPermissionMode { mode })
        .await?;
    Ok(())
}

/// The header's model picker: the session's next model call goes to `model` (a spec).
#[tauri::command]
#[specta::specta]
pub async fn set_model(host: State<'_, Host>, id: String, model: String) -> IpcResult<()> {
    host.handle(&id)?.submit(Op::SetModel { model }).await?;
    Ok(())
}

/// The user's own edit of the plan before approving it.
#[tauri::command]
#[specta::specta]
pub async fn edit_plan(host: State<'_, Host>, id: String, text: String) -> IpcResult<()> {
    host.handle(&id)?.submit(Op::EditPlan { text }).await?;
    Ok(())
}

/// "Review again" after "Not now": the put-off review opens again at once, with no model turn.
#[tauri::command]
#[specta::specta]
pub async fn review_plan_again(host: State<'_, Host>, id: String) -> IpcResult<()> {
    host.handle(&id)?.submit(Op::ReviewPlanAgain).await?;
    Ok(())
}

#[tauri::command]
#[specta::specta]
pub async fn plan_view(host: State<'_, Host>, id: String) -> IpcResult<PlanView> {
    Ok(host.runtime.plan_view(&id)?)
}

#[tauri::command]
#[specta::specta]
pub async fn plan_diff(
    host: State<'_, Host>,
    id: String,
    from: RevisionRef,
    to: RevisionRef,
) -> IpcResult<PlanDiff> {
    Ok(host.runtime.plan_diff(&id, &from, &to)?)
}

/// The most messages one `render_markdown` call takes.
pub const RENDER_BATCH: usize = 64;
/// The longest message rendered as Markdown; a longer one shows as plain text.
pub const RENDER_CAP: usize = 512 * 1024;

/// The most text one `render_markdown` call renders; the messages past it come back as
/// plain text.
pub const RENDER_BATCH_BYTES: usize = 2 * 1024 * 1024;

/// Agent messages as sanitized HTML, by the renderer plans use (model-written HTML stays
/// inert, links keep safe schemes, images load nothing), in the order given. `None` for a
/// message past [`RENDER_CAP`] (or past [`RENDER_BATCH_BYTES`] in all), which the window
/// shows as plain text. The work runs on a thread for blocking work, never on the ones the
/// session commands and events go through.
#[tauri::command]
#[specta::specta]
pub async fn render_markdown(texts: Vec<String>) -> IpcResult<Vec<Option<String>>> {
    tauri::async_runtime::spawn_blocking(move || render_all(texts))
        .await
        .map_err(|e| IpcError::new("failed", e.to_string()))?
}

pub fn render_all(texts: Vec<String>) -> IpcResult<Vec<Option<String>>> {
    if texts.len() > RENDER_BATCH {
        return Err(IpcError::new(
            "too_large",
            format!(
                "{} messages were sent to render at once; the most is {RENDER_BATCH}",
                texts.len()
            ),
        ));
    }
    let mut budget = RENDER_BATCH_BYTES;
    Ok(texts
        .iter()
        .map(|t| {
            let fits = t.len() <= RENDER_CAP && t.len() <= budget;
            budget = budget.saturating_sub(t.len());
            fits.then(|| waymark_runtime::plan::render::render(t))
        })
        .collect())
}

/// One revision of any plan of the session (earlier plans too), to read.
#[tauri::command]
#[specta::specta]
pub async fn plan_revision(
    host: State<'_, Host>,
    id: String,
    plan_id: String,
    version: u32,
) -> IpcResult<PlanRevisionText> {
    Ok(host.runtime.plan_revision(&id, &plan_id, version)?)
}

/// Copies an approved plan revision into the workspace (by default the newest approved plan
/// to docs/plans/<date>-<slug>.md); in `ask` mode it is refused until `confirm`. Returns the
/// path written, relative to the workspace.
#[tauri::command]
#[specta::specta]
pub async fn export_plan(
    host: State<'_, Host>,
    id: String,
    plan_id: Option<String>,
    version: Option<u32>,
    path: Option<String>,
    confirm: bool,
) -> IpcResult<String> {
    match host
        .handle(&id)?
        .submit(Op::ExportPlan {
            plan_id,
            version,
            path,
            confirm,
        })
        .await?
    {
        OpOutcome::Command { output } => Ok(output),
        _ => Ok(String::new()),
    }
}

/// Changes the session's goal (pause, resume, clear, budget, objective, set): the same op
/// `/goal …` parses into. Returns what to tell the user.
#[tauri::command]
#[specta::specta]
pub async fn goal(host: State<'_, Host>, id: String, op: GoalOp) -> IpcResult<String> {
    match host.handle(&id)?.submit(Op::Goal { op }).await? {
        OpOutcome::Command { output } => Ok(output),
        _ => Ok(String::new()),
    }
}

/// "Help me write this goal" (G-48): one model call turns rough words into a draft the Goal
/// tab shows for editing; nothing is set.
#[tauri::command]
#[specta::specta]
pub async fn draft_goal(
    host: State<'_, Host>,
    id: String,
    text: String,
) -> IpcResult<waymark_protocol::GoalDraft> {
    let api = host.handle(&id)?.api();
    Ok(waymark_runtime::goal::draft::draft(&api, &text).await?)
}

/// What a goal form's text (`Fix the build tokens=50K time=2h`, `tokens=20K turns=clear`)
/// asks for, parsed by the same grammar as `/goal`, so the forms need no rules of their own.
#[tauri::command]
#[specta::specta]
pub fn parse_goal(text: String) -> IpcResult<GoalOp> {
    Ok(waymark_runtime::goal::parse_command(&text)?)
}

/// The goal's events (create, update, clear) and the turns finished since the newest goal
/// was set, oldest first: the timeline and the burn-down.
#[tauri::command]
#[specta::specta]
pub async fn goal_timeline(host: State<'_, Host>, id: String) -> IpcResult<Vec<Event>> {
    Ok(host.runtime.goal_view(&id)?.timeline)
}

#[tauri::command]
#[specta::specta]
pub async fn get_settings(host: State<'_, Host>) -> IpcResult<SettingsView> {
    let config = host.runtime.config().as_ref().clone();
    let mut keyring_error = None;
    let keys = settings::key_names(&config)
        .into_iter()
        .map(|env_name| {
            let stored = match Keyring::get(&env_name) {
                Ok(k) => k.is_some(),
                Err(e) => {
                    keyring_error.get_or_insert(e.to_string());
                    false
                }
            };
            KeyStatus { env_name, stored }
        })
        .collect();
    Ok(SettingsView {
        config,
        keys,
        keyring_error,
    })
}

/// Validates and saves the settings; they apply at once to new and open sessions.
#[tauri::command]
#[specta::specta]
pub fn save_settings(host: State<'_, Host>, config: Config) -> IpcResult<()> {
    store_settings(&host, config)
}

/// "Test connection" on the setup card: one small call to the model it describes, with the
/// key typed (not stored yet) or, when none is, the one in the keyring or the environment.
#[tauri::command]
#[specta::specta]
pub async fn test_model_setup(
    host: State<'_, Host>,
    setup: ModelSetup,
    key: Option<String>,
) -> IpcResult<SetupCheck> {
    let (plan, key) = planned(&host, &setup, key)?;
    let opts = host.runtime.options();
    let probe =
        waymark_runtime::setup::try_model(&plan, key.as_deref(), opts.env.clone(), &opts.cwd)
            .await
            .map_err(|e| redacted(&host, e))?;
    Ok(SetupCheck {
        model: probe.model,
        millis: probe.millis,
    })
}

/// "List models" on the setup card: the models the server it describes offers, asked with
/// the key typed (not stored yet) or, when none is, the one in the keyring or the
/// environment. The card need not name a model yet.
#[tauri::command]
#[specta::specta]
pub async fn list_setup_models(
    host: State<'_, Host>,
    setup: ModelSetup,
    key: Option<String>,
) -> IpcResult<Vec<String>> {
    let setup = if setup.model.trim().is_empty() {
        // A stand-in: the listing asks the server, not a model.
        ModelSetup {
            model: "any".into(),
            ..setup
        }
    } else {
        setup
    };
    let (plan, key) = planned(&host, &setup, key)?;
    let opts = host.runtime.options();
    let names =
        waymark_runtime::setup::list_models(&plan, key.as_deref(), opts.env.clone(), &opts.cwd)
            .await
            .map_err(|e| redacted(&host, e))?;
    Ok(names)
}

/// A setup card's error with every secret the runtime knows (a stored key used for the call)
/// blanked out of what the server said, as in any other error.
fn redacted(host: &Host, mut e: waymark_protocol::ErrorInfo) -> waymark_protocol::ErrorInfo {
    e.message = host.runtime.redactor().redact(&e.message).into_owned();
    e
}

/// "Save and start" on the setup card: the key into the keyring, then the model into the
/// settings (nothing is saved when the key cannot be stored); the model spec now in force.
#[tauri::command]
#[specta::specta]
pub fn save_model_setup(
    host: State<'_, Host>,
    setup: ModelSetup,
    key: Option<String>,
) -> IpcResult<String> {
    let (plan, key) = planned(&host, &setup, key)?;
    let on_key = |message: String| {
        let mut e = IpcError::new("invalid_key", message);
        e.setting = Some(SETUP_KEY.to_string());
        e
    };
    match (&plan.key_env, key) {
        (Some(var), Some(k)) => {
            settings::check_env_name(var)?;
            Keyring::set(var, &k).map_err(|e| on_key(e.to_string()))?;
        }
        (Some(var), None) if (host.runtime.options().env)(var).is_none() => {
            return Err(on_key(format!(
                "paste the API key: there is none for {var} in the keyring or the environment"
            )));
        }
        (Some(_), None) | (None, _) => {}
    }
    store_settings(&host, plan.config)?;
    Ok(plan.spec)
}

/// What the setup card's answer comes to with the settings in force, and the key as typed
/// (surrounding blanks dropped, an empty field taken as none).
fn planned(
    host: &Host,
    setup: &ModelSetup,
    key: Option<String>,
) -> IpcResult<(waymark_config::setup::SetupPlan, Option<String>)> {
    let key = key.map(|k| k.trim().to_string()).filter(|k| !k.is_empty());
    let plan = waymark_config::setup::plan(&host.runtime.config(), setup, key.is_some())?;
    Ok((plan, key))
}

/// Validates and writes the settings (an unreadable file is kept aside first), then puts
/// them in force for new and open sessions.
pub(crate) fn store_settings(host: &Host, config: Config) -> IpcResult<()> {
    // Checked (a tool server added or changed is held to what `mcp add` checks), saved and
    // put in force for new and open sessions, as every front end saves.
    host.runtime.save_settings(&host.settings_path, config)?;
    if let Ok(mut e) = host.settings_error.lock() {
        *e = None;
    }
    Ok(())
}

/// Stores an API key in the OS keyring under the variable name the provider reads.
#[tauri::command]
#[specta::specta]
pub fn set_api_key(env_name: String, key: String) -> IpcResult<()> {
    settings::check_env_name(&env_name)?;
    if key.trim().is_empty() {
        return Err(IpcError::new("invalid_key", "the key is empty"));
    }
    Ok(Keyring::set(&env_name, key.trim())?)
}

#[tauri::command]
#[specta::specta]
pub fn delete_api_key(env_name: String) -> IpcResult<()> {
    settings::check_env_name(&env_name)?;
    Ok(Keyring::delete(&env_name)?)
}

/// Opens a link from the plan in the system browser (never in the webview): only http(s)
/// and `mailto:` links, the latter with only the fields of a message (no `attach=`).
#[tauri::command]
#[specta::specta]
pub fn open_link<R: tauri::Runtime>(app: AppHandle<R>, url: String) -> IpcResult<()> {
    use tauri_plugin_opener::OpenerExt;
    let Some(url) = waymark_protocol::links::to_open(&url) else {
        return Err(IpcError::new(
            "link_refused",
            format!(
                "only http, https and mailto links open outside the app: {}",
                waymark_protocol::display::escape_line(&url)
            ),
        ));
    };
    app.opener()
        .open_url(url, None::<&str>)
        .map_err(|e| IpcError::new("open_failed", e.to_string()))
}

/// Starts the offline demo (two scripted sessions); returns their ids.
#[tauri::command]
#[specta::specta]
pub async fn start_demo<R: tauri::Runtime>(
    app: AppHandle<R>,
    host: State<'_, Host>,
) -> IpcResult<Vec<String>> {
    crate::demo::start(&app, &host).await
}

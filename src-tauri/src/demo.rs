//! First run without a model: an offline demo on a sample workspace, driven by the scripted
//! model — one session that plans (and waits for approval) then implements, one that pursues
//! a goal until it is blocked.

use crate::error::{IpcError, IpcResult};
use crate::host::Host;
use std::path::Path;
use waymark_protocol::{Intent, MessageSource, Op, PermissionMode, Position};
use waymark_runtime::SessionSpec;

const WORKSPACE: &[(&str, &str)] = &[
    ("README.md", include_str!("../../demo/workspace/README.md")),
    (
        "src/greet.sh",
        include_str!("../../demo/workspace/src/greet.sh"),
    ),
];
const PLAN_SCRIPT: &str = include_str!("../../demo/desktop/plan.json");
const GOAL_SCRIPT: &str = include_str!("../../demo/desktop/goal.json");

pub const PLAN_PROMPT: &str =
    "Plan first: give greet.sh a test and make the greeting end with an exclamation mark.";
pub const GOAL_COMMAND: &str =
    "/goal Make greet.sh handle any name safely tokens=40K turns=8 time=30m";

/// Copies the sample project into a new folder under the data dir.
fn sample_workspace(data_dir: &Path, run: i64, name: &str) -> std::io::Result<std::path::PathBuf> {
    let ws = data_dir.join("demo").join(run.to_string()).join(name);
    if ws.exists() {
        std::fs::remove_dir_all(&ws)?;
    }
    for (rel, text) in WORKSPACE {
        let p = ws.join(rel);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(p, text)?;
    }
    Ok(ws)
}

fn script(data_dir: &Path, name: &str, text: &str) -> std::io::Result<String> {
    let p = data_dir.join("demo").join(name);
    std::fs::create_dir_all(data_dir.join("demo"))?;
    std::fs::write(&p, text)?;
    Ok(format!("scripted:{}", p.display()))
}

fn io(e: std::io::Error) -> IpcError {
    IpcError::new("demo", format!("cannot set up the demo: {e}"))
}

/// One demo session: a fresh copy of the sample project, its script, and its first message.
struct DemoSession {
    folder: &'static str,
    script: (&'static str, &'static str),
    permission: PermissionMode,
    first: &'static str,
    intent: Option<Intent>,
}

async fn start_one<R: tauri::Runtime>(
    app: &tauri::AppHandle<R>,
    host: &Host,
    run: i64,
    d: DemoSession,
) -> IpcResult<String> {
    let data_dir = host.runtime.options().data_dir.clone();
    let id = host.create(
        app,
        SessionSpec {
            workspace: Some(sample_workspace(&data_dir, run, d.folder).map_err(io)?),
            model: Some(script(&data_dir, d.script.0, d.script.1).map_err(io)?),
            permission_mode: Some(d.permission),
            hold: false,
        },
    )?;
    host.handle(&id)?
        .submit(Op::Submit {
            text: d.first.into(),
            source: MessageSource::User,
            position: Position::Tail,
            idempotency_key: Some(format!("demo-{}", d.folder)),
            intent: d.intent,
        })
        .await?;
    Ok(id)
}

/// The demo sessions of earlier runs (those whose folder lies in the demo's own folder).
fn earlier_runs(host: &Host) -> IpcResult<Vec<String>> {
    let root = host.runtime.options().data_dir.join("demo");
    let root = root.canonicalize().unwrap_or(root);
    Ok(host
        .runtime
        .list_sessions()?
        .into_iter()
        .filter(|s| Path::new(&s.workspace).starts_with(&root))
        .map(|s| s.id)
        .collect())
}

/// Creates and starts both demo sessions; returns their ids (plan demo first). Running it
/// again replaces the earlier run's sessions and sample folders instead of adding copies.
pub async fn start<R: tauri::Runtime>(
    app: &tauri::AppHandle<R>,
    host: &Host,
) -> IpcResult<Vec<String>> {
    for id in earlier_runs(host)? {
        host.delete(&id).await?;
    }
    let runs = host.runtime.options().data_dir.join("demo");
    if let Ok(entries) = std::fs::read_dir(&runs) {
        for e in entries.flatten() {
            // Only the numbered sample folders of earlier runs (never a link).
            let numbered = e
                .file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit());
            if numbered && e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let run = host.runtime.options().clock.now_ms();
    let plan = DemoSession {
        folder: "greet-plan-demo",
        script: ("plan.json", PLAN_SCRIPT),
        // Writes go ahead, the test run asks: the demo shows a permission prompt too.
        permission: PermissionMode::AutoEdit,
        first: PLAN_PROMPT,
        intent: Some(Intent::PlanEntry),
    };
    let goal = DemoSession {
        folder: "greet-goal-demo",
        script: ("goal.json", GOAL_SCRIPT),
        permission: PermissionMode::Auto,
        first: GOAL_COMMAND,
        intent: None,
    };
    Ok(vec![
        start_one(app, host, run, plan).await?,
        start_one(app, host, run, goal).await?,
    ])
}

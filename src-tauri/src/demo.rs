//! First run without a model: an offline demo on a sample workspace, driven by the scripted
//! model — one session that plans (and waits for approval) then implements, one that pursues
//! a goal until it is blocked.

use crate::error::{IpcError, IpcResult};
use crate::host::Host;
use std::path::Path;
use waymark_core::SessionSpec;
use waymark_protocol::{Intent, MessageSource, Op, PermissionMode, Position};

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
    "/goal Make greet.sh handle any name safely budget=40K turns=8 time=30m";

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

/// Creates and starts both demo sessions; returns their ids (plan demo first).
pub async fn start<R: tauri::Runtime>(
    app: &tauri::AppHandle<R>,
    host: &Host,
) -> IpcResult<Vec<String>> {
    let data_dir = host.runtime.options().data_dir.clone();
    let stamp = host.runtime.options().clock.now_ms();
    let plan_id = host.create(
        app,
        SessionSpec {
            workspace: Some(sample_workspace(&data_dir, stamp, "greet-plan-demo").map_err(io)?),
            model: Some(script(&data_dir, "plan.json", PLAN_SCRIPT).map_err(io)?),
            permission_mode: Some(PermissionMode::AutoEdit),
            hold: false,
        },
    )?;
    host.handle(&plan_id)?
        .submit(Op::Submit {
            text: PLAN_PROMPT.into(),
            source: MessageSource::User,
            position: Position::Tail,
            idempotency_key: Some("demo-plan".into()),
            intent: Some(Intent::PlanEntry),
        })
        .await?;
    let goal_id = host.create(
        app,
        SessionSpec {
            workspace: Some(sample_workspace(&data_dir, stamp, "greet-goal-demo").map_err(io)?),
            model: Some(script(&data_dir, "goal.json", GOAL_SCRIPT).map_err(io)?),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        },
    )?;
    host.handle(&goal_id)?
        .submit(Op::Submit {
            text: GOAL_COMMAND.into(),
            source: MessageSource::User,
            position: Position::Tail,
            idempotency_key: Some("demo-goal".into()),
            intent: None,
        })
        .await?;
    Ok(vec![plan_id, goal_id])
}

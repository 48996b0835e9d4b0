//! The safety net's IPC commands (issue 23): checkpoints and rewind, a session's worktree,
//! the goal board and the day's spending. Each calls one runtime method.

use crate::error::{IpcError, IpcResult};
use crate::host::Host;
use tauri::{AppHandle, State};
use waymark_protocol::checkpoint::{CheckpointView, RewindPreview, RewindScope};
use waymark_protocol::cost::DailySpend;
use waymark_protocol::worktree::{
    MergeOutcome, MergeStyle, WorktreeDiff, WorktreeReview, WorktreeView,
};
use waymark_protocol::{BoardRow, BudgetChange, GoalOp, Op, SessionView};
use waymark_runtime::SessionSpec;

/// Runs blocking work (a walk of the workspace, git) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> IpcResult<T> + Send + 'static,
) -> IpcResult<T> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| IpcError::new("failed", e.to_string()))?
}

/// The session's checkpoints, oldest first.
#[tauri::command]
#[specta::specta]
pub async fn checkpoints(host: State<'_, Host>, id: String) -> IpcResult<Vec<CheckpointView>> {
    Ok(host.runtime.checkpoints(&id)?)
}

/// What "Rewind to here" on turn `turn` would do: the checkpoint taken as it started, each
/// file that would change with its diff, and the turns that would leave the conversation.
#[tauri::command]
#[specta::specta]
pub async fn rewind_preview<R: tauri::Runtime>(
    app: AppHandle<R>,
    id: String,
    turn: Option<u32>,
    checkpoint: Option<String>,
) -> IpcResult<RewindPreview> {
    use tauri::Manager;
    blocking(move || {
        let host = app.state::<Host>();
        let checkpoint = match (checkpoint, turn) {
            (Some(c), _) => c,
            (None, Some(t)) => host.runtime.checkpoint_of_turn(&id, i64::from(t))?.id,
            (None, None) => {
                return Err(IpcError::new(
                    "invalid_request",
                    "name a checkpoint or a turn to rewind to",
                ));
            }
        };
        Ok(host.runtime.rewind_preview(&id, &checkpoint)?)
    })
    .await
}

/// Rewinds the session to `checkpoint` (files, conversation or both); refused while a turn
/// runs. The `session.rewound` event names the checkpoint that undoes it.
#[tauri::command]
#[specta::specta]
pub async fn rewind(
    host: State<'_, Host>,
    id: String,
    checkpoint: String,
    scope: RewindScope,
) -> IpcResult<()> {
    host.handle(&id)?
        .submit(Op::Rewind { checkpoint, scope })
        .await?;
    Ok(())
}

/// The session's worktree and what changed in it; none when it works in the checkout.
#[tauri::command]
#[specta::specta]
pub async fn worktree<R: tauri::Runtime>(
    app: AppHandle<R>,
    id: String,
) -> IpcResult<Option<WorktreeView>> {
    use tauri::Manager;
    blocking(move || Ok(app.state::<Host>().runtime.worktree(&id)?)).await
}

/// The worktree's whole diff from its start ("Review & merge").
#[tauri::command]
#[specta::specta]
pub async fn worktree_diff<R: tauri::Runtime>(
    app: AppHandle<R>,
    id: String,
) -> IpcResult<WorktreeDiff> {
    use tauri::Manager;
    blocking(move || Ok(app.state::<Host>().runtime.worktree_diff(&id)?)).await
}

/// Merges the worktree into the branch it came from (refused, changing nothing, on a
/// conflict or uncommitted changes to the same files there), holding it to `reviewed`, the
/// ends of the diff the user reviewed: when it would bring in anything else now, it is
/// refused. `message`: the merge's message as the user edited it (by default the goal's
/// objective). `style`: a merge commit, or the work squashed into one commit.
#[tauri::command]
#[specta::specta]
pub async fn worktree_merge<R: tauri::Runtime>(
    app: AppHandle<R>,
    id: String,
    reviewed: WorktreeReview,
    message: Option<String>,
    style: MergeStyle,
) -> IpcResult<MergeOutcome> {
    use tauri::Manager;
    blocking(move || {
        Ok(app.state::<Host>().runtime.worktree_merge(
            &id,
            Some(&reviewed),
            message.as_deref(),
            style,
        )?)
    })
    .await
}

/// Removes the worktree and its branch (the window asked the user first).
#[tauri::command]
#[specta::specta]
pub async fn worktree_discard<R: tauri::Runtime>(app: AppHandle<R>, id: String) -> IpcResult<()> {
    use tauri::Manager;
    blocking(move || Ok(app.state::<Host>().runtime.worktree_discard(&id)?)).await
}

/// Approves the plan under review in session `id`'s questionnaire `questionnaire_id` (with
/// `option`, as a goal with `as_goal`) to be implemented by a new session in a new git
/// worktree of the project ("Approve & pursue as goal" with "Run in a new worktree", G-36);
/// the new session, opened and running.
#[tauri::command]
#[specta::specta]
pub async fn approve_in_worktree<R: tauri::Runtime>(
    app: AppHandle<R>,
    host: State<'_, Host>,
    id: String,
    questionnaire_id: String,
    option: Option<u32>,
    as_goal: Option<BudgetChange>,
    name: Option<String>,
) -> IpcResult<SessionView> {
    let made = host
        .approve_in_worktree(
            &app,
            &id,
            &questionnaire_id,
            option,
            as_goal,
            name.as_deref(),
        )
        .await?;
    crate::commands::view(&app, &host, &made)
}

/// Creates a session in a new git worktree of the project `workspace` is in ("Run in a new
/// worktree"); `name` names its branch `waymark/<name>`, none makes one.
#[tauri::command]
#[specta::specta]
pub async fn create_worktree_session<R: tauri::Runtime>(
    app: AppHandle<R>,
    host: State<'_, Host>,
    workspace: String,
    name: Option<String>,
) -> IpcResult<SessionView> {
    let id = host.create_in_worktree(
        &app,
        SessionSpec {
            workspace: Some(workspace.into()),
            ..SessionSpec::default()
        },
        name.as_deref(),
    )?;
    crate::commands::view(&app, &host, &id)
}

/// Every session with a goal, across projects (the Goals view).
#[tauri::command]
#[specta::specta]
pub async fn goal_board(host: State<'_, Host>) -> IpcResult<Vec<BoardRow>> {
    Ok(host.runtime.goal_board(&host.open_ids())?)
}

/// Answers a blocked goal's question from the board: the session is opened here if it is
/// not, then the reply goes to it as `/goal reply` does.
#[tauri::command]
#[specta::specta]
pub async fn board_reply<R: tauri::Runtime>(
    app: AppHandle<R>,
    host: State<'_, Host>,
    id: String,
    text: String,
) -> IpcResult<()> {
    host.open(&app, &id)?;
    host.handle(&id)?
        .submit(Op::Goal {
            op: GoalOp::Reply { text },
        })
        .await?;
    Ok(())
}

/// Changes a board row's goal or its queue (G-46): the session is opened here if it is
/// not, then `op` goes to it as from its Goal tab.
#[tauri::command]
#[specta::specta]
pub async fn board_goal<R: tauri::Runtime>(
    app: AppHandle<R>,
    host: State<'_, Host>,
    id: String,
    op: GoalOp,
) -> IpcResult<String> {
    host.open(&app, &id)?;
    match host.handle(&id)?.submit(Op::Goal { op }).await? {
        waymark_runtime::session::OpOutcome::Command { output } => Ok(output),
        _ => Ok(String::new()),
    }
}

/// Today's spending across every session, against `limits.daily_cost_usd`.
#[tauri::command]
#[specta::specta]
pub async fn daily_spend(host: State<'_, Host>) -> IpcResult<DailySpend> {
    Ok(host.runtime.daily_spend()?)
}

//! Checkpoints in sessions (G-27, G-30): one before every turn and before every tool call that may
//! write, kept in the session's private store (`checkpoints/` in its folder), recorded in
//! the extension's own table; and the file half of a rewind. A checkpoint that cannot be
//! taken is said once (`checkpoint.failed`) and the session goes on.

use crate::db::{self, CheckpointRow, CheckpointWrites as _};
use crate::{Change, CheckpointError, Limits, Root, Store};
use futures_util::future::BoxFuture;
use gix_hash::ObjectId;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use waymark_config::CheckpointConfig;
use waymark_extension::commands::SlashCommand;
use waymark_extension::error::{Error, Result};
use waymark_extension::rewind::{ConversationPoint, RewindPlan};
use waymark_extension::{Extension, SessionApi};
use waymark_protocol::EventKind;
use waymark_protocol::checkpoint::{
    CheckpointTrigger, PathChange, PathChangeKind, RewindScope, SkippedFile,
};
use waymark_store::ToolCallRecord;

/// The extension's migrations (its own `checkpoints` table).
pub const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_checkpoints.sql"),
    include_str!("../migrations/0002_modes.sql"),
];

/// Checkpoints and the file half of rewind, for every session.
pub struct CheckpointExtension;

/// The session's checkpoint state in this process.
#[derive(Default)]
struct Slot {
    store: Mutex<Option<Arc<Store>>>,
    /// A failure was said and no checkpoint has worked since: not said again.
    failing: AtomicBool,
    /// The workspace folder (device, inode) the first checkpoint saw: a rewind never
    /// writes into another folder put in its place.
    root: Mutex<Option<(u64, u64)>>,
    /// Old checkpoints were pruned in this process.
    pruned: AtomicBool,
}

/// Where a session keeps its checkpoint store.
pub fn store_dir(session_dir: &Path) -> PathBuf {
    session_dir.join("checkpoints")
}

/// The store in `dir`, one per folder in the process, so the session taking checkpoints
/// and a view previewing a rewind share what its cache knows.
pub fn shared(dir: &Path) -> std::result::Result<Arc<Store>, CheckpointError> {
    static STORES: Mutex<Option<HashMap<PathBuf, Weak<Store>>>> = Mutex::new(None);
    let mut all = STORES.lock().unwrap_or_else(|p| p.into_inner());
    let map = all.get_or_insert_with(HashMap::new);
    if let Some(s) = map.get(dir).and_then(Weak::upgrade) {
        return Ok(s);
    }
    map.retain(|_, w| w.strong_count() > 0);
    let s = Arc::new(Store::open(dir)?);
    map.insert(dir.to_path_buf(), Arc::downgrade(&s));
    Ok(s)
}

fn failed(e: CheckpointError) -> Error {
    Error::Checkpoint(e.to_string())
}

/// Runs blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::result::Result<T, CheckpointError> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Checkpoint(format!("the checkpoint work stopped: {e}")))?
        .map_err(failed)
}

fn path_change(c: Change) -> PathChange {
    match c {
        Change::Added(path) => PathChange {
            path,
            change: PathChangeKind::Added,
        },
        Change::Modified(path) => PathChange {
            path,
            change: PathChangeKind::Modified,
        },
        Change::Deleted(path) => PathChange {
            path,
            change: PathChangeKind::Deleted,
        },
    }
}

fn tree_id(row: &CheckpointRow) -> Result<ObjectId> {
    ObjectId::from_hex(row.tree.as_bytes()).map_err(|_| {
        Error::Corrupt(format!(
            "checkpoint {} names tree `{}`, which is not an object id",
            row.id, row.tree
        ))
    })
}

/// The checkpoint as a restore reads it: its tree and its mode record.
fn point(row: &CheckpointRow) -> Result<crate::Point> {
    let modes = match &row.modes {
        None => None,
        Some(m) => Some(ObjectId::from_hex(m.as_bytes()).map_err(|_| {
            Error::Corrupt(format!(
                "checkpoint {} names mode record `{m}`, which is not an object id",
                row.id
            ))
        })?),
    };
    Ok(crate::Point {
        tree: tree_id(row)?,
        modes,
    })
}

/// The workspace folder, opened once for a checkpoint or a rewind.
fn open_root(path: &Path) -> Result<Arc<Root>> {
    Root::open(path).map(Arc::new).map_err(|e| match e {
        crate::CheckpointError::Invalid(_) => Error::Checkpoint(format!(
            "the workspace {} is no longer a folder (a link or a file stands in its place)",
            path.display()
        )),
        e => failed(e),
    })
}

impl Slot {
    fn store(&self, api: &SessionApi) -> Result<Arc<Store>> {
        let mut held = self.store.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = held.as_ref() {
            return Ok(s.clone());
        }
        let s = shared(&store_dir(api.session_dir())).map_err(failed)?;
        *held = Some(s.clone());
        Ok(s)
    }

    /// Checks the workspace (held open as `at`) is still the folder the first checkpoint saw.
    fn check_root(&self, ws: &Path, at: &Root) -> Result<()> {
        let now = at.id;
        let mut root = self.root.lock().unwrap_or_else(|p| p.into_inner());
        match *root {
            Some(r) if r != now => Err(Error::Checkpoint(format!(
                "the workspace {} was replaced by another folder since the session's first checkpoint; nothing is restored into it",
                ws.display()
            ))),
            _ => {
                *root = Some(now);
                Ok(())
            }
        }
    }
}

/// What a checkpoint of a session takes: files up to `max_file_mb`, a workspace within
/// `max_files` and `max_total_mb`, and never Waymark's own data folder (the session folder's
/// grandparent), should the workspace hold it.
pub fn limits_for(config: &CheckpointConfig, session_dir: &Path) -> Limits {
    Limits {
        max_file_bytes: config.max_file_mb.saturating_mul(1024 * 1024),
        max_entries: usize::try_from(config.max_files).unwrap_or(usize::MAX),
        max_total_bytes: config.max_total_mb.saturating_mul(1024 * 1024),
        skip: session_dir
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .into_iter()
            .collect(),
    }
}

/// Where the conversation stands for a checkpoint taken now (`turn`: the turn it is in or
/// before).
fn conversation_point(
    conn: &rusqlite::Connection,
    session_id: &str,
    trigger: CheckpointTrigger,
    turn: Option<i64>,
) -> Result<ConversationPoint> {
    let turns = waymark_store::turns::ids(conn, session_id)?;
    let newest = turns.last().copied().unwrap_or(0);
    let before_turn = match (trigger, turn) {
        (CheckpointTrigger::TurnStart, Some(t)) => t,
        (CheckpointTrigger::BeforeTool, Some(t)) => t.saturating_add(1),
        _ => newest.saturating_add(1),
    };
    let hidden = waymark_store::turns::rewound(conn, session_id)?
        .into_iter()
        .filter(|t| *t < before_turn)
        .collect();
    Ok(ConversationPoint {
        before_turn,
        hidden,
    })
}

/// Takes a checkpoint of the session's workspace and records it; a `before_tool` one whose
/// tree is the newest checkpoint's is not recorded (nothing changed since).
async fn take(
    api: &SessionApi,
    trigger: CheckpointTrigger,
    turn: Option<i64>,
    call: Option<&ToolCallRecord>,
) -> Result<Option<CheckpointRow>> {
    let root = open_root(api.workspace())?;
    take_of(api, trigger, turn, call, root).await
}

/// [`take`] of the workspace held open as `at`.
async fn take_of(
    api: &SessionApi,
    trigger: CheckpointTrigger,
    turn: Option<i64>,
    call: Option<&ToolCallRecord>,
    at: Arc<Root>,
) -> Result<Option<CheckpointRow>> {
    let slot = api.state::<Slot>();
    let store = slot.store(api)?;
    let ws = api.workspace().to_path_buf();
    slot.check_root(&ws, &at)?;
    let root = at.id;
    let limits = limits_for(&api.config().checkpoints, api.session_dir());
    let sid = api.id().to_string();
    let last = api.read(|c| db::last(c, &sid))?;
    let prev = last
        .as_ref()
        .and_then(|p| ObjectId::from_hex(p.tree.as_bytes()).ok());
    let prev_modes = last.and_then(|p| p.modes);
    let s = store.clone();
    let (snap, changed) = blocking(move || {
        let snap = s.snapshot_of(&at, &limits)?;
        // A store made again since the previous checkpoint no longer has its tree: the
        // change is then counted from nothing.
        let changed = match prev {
            Some(p) if p == snap.tree => Vec::new(),
            Some(p) => s
                .changes(Some(&p), &snap.tree)
                .or_else(|_| s.changes(None, &snap.tree))?,
            None => s.changes(None, &snap.tree)?,
        };
        Ok((snap, changed))
    })
    .await?;
    // Before a call, the same state as the newest checkpoint (files and their bits) is that
    // checkpoint.
    if trigger == CheckpointTrigger::BeforeTool
        && prev == Some(snap.tree)
        && prev_modes.as_deref() == Some(snap.modes.to_string().as_str())
    {
        return Ok(None);
    }
    let id = api.new_id("cp");
    let row = api.write(|tx| {
        let mut row = CheckpointRow {
            id,
            session_id: sid.clone(),
            seq: 0,
            turn_id: turn,
            call_id: call.map(|c| c.id.clone()),
            tool: call.map(|c| c.name.clone()),
            trigger,
            tree: snap.tree.to_string(),
            modes: Some(snap.modes.to_string()),
            root: Some(format!("{}:{}", root.0, root.1)),
            conversation: conversation_point(tx.conn(), &sid, trigger, turn)?,
            changed: changed.into_iter().map(path_change).collect(),
            skipped: snap
                .skipped
                .iter()
                .map(|s| SkippedFile {
                    path: s.path.clone(),
                    bytes: s.bytes,
                    reason: s.reason.clone(),
                })
                .collect(),
            created_at: tx.now(),
        };
        row.seq = tx.insert_checkpoint(&row)?;
        Ok(row)
    })?;
    slot.failing.store(false, Ordering::Relaxed);
    Ok(Some(row))
}

/// [`take`] for a turn or a call: a failure is said once and the session goes on.
async fn take_or_say(
    api: &SessionApi,
    trigger: CheckpointTrigger,
    turn: i64,
    call: Option<&ToolCallRecord>,
) -> Result<()> {
    if !api.config().checkpoints.enabled {
        return Ok(());
    }
    match take(api, trigger, Some(turn), call).await {
        Ok(_) => Ok(()),
        // The session itself is gone or taken over: that is the turn's error.
        Err(e @ (Error::LeaseLost { .. } | Error::SessionClosed)) => Err(e),
        Err(e) => {
            tracing::warn!(code = e.code(), "checkpoint not taken: {e}");
            let slot = api.state::<Slot>();
            if !slot.failing.swap(true, Ordering::Relaxed) {
                let message = format!(
                    "no checkpoint could be taken, so this turn cannot be rewound: {e}. The session goes on, and checkpoints resume as soon as one can be taken."
                );
                api.write(|tx| {
                    Ok(tx.emit(
                        api.id(),
                        EventKind::CheckpointFailed {
                            turn_id: Some(turn),
                            message,
                        },
                    )?)
                })?;
            }
            Ok(())
        }
    }
}

/// Drops checkpoints older than `checkpoints.keep_days`, and the objects only they held
/// (once per session and process, before its first turn here).
async fn prune(api: &SessionApi) -> Result<()> {
    let slot = api.state::<Slot>();
    if slot.pruned.swap(true, Ordering::Relaxed) {
        return Ok(());
    }
    let keep_ms = i64::from(api.config().checkpoints.keep_days).saturating_mul(86_400_000);
    let cutoff = api.now_ms().saturating_sub(keep_ms);
    let sid = api.id().to_string();
    // Read first: most sessions have nothing that old, and a read costs no write.
    if api
        .read(|c| db::oldest(c, &sid))?
        .is_none_or(|t| t >= cutoff)
    {
        return Ok(());
    }
    let gone = api.write(|tx| tx.prune_checkpoints(&sid, cutoff))?;
    if gone == 0 {
        return Ok(());
    }
    let kept = api.read(|c| db::trees(c, &sid))?;
    let keep: Vec<ObjectId> = kept
        .iter()
        .filter_map(|(t, _)| ObjectId::from_hex(t.as_bytes()).ok())
        .collect();
    let keep_blobs: Vec<ObjectId> = kept
        .iter()
        .filter_map(|(_, m)| ObjectId::from_hex(m.as_deref()?.as_bytes()).ok())
        .collect();
    let store = slot.store(api)?;
    let objects = blocking(move || store.prune(&keep, &keep_blobs)).await?;
    tracing::info!(checkpoints = gone, objects, "old checkpoints pruned");
    Ok(())
}

/// The file half of `Op::Rewind`.
async fn rewind(api: &SessionApi, to: &str, scope: RewindScope) -> Result<RewindPlan> {
    let sid = api.id().to_string();
    let row = api
        .read(|c| db::get(c, &sid, to))?
        .ok_or_else(|| Error::CheckpointNotFound(to.to_string()))?;
    let target = point(&row)?;
    // The workspace folder, opened once: it must be the one the checkpoint was taken of (a
    // folder put in its place, a link to another or a new one, is not written into,
    // whichever process rewinds), and the undo checkpoint and the restore both go through
    // this one handle, whatever is put at the path meanwhile. A checkpoint from before
    // roots were recorded is held to the session's first one that recorded one.
    let at = open_root(api.workspace())?;
    let recorded = match &row.root {
        Some(r) => Some(r.clone()),
        None => api.read(|c| db::first_root(c, &sid))?,
    };
    if let Some(root) = recorded
        && root != at.label()
    {
        return Err(Error::Checkpoint(format!(
            "the workspace {} is not the folder checkpoint {} was taken of (it was replaced or moved since); nothing is restored into it",
            api.workspace().display(),
            row.id
        )));
    }
    let slot = api.state::<Slot>();
    let store = slot.store(api)?;
    // Every object of the target is read before anything is taken or changed: a damaged
    // store is an error with nothing done.
    let s = store.clone();
    blocking(move || {
        s.files(&target.tree)?;
        target.modes.map(|m| s.modes(&m)).transpose().map(|_| ())
    })
    .await?;
    let undo = take_of(api, CheckpointTrigger::Rewind, None, None, at.clone())
        .await?
        .ok_or_else(|| Error::Checkpoint("the state before the rewind was not recorded".into()))?;
    let (files, moved_aside) = if scope.files() {
        let now = point(&undo)?;
        slot.check_root(api.workspace(), &at)?;
        let s = store.clone();
        let left_out: Vec<String> = row.skipped.iter().map(|k| k.path.clone()).collect();
        let current_left_out: Vec<String> = undo.skipped.iter().map(|k| k.path.clone()).collect();
        let since_ms = row.created_at;
        let restored = blocking(move || {
            let changes = s.changes(Some(&now.tree), &target.tree)?;
            let opts = crate::RestoreOptions {
                left_out: &left_out,
                current_left_out: &current_left_out,
                since_ms,
            };
            Ok((s.restore_at(&at, &now, &target, &opts), changes))
        })
        .await?;
        let (restored, changes) = match restored {
            (Ok(r), changes) => (r, changes),
            // Stopped partway: what the files were before is in the undo checkpoint.
            (Err(e), _) => {
                return Err(Error::Checkpoint(format!(
                    "the rewind stopped partway: {e}. The files as they were before it are in checkpoint {}: rewind to it (waymark rewind --session {sid} --to {} --files) to put them back",
                    undo.id, undo.id
                )));
            }
        };
        (
            changes
                .into_iter()
                .filter(|c| !restored.kept.iter().any(|k| k == c.path()))
                .map(path_change)
                .collect(),
            restored.moved_aside.map(|p| p.display().to_string()),
        )
    } else {
        (Vec::new(), None)
    };
    Ok(RewindPlan {
        undo_checkpoint: undo.id,
        conversation: row.conversation,
        files,
        moved_aside,
    })
}

impl Extension for CheckpointExtension {
    fn name(&self) -> &'static str {
        "checkpoint"
    }
    fn migrations(&self) -> &'static [&'static str] {
        MIGRATIONS
    }
    fn commands(&self) -> Vec<Arc<dyn SlashCommand>> {
        vec![Arc::new(crate::listing::RewindCommand)]
    }
    fn before_turn<'a>(
        &'a self,
        api: &'a SessionApi,
        turn_id: i64,
        _cancel: &'a tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            if !api.config().checkpoints.enabled {
                return Ok(());
            }
            if let Err(e) = prune(api).await {
                tracing::warn!("old checkpoints not pruned: {e}");
            }
            take_or_say(api, CheckpointTrigger::TurnStart, turn_id, None).await
        })
    }
    fn before_run<'a>(
        &'a self,
        api: &'a SessionApi,
        turn_id: i64,
        call: &'a ToolCallRecord,
        writes: bool,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            if !writes {
                return Ok(());
            }
            take_or_say(api, CheckpointTrigger::BeforeTool, turn_id, Some(call)).await
        })
    }
    fn rewind<'a>(
        &'a self,
        api: &'a SessionApi,
        to: &'a str,
        scope: RewindScope,
    ) -> Option<BoxFuture<'a, Result<RewindPlan>>> {
        Some(Box::pin(rewind(api, to, scope)))
    }
}

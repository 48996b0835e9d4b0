//! What a rewind would change, shown before it acts (G-29, the app's preview): each file with its diff from the
//! workspace now to the checkpoint. The workspace is read as a checkpoint is (the same
//! ignore rules, links as links), but nothing is recorded.

use crate::db::CheckpointRow;
use crate::{Change, Entry, Limits, Store};
use gix_hash::ObjectId;
use gix_object::tree::EntryKind;
use std::path::Path;
use waymark_protocol::FileChange;
use waymark_protocol::display::{cut_diff, escape_block, escape_line};

/// Files larger than this are not diffed (the preview says so).
const MAX_DIFF_INPUT: usize = 1024 * 1024;
/// A diff longer than this is cut, saying how much was left out.
const MAX_DIFF: usize = 64 * 1024;
/// At most this many files get a diff; the others are listed with a note.
const MAX_DIFFED: usize = 200;

/// Each file a rewind of `workspace` to `row` would change.
pub fn files(
    store: &Store,
    workspace: &Path,
    row: &CheckpointRow,
    limits: &Limits,
) -> crate::Result<Vec<FileChange>> {
    let target = ObjectId::from_hex(row.tree.as_bytes())
        .map_err(|_| crate::CheckpointError::Invalid(format!("`{}` is not a tree id", row.tree)))?;
    let now = store.snapshot(workspace, limits)?;
    let changes = store.changes(Some(&now.tree), &target)?;
    let (before, after) = if changes.is_empty() {
        Default::default()
    } else {
        (store.files(&now.tree)?, store.files(&target)?)
    };
    // What the checkpoint left out stays, so it is not shown as going.
    let left_out: Vec<String> = row.skipped.iter().map(|s| s.path.clone()).collect();
    let keeper = crate::keep::Keeper::of(store, &after, &left_out)?;
    let changes: Vec<&Change> = changes
        .iter()
        .filter(|c| !matches!(c, Change::Deleted(p) if keeper.keeps(p)))
        .collect();
    let mut out = Vec::with_capacity(changes.len());
    for (n, c) in changes.into_iter().enumerate() {
        let path = c.path();
        let (op, old, new) = match c {
            // In the checkpoint, not in the workspace now: it comes back.
            Change::Added(_) => ("restore", None, after.get(path)),
            Change::Modified(_) => ("revert", before.get(path), after.get(path)),
            // Made since the checkpoint: it goes.
            Change::Deleted(_) => ("delete", before.get(path), None),
        };
        let (diff, note) = if n >= MAX_DIFFED {
            (
                None,
                Some(format!("not diffed: only the first {MAX_DIFFED} files are")),
            )
        } else {
            diff_of(store, path, old, new)?
        };
        out.push(FileChange {
            path: escape_line(path),
            resolved: None,
            op: op.into(),
            diff,
            note,
        });
    }
    Ok(out)
}

/// Why a side of a change has no text to diff (the preview says it instead).
#[derive(Debug, thiserror::Error)]
enum NoText {
    #[error("a link to {0}")]
    Link(String),
    #[error("{0} bytes, too large to diff")]
    TooLarge(usize),
    #[error("{0} bytes, not text")]
    Binary(usize),
}

/// The text of a blob entry, or why there is none to diff.
fn text_of(store: &Store, e: Option<&Entry>) -> crate::Result<Result<String, NoText>> {
    let Some(e) = e else {
        return Ok(Ok(String::new()));
    };
    Ok(match e.kind {
        EntryKind::Tree => Ok(String::new()),
        EntryKind::Link => {
            let target = store.read(&e.id, gix_object::Kind::Blob)?;
            Err(NoText::Link(escape_line(&String::from_utf8_lossy(&target))))
        }
        _ => {
            let data = store.read(&e.id, gix_object::Kind::Blob)?;
            if data.len() > MAX_DIFF_INPUT {
                Err(NoText::TooLarge(data.len()))
            } else {
                String::from_utf8(data).map_err(|e| NoText::Binary(e.into_bytes().len()))
            }
        }
    })
}

pub(crate) fn diff_of(
    store: &Store,
    path: &str,
    old: Option<&Entry>,
    new: Option<&Entry>,
) -> crate::Result<(Option<String>, Option<String>)> {
    let (a, b) = (text_of(store, old)?, text_of(store, new)?);
    let mut note = None;
    if old.is_some_and(|e| e.kind == EntryKind::Tree)
        || new.is_some_and(|e| e.kind == EntryKind::Tree)
    {
        note = Some("an empty folder".to_string());
    }
    if let (Some(o), Some(n)) = (old, new)
        && o.id == n.id
        && o.kind != n.kind
    {
        return Ok((None, Some("only its mode changes".into())));
    }
    match (a, b) {
        (Ok(a), Ok(b)) => {
            let from = if old.is_some() {
                // One line whatever the name holds (a newline in it would forge hunks).
                format!("a/{}", escape_line(path))
            } else {
                "/dev/null".into()
            };
            let to = if new.is_some() {
                format!("b/{}", escape_line(path))
            } else {
                "/dev/null".into()
            };
            let d = similar::TextDiff::configure()
                .timeout(std::time::Duration::from_millis(250))
                .diff_lines(&a, &b)
                .unified_diff()
                .context_radius(3)
                .header(&from, &to)
                .to_string();
            Ok((Some(escape_block(&cut(d))), note))
        }
        (Err(why), _) | (_, Err(why)) => Ok((None, Some(why.to_string()))),
    }
}

fn cut(diff: String) -> String {
    cut_diff(diff, MAX_DIFF)
}

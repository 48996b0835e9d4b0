pub(crate) use waymark_test_support::harness;

mod conversation;
mod hostile;
mod rewind;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use waymark_protocol::checkpoint::{CheckpointTrigger, CheckpointView, RewindScope};
use waymark_protocol::{Event, EventKind, Op};
use waymark_runtime::{Runtime, SessionHandle};

/// What a workspace holds, as a rewind must bring it back: each file with whether it is
/// executable and its bytes, each link with its target, each empty folder (`.git` aside).
pub(crate) type Manifest = BTreeMap<String, String>;

pub(crate) fn manifest(ws: &Path) -> Manifest {
    fn walk(root: &Path, dir: &Path, out: &mut Manifest) {
        let mut empty = true;
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            empty = false;
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".git" {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(
                    rel,
                    format!("link {}", std::fs::read_link(&p).unwrap().display()),
                );
            } else if m.is_dir() {
                walk(root, &p, out);
            } else {
                let x = m.permissions().mode() & 0o111 != 0;
                let bytes = std::fs::read(&p).unwrap();
                out.insert(
                    rel,
                    format!("file x={x} {}", String::from_utf8_lossy(&bytes)),
                );
            }
        }
        if empty && dir != root {
            out.insert(
                dir.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                "dir".into(),
            );
        }
    }
    let mut out = Manifest::new();
    walk(ws, ws, &mut out);
    out
}

/// Every file under `dir` with its bytes (for "byte for byte" checks of `.git`).
pub(crate) fn bytes_under(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if m.is_dir() {
                stack.push(p);
            } else if m.file_type().is_symlink() {
                out.insert(
                    rel,
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                );
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The turn-start checkpoint of each turn, in order.
pub(crate) fn turn_starts(rt: &Runtime, session: &str) -> Vec<CheckpointView> {
    rt.checkpoints(session)
        .unwrap()
        .into_iter()
        .filter(|c| c.trigger == CheckpointTrigger::TurnStart)
        .collect()
}

/// Rewinds and returns the `session.rewound` event's fields.
pub(crate) async fn rewind(
    s: &SessionHandle,
    to: &str,
    scope: RewindScope,
) -> Result<Event, waymark_runtime::Error> {
    let mut rx = s.subscribe();
    s.submit(Op::Rewind {
        checkpoint: to.to_string(),
        scope,
    })
    .await?;
    loop {
        let ev = rx.try_recv().expect("a session.rewound event");
        if matches!(ev.kind, EventKind::SessionRewound { .. }) {
            return Ok(ev);
        }
    }
}

/// The undo checkpoint a rewind event names.
pub(crate) fn undo_of(ev: &Event) -> String {
    match &ev.kind {
        EventKind::SessionRewound {
            undo_checkpoint_id, ..
        } => undo_checkpoint_id.clone(),
        other => panic!("not a rewind: {other:?}"),
    }
}

/// The tree a fresh store computes for the workspace now (content-addressed, so equal
/// trees mean equal states).
pub(crate) fn tree_now(ws: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let store = waymark_checkpoint::Store::open(dir.path()).unwrap();
    store
        .snapshot(ws, &waymark_checkpoint::Limits::default())
        .unwrap()
        .tree
        .to_string()
}

/// The tree checkpoint `id` of the session holds.
pub(crate) fn tree_of(rt: &Runtime, session: &str, id: &str) -> String {
    rt.store()
        .read(|c| waymark_checkpoint::db::get(c, session, id))
        .unwrap()
        .unwrap()
        .tree
}

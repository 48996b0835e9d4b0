//! The data folder is the user's alone: every session's transcript, plans, checkpoints and
//! the scripted model's cursor are in it, so other users of the machine must read none of it,
//! whatever modes a folder that was already there had.

use super::super::harness::{Harness, run};
use super::plan_entry;
use serde_json::json;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use waymark_config::Config;
use waymark_protocol::PermissionMode;

/// Every entry under `dir` (links not followed; a worktree's files are the project's, not
/// Waymark's) whose mode lets anyone but the owner in.
fn open_to_others(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        if m.file_type().is_symlink() {
            continue;
        }
        if m.permissions().mode() & 0o077 != 0 {
            out.push(format!(
                "{} {:o}",
                e.path().display(),
                m.permissions().mode() & 0o777
            ));
        }
        if m.is_dir() && e.file_name() != "worktrees" {
            open_to_others(&e.path(), out);
        }
    }
}

#[tokio::test]
async fn the_data_folder_and_all_waymark_makes_in_it_are_private_whatever_was_there() {
    let h = Harness::new(Config::default());
    let data = h.dir.path().join("data");
    // A careless setup: the folders existed, open to everyone.
    for d in [data.clone(), data.join("sessions")] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let old = data.join("sessions/old-session/artifacts");
    std::fs::create_dir_all(&old).unwrap();
    for d in [old.clone(), old.parent().unwrap().to_path_buf()] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let rt = h.reopen(|_| {});
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "PLAN", "content": "x"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi > \"$TMPDIR/t\""}}]},
            {"text": "planned"},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo again > \"$TMPDIR/t\""}}]},
            {"text": "planned again"}
        ]}),
        PermissionMode::Auto,
    );
    run(&s, plan_entry("plan something")).await;
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    drop(rt);
    // What an older version left wider (the second red-team's finding): a store and its
    // objects' folders, the database's side files, a log. Opened again, all are narrowed.
    let sd = h.session_dir(&id);
    let mut widen = vec![sd.join("checkpoints"), sd.join("checkpoints/objects")];
    for e in std::fs::read_dir(sd.join("checkpoints/objects"))
        .unwrap()
        .flatten()
    {
        widen.push(e.path());
    }
    for p in &widen {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for f in ["waymark.db-wal", "waymark.db-shm"] {
        let p = data.join(f);
        if p.exists() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    std::fs::create_dir_all(data.join("sandbox-left")).unwrap();
    std::fs::set_permissions(
        sd.join("sandbox-tmp"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let rt = h.reopen(|_| {});
    let s = rt
        .open_session(&id, waymark_runtime::SessionSpec::default())
        .unwrap();
    run(&s, super::super::harness::user("plan again")).await;
    s.shutdown().await.unwrap();
    drop(rt);
    std::fs::remove_dir_all(data.join("sandbox-left")).unwrap();
    let mut open = Vec::new();
    open_to_others(&data, &mut open);
    // The old session's folders are narrowed when that session is opened again.
    open.retain(|p| !p.contains("old-session"));
    assert_eq!(
        std::fs::metadata(&data).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert!(open.is_empty(), "open to others: {open:#?}");
}

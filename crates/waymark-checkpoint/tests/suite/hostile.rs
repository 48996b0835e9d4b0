//! Acceptance 2 of issue 23: rewinds against a hostile workspace and a damaged store. A
//! link swapped in for a folder is not written through, a 2 GB sparse file is left out with
//! a note, a rewind while a turn runs is refused, and a damaged or deleted store is a clear
//! error while the session goes on. A long rewind keeps the session's lease alive.

use super::harness::{Harness, collect, finished, run, user};
use super::{manifest, rewind, turn_starts};
use serde_json::json;
use waymark_config::Config;
use waymark_protocol::checkpoint::RewindScope;
use waymark_protocol::{EventKind, PermissionMode, TurnEndReason};

fn bash(command: &str) -> serde_json::Value {
    json!({"tool_calls": [{"name": "bash", "arguments": {"command": command}}]})
}

/// What `/rewind` prints.
async fn listed(s: &waymark_runtime::SessionHandle) -> String {
    match s.submit(user("/rewind")).await.unwrap() {
        waymark_runtime::session::OpOutcome::Command { output } => output,
        other => panic!("{other:?}"),
    }
}

fn done() -> serde_json::Value {
    json!({"text": "done"})
}

#[tokio::test]
async fn a_link_swapped_in_for_a_folder_is_not_written_through() {
    let h = Harness::new(Config::default());
    let outside = h.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("theirs.txt"), "not the workspace's\n").unwrap();
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "dir/f.txt", "content": "inside\n"}}]},
            done(),
            bash(&format!("rm -r dir && ln -s {} dir", outside.display())),
            done(),
        ]}),
        PermissionMode::Auto,
    );
    run(&s, user("make it")).await;
    let made = manifest(&h.ws);
    run(&s, user("swap it")).await;
    assert!(
        std::fs::symlink_metadata(h.ws.join("dir"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let starts = turn_starts(&h.runtime, s.id());
    let ev = rewind(&s, &starts[1].id, RewindScope::Files).await.unwrap();
    // The folder is a folder again, with its file; nothing went through the link.
    assert_eq!(manifest(&h.ws), made);
    assert!(
        std::fs::symlink_metadata(h.ws.join("dir"))
            .unwrap()
            .is_dir()
    );
    let theirs: Vec<String> = std::fs::read_dir(&outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(theirs, ["theirs.txt"], "a write went through the link");
    let EventKind::SessionRewound { files, .. } = &ev.kind else {
        unreachable!()
    };
    assert!(files.iter().any(|f| f.path == "dir/f.txt"), "{files:?}");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_2_gb_sparse_file_is_left_out_with_a_note() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            bash("truncate -s 2G big.bin && echo small > small.txt"),
            done(),
            done(),
        ]}),
        PermissionMode::Auto,
    );
    run(&s, user("make a big one")).await;
    run(&s, user("again")).await;
    let starts = turn_starts(&h.runtime, s.id());
    let skipped = &starts[1].skipped;
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].path, "big.bin");
    assert_eq!(skipped[0].bytes, 2 << 30);
    assert!(
        skipped[0].reason.contains("checkpoints.max_file_mb"),
        "{skipped:?}"
    );
    // The store holds what it took, not the 2 GB.
    let store = h.session_dir(s.id()).join("checkpoints");
    let used: u64 = super::bytes_under(&store)
        .values()
        .map(|b| b.len() as u64)
        .sum();
    assert!(used < 1 << 20, "the store holds {used} bytes");
    // A rewind to before it: it came since, so it goes, aside (renamed, never copied), not
    // deleted, though no checkpoint holds its content.
    let ev = rewind(&s, &starts[0].id, RewindScope::Files).await.unwrap();
    assert!(!h.ws.join("small.txt").exists());
    assert!(!h.ws.join("big.bin").exists());
    let EventKind::SessionRewound {
        moved_aside: Some(aside),
        ..
    } = &ev.kind
    else {
        panic!("nothing moved aside: {ev:?}");
    };
    let aside = std::path::PathBuf::from(aside);
    let manifest = std::fs::read_to_string(aside.join("manifest")).unwrap();
    let (number, _) = manifest
        .lines()
        .find_map(|l| l.split_once('\t').filter(|(_, p)| *p == "big.bin"))
        .expect("big.bin in the manifest");
    assert_eq!(
        std::fs::metadata(aside.join(number)).unwrap().len(),
        2 << 30
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_rewind_while_a_turn_runs_or_waits_is_refused() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"text": "slow", "delay_ms": 20000},
            {"tool_calls": [{"name": "write", "arguments": {"path": "x.txt", "content": "x"}}]},
            done(),
        ]}),
        PermissionMode::Ask,
    );
    let mut rx = s.subscribe();
    s.submit(user("take your time")).await.unwrap();
    loop {
        let ev = rx.recv().await.unwrap();
        if matches!(ev.kind, EventKind::TurnStarted { .. }) {
            break;
        }
    }
    // The turn's own checkpoint is taken before its model call.
    let mut starts = Vec::new();
    for _ in 0..100 {
        starts = turn_starts(&h.runtime, s.id());
        if !starts.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let before = manifest(&h.ws);
    let e = rewind(&s, &starts[0].id, RewindScope::Both)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "turn_running", "{e}");
    assert!(e.to_string().contains("stop it"), "{e}");
    s.submit(waymark_protocol::Op::Stop).await.unwrap();
    collect(&mut rx).await;
    // A turn parked on a question is open too.
    let ev = run(&s, user("write it")).await;
    assert!(matches!(
        ev.last().unwrap().kind,
        EventKind::SessionWaiting { .. }
    ));
    let e = rewind(&s, &starts[0].id, RewindScope::Both)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "turn_running", "{e}");
    assert!(e.to_string().contains("waits on a question"), "{e}");
    assert_eq!(manifest(&h.ws), before);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_deleted_or_damaged_store_is_a_clear_error_and_the_session_goes_on() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "one"}}]},
            done(),
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "two"}}]},
            done(),
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "three"}}]},
            done(),
            done(),
            done(),
        ]}),
        PermissionMode::Auto,
    );
    let store = h.session_dir(s.id()).join("checkpoints");
    run(&s, user("one")).await;
    run(&s, user("two")).await;
    // Deleted outside Waymark: the next turn works, its checkpoints in a new store.
    std::fs::remove_dir_all(&store).unwrap();
    let ev = run(&s, user("three")).await;
    assert_eq!(finished(&ev), [(TurnEndReason::Completed, None)]);
    let starts = turn_starts(&h.runtime, s.id());
    assert_eq!(starts.len(), 3);
    // The old checkpoints' files are gone with it: a clear error, and nothing changes.
    let before = manifest(&h.ws);
    let e = rewind(&s, &starts[0].id, RewindScope::Both)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "checkpoint_failed", "{e}");
    assert!(
        e.to_string().contains("damaged") && e.to_string().contains("missing"),
        "{e}"
    );
    assert_eq!(manifest(&h.ws), before);
    // The new one works.
    rewind(&s, &starts[2].id, RewindScope::Files).await.unwrap();
    assert_eq!(std::fs::read_to_string(h.ws.join("a.txt")).unwrap(), "two");

    // Every object garbage: a clear error, nothing changed.
    for (rel, _) in super::bytes_under(&store.join("objects")) {
        std::fs::write(store.join("objects").join(rel), b"garbage").unwrap();
    }
    let before = manifest(&h.ws);
    let e = rewind(&s, &starts[2].id, RewindScope::Both)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "checkpoint_failed", "{e}");
    assert!(e.to_string().contains("damaged"), "{e}");
    assert_eq!(manifest(&h.ws), before);

    // A store that cannot be used at all (a file where its objects belong): turns go on,
    // and the user is told once.
    std::fs::remove_dir_all(&store).unwrap();
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("objects"), b"not a folder").unwrap();
    let mut said = Vec::new();
    for text in ["four", "five"] {
        let ev = run(&s, user(text)).await;
        assert_eq!(finished(&ev), [(TurnEndReason::Completed, None)]);
        said.extend(ev.into_iter().filter_map(|e| match e.kind {
            EventKind::CheckpointFailed { message, .. } => Some(message),
            _ => None,
        }));
    }
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert!(
        said[0].contains("objects") && said[0].contains("cannot be rewound"),
        "{said:?}"
    );
    s.shutdown().await.unwrap();
}

/// A rewind of a big workspace takes a while; the session's lease is kept alive meanwhile, so
/// another process never takes the session over halfway through (and then writes into a
/// workspace being restored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_rewind_keeps_the_sessions_lease_alive() {
    use std::time::{Duration, Instant};
    let period = Duration::from_millis(20);
    let h = Harness::new(Config::default());
    let rt = h.reopen(|o| o.heartbeat = period);
    let model = h.script(json!({"responses": [done(), done()]}));
    let s = rt
        .create_session(waymark_runtime::SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(model),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    run(&s, user("hello")).await;
    let start = turn_starts(&rt, s.id())[0].id.clone();
    // Thousands of files appear after the checkpoint: the rewind records each in its undo
    // checkpoint, then removes it.
    for i in 0..6000 {
        std::fs::write(h.ws.join(format!("f{i:04}.txt")), format!("file {i}\n")).unwrap();
    }
    let heartbeat = {
        let store = rt.store().clone();
        let id = s.id().to_string();
        move || {
            store
                .read(|c| waymark_runtime::store::sessions::lease(c, &id))
                .unwrap()
                .expect("the session's lease")
                .heartbeat
        }
    };
    // The heartbeat read every 2 ms while the rewind runs, with when it was read.
    let done_flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let started = Instant::now();
    let sampler = {
        let done_flag = done_flag.clone();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !done_flag.load(std::sync::atomic::Ordering::Acquire) {
                seen.push((started.elapsed(), heartbeat()));
                std::thread::sleep(Duration::from_millis(2));
            }
            seen
        })
    };
    rewind(&s, &start, RewindScope::Files).await.unwrap();
    let took = started.elapsed();
    done_flag.store(true, std::sync::atomic::Ordering::Release);
    let seen = sampler.join().unwrap();
    assert!(
        !h.ws.join("f0000.txt").exists(),
        "the rewind removed the new files"
    );
    // Long enough for several heartbeats, or the test would show nothing.
    assert!(
        took >= period * 8,
        "the rewind took only {took:?}: make the workspace bigger"
    );
    // Well inside the rewind (not the beats just before it or those caught up after it), the
    // heartbeat still moved.
    let inside: std::collections::BTreeSet<i64> = seen
        .iter()
        .filter(|(at, _)| *at >= period * 2 && *at + period * 2 <= took)
        .map(|(_, beat)| *beat)
        .collect();
    assert!(
        inside.len() >= 2,
        "the lease's heartbeat stalled during a {took:?} rewind: {inside:?}"
    );
    s.shutdown().await.unwrap();
}

/// A workspace with more to keep than `checkpoints.max_files` is not copied into the store:
/// the session says so once and goes on, checkpoints resume once the big folder is ignored,
/// and a rewind that could not record the state it leaves is refused with nothing changed.
#[tokio::test]
async fn a_workspace_too_big_to_keep_is_said_once_and_the_session_goes_on() {
    let mut config = Config::default();
    config.checkpoints.max_files = 100;
    let h = Harness::new(config);
    for i in 0..150 {
        std::fs::create_dir_all(h.ws.join("gen")).unwrap();
        std::fs::write(h.ws.join(format!("gen/f{i:03}.txt")), "x").unwrap();
    }
    let write = |path: &str| json!({"tool_calls": [{"name": "write", "arguments": {"path": path, "content": "mine\n"}}]});
    let s = h.session(
        json!({"responses": [write("a.txt"), done(), write("b.txt"), done(), done(), done()]}),
        PermissionMode::Auto,
    );
    let failures = |ev: &[waymark_protocol::Event]| -> Vec<String> {
        ev.iter()
            .filter_map(|e| match &e.kind {
                EventKind::CheckpointFailed { message, .. } => Some(message.clone()),
                _ => None,
            })
            .collect()
    };
    let mut said = Vec::new();
    for text in ["one", "two"] {
        let ev = run(&s, user(text)).await;
        assert_eq!(finished(&ev), [(TurnEndReason::Completed, None)]);
        said.extend(failures(&ev));
    }
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert!(
        said[0].contains("checkpoints.max_files") && said[0].contains(".gitignore"),
        "{said:?}"
    );
    assert!(h.ws.join("a.txt").exists() && h.ws.join("b.txt").exists());
    assert!(h.runtime.checkpoints(s.id()).unwrap().is_empty());
    // `/rewind` says why there is none.
    let shown = listed(&s).await;
    assert!(
        shown.contains("No checkpoints yet") && shown.contains("checkpoints.max_files"),
        "{shown}"
    );
    let store = h.session_dir(s.id()).join("checkpoints").join("objects");
    assert!(
        super::bytes_under(&store).is_empty(),
        "the workspace was copied into the store"
    );
    // The big folder ignored: the next turn is checkpointed, without it.
    std::fs::write(h.ws.join(".gitignore"), "gen/\n").unwrap();
    let ev = run(&s, user("three")).await;
    assert!(failures(&ev).is_empty(), "{:?}", failures(&ev));
    let starts = turn_starts(&h.runtime, s.id());
    assert_eq!(starts.len(), 1);
    let shown = listed(&s).await;
    assert!(!shown.contains("newest attempt"), "{shown}");
    // It grows past the limit again: a rewind cannot record the state it would leave, so it
    // is refused and nothing changes.
    for i in 0..150 {
        std::fs::create_dir_all(h.ws.join("more")).unwrap();
        std::fs::write(h.ws.join(format!("more/f{i:03}.txt")), "y").unwrap();
    }
    let before = manifest(&h.ws);
    let e = rewind(&s, &starts[0].id, RewindScope::Both)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("checkpoints.max_files"), "{e}");
    assert_eq!(manifest(&h.ws), before);
    s.shutdown().await.unwrap();
}

/// A workspace over the limits at the turn's start does not switch checkpoints off for the
/// turn: a model that shrinks it and then deletes the user's file meets a checkpoint first,
/// so the user's latest edit can be brought back.
#[tokio::test]
async fn a_workspace_shrunk_within_the_turn_is_checkpointed_before_the_next_write() {
    let mut config = Config::default();
    config.checkpoints.max_files = 100;
    let h = Harness::new(config);
    std::fs::write(h.ws.join("mine.txt"), "first\n").unwrap();
    let s = h.session(
        json!({"responses": [done(), bash("rm -r gen"), bash("rm mine.txt"), done()]}),
        PermissionMode::Auto,
    );
    run(&s, user("hello")).await;
    // Between turns: the user edits their file, and the workspace is over the limit.
    std::fs::write(h.ws.join("mine.txt"), "my latest edit\n").unwrap();
    std::fs::create_dir_all(h.ws.join("gen")).unwrap();
    for i in 0..150 {
        std::fs::write(h.ws.join(format!("gen/f{i:03}")), "x").unwrap();
    }
    run(&s, user("tidy up")).await;
    assert!(!h.ws.join("mine.txt").exists());
    let before_delete = h
        .runtime
        .checkpoints(s.id())
        .unwrap()
        .into_iter()
        .rfind(|c| c.trigger == waymark_protocol::checkpoint::CheckpointTrigger::BeforeTool)
        .expect("a checkpoint before the delete");
    rewind(&s, &before_delete.id, RewindScope::Files)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(h.ws.join("mine.txt")).unwrap(),
        "my latest edit\n"
    );
    s.shutdown().await.unwrap();
}

//! Item 7: Stop always stops. Reads cannot hang on FIFOs or devices, searches are bounded,
//! Stop ends the turn within a second whatever a tool does, heartbeats go on meanwhile, and
//! a process that lost the session's lease writes nothing more.

use super::super::harness::{Harness, finished, results, run, user};
use super::harness;
use futures_util::future::BoxFuture;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use waymark_config::Config;
use waymark_protocol::{EventKind, Op, PermissionMode, ToolStatus, TurnEndReason};
use waymark_runtime::SessionSpec;
use waymark_runtime::extension::Extension;
use waymark_runtime::tools::{FreeTool, Tool, ToolContext, ToolError, ToolOutput};

#[tokio::test]
async fn read_file_refuses_fifos_sockets_and_devices_at_once() {
    let h = harness();
    let fifo = h.ws.join("pipe");
    super::super::harness::mkfifo(&fifo);
    std::os::unix::fs::symlink(&fifo, h.ws.join("innocent.txt")).unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(h.ws.join("sock")).unwrap();
    let s = h.session(
        json!({"responses": [{"tool_calls": [
            {"name": "read_file", "arguments": {"path": "pipe"}},
            {"name": "read_file", "arguments": {"path": "innocent.txt"}},
            {"name": "read_file", "arguments": {"path": "sock"}},
            {"name": "read_file", "arguments": {"path": "/dev/zero"}},
            {"name": "read_file", "arguments": {"path": "/dev/stdin"}},
            {"name": "edit", "arguments": {"path": "pipe", "old_string": "a", "new_string": "b"}},
            {"name": "grep", "arguments": {"pattern": "x"}},
        ]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let started = Instant::now();
    let ev = run(&s, user("go")).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let r = results(&ev);
    for (i, what) in [
        (0, "FIFO"),
        (1, "FIFO"),
        (2, "socket"),
        (3, "character device"),
        (5, "FIFO"),
    ] {
        assert_eq!(r[i].1, ToolStatus::Error, "{:?}", r[i]);
        assert!(r[i].2.contains(what), "{:?}", r[i]);
    }
    assert_eq!(r[4].1, ToolStatus::Error, "{:?}", r[4]);
    assert_eq!(
        r[6].1,
        ToolStatus::Ok,
        "grep skips what is not a regular file: {:?}",
        r[6]
    );
    s.shutdown().await.unwrap();
}

static RELEASE: AtomicBool = AtomicBool::new(false);

/// A tool stuck in blocking code that ignores Stop (a read on a hung mount, say).
struct Stuck;
impl Tool for Stuck {
    fn name(&self) -> &'static str {
        "stuck"
    }
    fn description(&self) -> &'static str {
        "never returns"
    }
    fn schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn effects(&self) -> waymark_tools::Effects {
        waymark_tools::Effects::READS
    }
}

impl FreeTool for Stuck {
    fn handle<'a>(
        &'a self,
        _: &'a ToolContext,
        _: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async {
            let _ = tokio::task::spawn_blocking(|| {
                while !RELEASE.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
            .await;
            Ok(ToolOutput::text("finally"))
        })
    }
}
struct WithStuck;
impl Extension for WithStuck {
    fn name(&self) -> &'static str {
        "stuck"
    }
    fn tools(&self) -> Vec<Arc<dyn FreeTool>> {
        vec![Arc::new(Stuck)]
    }
}

fn heartbeat(rt: &waymark_runtime::Runtime, id: &str) -> i64 {
    rt.store()
        .read(|c| waymark_runtime::store::sessions::lease(c, id))
        .unwrap()
        .unwrap()
        .heartbeat
}

async fn stop_within_a_second(
    s: &waymark_runtime::SessionHandle,
    rx: &mut tokio::sync::broadcast::Receiver<waymark_protocol::Event>,
) -> Vec<waymark_protocol::Event> {
    let started = Instant::now();
    s.submit(Op::Stop).await.unwrap();
    let mut ev = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        let done = matches!(e.kind, EventKind::TurnFinished { .. });
        ev.push(e);
        if done {
            break;
        }
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "Stop took {took:?}");
    ev
}

#[tokio::test]
async fn stop_ends_a_stuck_tool_turn_within_a_second_and_heartbeats_go_on() {
    let h = Harness::new(Config::default());
    let rt = h.reopen(|o| {
        o.extensions.push(Arc::new(WithStuck));
        o.heartbeat = Duration::from_millis(100);
    });
    let model = h.script(json!({"responses": [
        {"tool_calls": [{"name": "stuck"}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "trap '' TERM; echo stubborn; sleep 30"}}]},
        {"text": "never"}
    ]}));
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(model),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    let mut rx = s.subscribe();
    s.submit(user("go")).await.unwrap();
    loop {
        if let EventKind::ToolCall { .. } = rx.recv().await.unwrap().kind {
            break;
        }
    }
    let before = heartbeat(&rt, s.id());
    tokio::time::sleep(Duration::from_millis(600)).await;
    let during = heartbeat(&rt, s.id());
    assert!(
        during >= before + 300,
        "heartbeats stalled while a tool was stuck: {before} → {during}"
    );
    let ev = stop_within_a_second(&s, &mut rx).await;
    assert_eq!(finished(&ev), vec![(TurnEndReason::Aborted, None)]);
    assert!(
        results(&ev)[0].2.contains("abandoned"),
        "{:?}",
        results(&ev)
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(heartbeat(&rt, s.id()) > during);
    // A command that ignores SIGTERM is killed and the turn still ends within a second.
    s.submit(user("again")).await.unwrap();
    loop {
        if let EventKind::ToolCall { .. } = rx.recv().await.unwrap().kind {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ev = stop_within_a_second(&s, &mut rx).await;
    assert_eq!(finished(&ev), vec![(TurnEndReason::Aborted, None)]);
    assert!(results(&ev)[0].2.contains("stubborn"), "{:?}", results(&ev));
    RELEASE.store(true, Ordering::Relaxed);
    s.shutdown().await.unwrap();
}

/// A process whose lease was taken over (it was suspended, say, and another process
/// reopened the session) ends its turn with `lease_lost` and writes nothing more.
#[tokio::test]
async fn a_process_that_lost_the_lease_writes_nothing_more() {
    let h = harness();
    let marker = h.ws.join("done");
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": format!("sleep 1; touch {}", marker.display())}}]},
            {"text": "never"}
        ]}),
        PermissionMode::Auto,
    );
    let id = s.id().to_string();
    let mut rx = s.subscribe();
    s.submit(user("go")).await.unwrap();
    loop {
        if let EventKind::ToolCall { .. } = rx.recv().await.unwrap().kind {
            break;
        }
    }
    // Another process takes the session over.
    let other = h.reopen(|_| {});
    other
        .store()
        .write(i64::MAX / 2, |tx| {
            tx.acquire_lease(&id, "lease-thief", 1, 0, &|_| false)
                .map(|_| ())
        })
        .unwrap();
    let seq_at_takeover = h.runtime.events(&id, 0, 100_000).unwrap().len();
    let mut lost = None;
    let deadline = Instant::now() + Duration::from_secs(5);
    while lost.is_none() && Instant::now() < deadline {
        if let Ok(Ok(e)) = tokio::time::timeout(Duration::from_millis(200), rx.recv()).await
            && let EventKind::SessionError { error } = e.kind
        {
            lost = Some(error);
        }
    }
    let lost = lost.expect("no lease_lost error");
    assert_eq!(lost.code, "lease_lost", "{lost:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(marker.exists(), "the command itself ran to its end");
    let log = h.runtime.events(&id, 0, 100_000).unwrap();
    assert_eq!(
        log.len(),
        seq_at_takeover,
        "events were written after the lease was lost: {:?}",
        &log[seq_at_takeover..]
    );
    let lease = other
        .store()
        .read(|c| waymark_runtime::store::sessions::lease(c, &id))
        .unwrap()
        .unwrap();
    assert_eq!(lease.owner, "lease-thief");
    let _ = s.shutdown().await;
    let lease = other
        .store()
        .read(|c| waymark_runtime::store::sessions::lease(c, &id))
        .unwrap()
        .unwrap();
    assert_eq!(
        lease.owner, "lease-thief",
        "shutting down did not release the thief's lease"
    );
}

/// grep over more bytes than it may read stops and says so.
#[tokio::test]
async fn grep_is_bounded_and_says_it_was_cut() {
    let h = harness();
    {
        use std::io::Write as _;
        let mut f = std::io::BufWriter::new(std::fs::File::create(h.ws.join("big.log")).unwrap());
        let line = "a".repeat(1023) + "\n";
        for _ in 0..(300 * 1024) {
            f.write_all(line.as_bytes()).unwrap();
        }
    }
    let s = h.session(
        json!({"responses": [{"tool_calls": [{"name": "grep", "arguments": {"pattern": "needle"}}]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("go")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Ok);
    assert!(
        r[0].2
            .contains("search stopped early (256 MiB of files read)"),
        "{:?}",
        r[0]
    );
    s.shutdown().await.unwrap();
}

//! Item 10: size limits. A server answering an error with an endless or dripping body, a
//! file with a gigabyte line past the window asked for, a shell filling the disk, and a plan
//! file swapped for a FIFO or grown huge: none of them holds the turn or fills memory.

use super::super::harness::{Harness, results, run, user};
use super::super::mock_server::{MockResponse, MockServer};
use super::{harness, plan_entry};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use waymark_config::Config;
use waymark_protocol::{EventKind, PermissionMode, ToolStatus, TurnEndReason};
use waymark_runtime::SessionSpec;

/// An error status whose body never ends: `chunks` chunks of `size` bytes, `pause` apart.
fn endless_error(chunks: usize, size: usize, pause: Duration) -> MockResponse {
    let mut r = MockResponse::status(400, "", &[("content-type", "text/plain")]);
    r.chunks = vec![vec![b'e'; size]; chunks];
    r.pause = pause;
    r
}

async fn turn_error(h: &Harness, response: MockResponse, body_timeout: Duration) -> String {
    let server = MockServer::start(vec![response]).await;
    let base = format!("{}/v1", server.url);
    let rt = h.reopen(move |o| {
        let base = base.clone();
        o.http.error_body_timeout = body_timeout;
        o.env = Arc::new(move |k: &str| match k {
            "OPENAI_API_KEY" => Some("sk-red-team-key-0123456789".to_string()),
            "OPENAI_BASE_URL" => Some(base.clone()),
            _ => None,
        });
    });
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("openai:red-team".into()),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    let ev = run(&s, user("hello")).await;
    s.shutdown().await.unwrap();
    ev.iter()
        .find_map(|e| match &e.kind {
            EventKind::TurnFinished {
                reason: TurnEndReason::Error,
                error: Some(err),
                ..
            } => Some(err.message.clone()),
            _ => None,
        })
        .expect("the turn ended in an error")
}

#[tokio::test]
async fn http_error_bodies_are_read_with_a_cap_and_a_timeout() {
    let h = harness();
    // 20 MB that would take 100 s to arrive: reading stops at the cap.
    let started = Instant::now();
    let msg = turn_error(
        &h,
        endless_error(20_000, 1024, Duration::from_millis(5)),
        Duration::from_secs(60),
    )
    .await;
    assert!(msg.contains("HTTP 400"), "{msg}");
    assert!(
        msg.len() < 4096,
        "the detail is kept short: {} bytes",
        msg.len()
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // A byte every 100 ms for a minute: reading stops at the time limit.
    let started = Instant::now();
    let msg = turn_error(
        &h,
        endless_error(600, 1, Duration::from_millis(100)),
        Duration::from_millis(500),
    )
    .await;
    assert!(msg.contains("HTTP 400"), "{msg}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// Bytes this process has read through system calls so far.
fn bytes_read() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn read_file_reads_only_the_window_asked_for() {
    let h = harness();
    // 300 short lines, then an 8 GiB line (a sparse file: no disk used).
    let path = h.ws.join("huge.log");
    let head: String = (1..=300)
        .map(|i| format!("line {i:04} of the log, with a few more words\n"))
        .collect();
    std::fs::write(&path, &head).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let s = h.session(
        json!({"responses": [{"tool_calls": [
            {"name": "read_file", "arguments": {"path": "huge.log", "offset": 1, "limit": 300}},
            {"name": "read_file", "arguments": {"path": "huge.log", "offset": 290, "limit": 5}}
        ]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let before = bytes_read();
    let ev = run(&s, user("look at the log")).await;
    let read = bytes_read() - before;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(r[0].2.contains("line 0300 of the log"), "{r:?}");
    assert!(r[0].2.contains("the file goes on"), "{r:?}");
    assert!(r[1].2.contains("line 0294"), "{r:?}");
    assert!(
        read < 64 << 20,
        "{} MiB read for a 300-line window",
        read >> 20
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_sandboxed_shell_cannot_write_a_file_past_the_size_limit() {
    let mut c = Config::default();
    // The read-only shell (the scratch shell off, as where the kernel refuses it).
    c.sandbox.scratch_shell = false;
    let h = Harness::new(c);
    let s = h.session(
        json!({"responses": [{"tool_calls": [{"name": "bash", "arguments": {"command":
            "head -c 300M /dev/zero > \"$TMPDIR/fill\"; stat -c 'size=%s' \"$TMPDIR/fill\"; rm -f \"$TMPDIR/fill\""}}]},
            {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, plan_entry("fill the disk")).await;
    let r = results(&ev);
    assert_eq!(r[0].0, "bash", "{r:?}");
    assert!(r[0].2.contains("File size limit exceeded"), "{r:?}");
    assert!(r[0].2.contains(&format!("size={}", 128u64 << 20)), "{r:?}");
    s.shutdown().await.unwrap();
}

/// The red-team's attack: the plan-mode shell writes files under the per-file limit into its
/// temp folder, one command after another, and they stayed in the data folder for good. Now
/// each command's temp files go when it ends, a command holding more than
/// `sandbox.temp_max_mb` is stopped, and what a dead process left is swept when the session's
/// sandbox is first used.
#[tokio::test]
async fn the_plan_shell_cannot_fill_the_disk_through_its_temp_folder() {
    let mut c = Config::default();
    c.sandbox.temp_max_mb = 8;
    let h = Harness::new(c);
    let fill = |name: &str| {
        json!({"name": "bash", "arguments": {"command": format!(
            "head -c 3M /dev/zero > \"$TMPDIR/{name}\" && echo wrote {name}")}})
    };
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "ls -A \"$TMPDIR\"; echo listed"}}]},
            {"tool_calls": [fill("one")]},
            {"tool_calls": [fill("two")]},
            {"tool_calls": [{"name": "bash", "arguments": {"command":
                "for i in 1 2 3 4 5 6; do head -c 3M /dev/zero > \"$TMPDIR/f$i\"; done; sleep 20; echo never"}}]},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    // What a crashed process left in the session's temp folder.
    let tmp = h.session_dir(s.id()).join("sandbox-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("left-by-a-crash"), vec![1u8; 1 << 20]).unwrap();
    let ev = run(&s, plan_entry("fill the temp folder")).await;
    let r = results(&ev);
    assert_eq!(r.len(), 4, "{r:?}");
    assert!(
        r[0].2.contains("listed") && !r[0].2.contains("left-by-a-crash"),
        "swept before the first command: {r:?}"
    );
    assert!(
        r[1].2.contains("wrote one") && r[2].2.contains("wrote two"),
        "{r:?}"
    );
    assert_eq!(r[3].1, ToolStatus::Error, "{r:?}");
    assert!(r[3].2.contains("sandbox.temp_max_mb"), "{r:?}");
    assert!(
        !r[3].2.contains("never"),
        "stopped at the limit, not after its sleep: {r:?}"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
    assert!(
        left.is_empty(),
        "the temp folder is empty after the commands: {left:?}"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_plan_file_swapped_for_a_fifo_or_grown_huge_stalls_nothing() {
    let h = harness();
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "ExitPlanMode", "arguments": {}}]},
            {"text": "stuck?"}
        ]}),
        PermissionMode::Auto,
    );
    run(&s, user("/plan on")).await;
    let plan = h.session_dir(s.id()).join("artifacts/plan.md");
    std::fs::create_dir_all(plan.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&plan);
    super::super::harness::mkfifo(&plan);
    let started = Instant::now();
    let ev = run(&s, user("submit the plan")).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Error, "{r:?}");
    assert!(r[0].2.contains("FIFO"), "{r:?}");
    // What the desktop and `/plan view` show: a note, not a hang.
    let live = waymark_runtime::plan::live_plan(&plan, &h.runtime.store().redactor());
    assert!(
        live.html.contains("FIFO") && live.markdown.is_none(),
        "{live:?}"
    );
    let ev = run(&s, user("/plan view")).await;
    assert!(
        ev.iter().any(
            |e| matches!(&e.kind, EventKind::CommandOutput { text, .. } if text.contains("FIFO"))
        ),
        "{ev:?}"
    );
    assert!(h.runtime.plan_file(s.id()).is_err());
    // A 5 MiB plan: at most 512 KiB is rendered, with a note, and it is not offered for
    // in-place editing (saving would drop the rest).
    std::fs::remove_file(&plan).unwrap();
    let big = format!(
        "## Summary\nBig.\n\n{}",
        "- a step of the plan\n".repeat(250_000)
    );
    std::fs::write(&plan, &big).unwrap();
    let live = waymark_runtime::plan::live_plan(&plan, &h.runtime.store().redactor());
    assert!(live.markdown.is_none());
    assert!(
        live.html.contains("Only the first 512 KiB"),
        "{}",
        &live.html[live.html.len().saturating_sub(400)..]
    );
    assert!(
        live.html.len() < 2 << 20,
        "{} bytes of HTML",
        live.html.len()
    );
    s.shutdown().await.unwrap();
}

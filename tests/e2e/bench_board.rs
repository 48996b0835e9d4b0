//! The Goals board under load (issue 23): twenty scripted goals run at once in the one app
//! process while the board is on screen and scrolled (frame times), then the idle memory
//! those open sessions cost (PSS of every app process, per session).

use super::{app_pid, kb, stats, tree};
use crate::harness::Desk;
use serde_json::json;
use std::time::Duration;

const GOALS: usize = 20;

/// PSS (MB) of every app process, summed, and each process's name and PSS.
fn pss_mb() -> (f64, String) {
    let pid = app_pid().expect("the app's process");
    let each: Vec<(String, f64)> = tree(pid)
        .iter()
        .map(|p| {
            let name = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
            (
                name.trim().to_string(),
                kb(*p, "smaps_rollup", "Pss:") as f64 / 1024.0,
            )
        })
        .collect();
    let sum = each.iter().map(|(_, m)| m).sum();
    let list = each
        .iter()
        .map(|(n, m)| format!("{n} {m:.1}"))
        .collect::<Vec<_>>()
        .join(", ");
    (sum, list)
}

/// The app process's PSS (MB) by kind of mapping: heap and anonymous memory, files mapped
/// (the checkpoint stores' packs and indexes among them), and the rest.
fn app_breakdown() -> String {
    let pid = app_pid().expect("the app's process");
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let (mut anon, mut file, mut other) = (0u64, 0u64, 0u64);
    let mut kind = 0;
    for line in smaps.lines() {
        let mut parts = line.split_whitespace();
        let first = parts.next().unwrap_or("");
        if first.contains('-') && first.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) {
            let name = parts.nth(4).unwrap_or("");
            kind = if name.is_empty() || name == "[heap]" {
                0
            } else if name.starts_with('/') {
                1
            } else {
                2
            };
        } else if first == "Pss:" {
            let v: u64 = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            match kind {
                0 => anon += v,
                1 => file += v,
                _ => other += v,
            }
        }
    }
    format!(
        "app process: heap and anonymous {:.1} MB, files {:.1} MB, other {:.1} MB",
        anon as f64 / 1024.0,
        file as f64 / 1024.0,
        other as f64 / 1024.0
    )
}

/// A goal's script: a greeting, then turns that each list the folder (with a model delay)
/// and say a different thing, so the no-progress breaker never trips.
fn script(desk: &Desk) -> std::path::PathBuf {
    let mut responses = vec![json!({"text": "Hello."})];
    for i in 0..400 {
        responses.push(json!({"text": format!("Pass {i}: listing the folder."), "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}], "usage": {"input_tokens": 900, "output_tokens": 60}, "delay_ms": 250}));
        responses.push(json!({"text": format!("Pass {i} done."), "usage": {"input_tokens": 300, "output_tokens": 20}, "delay_ms": 150}));
    }
    let path = desk.dir.path().join("board-goal.json");
    std::fs::write(
        &path,
        json!({"responses": responses, "when_exhausted": "repeat_last"}).to_string(),
    )
    .unwrap();
    path
}

pub async fn run(desk: &Desk) {
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(
        desk.settings_file(),
        r#"{"goal": {"verification": "none"},
            "pricing": {"scripted:*": {"input_per_mtok": 3, "output_per_mtok": 15}}}"#,
    )
    .unwrap();
    let model = format!("scripted:{}", script(desk).display());
    let mut ids = Vec::new();
    for i in 0..GOALS {
        let ws = desk.dir.path().join(format!("board-{i:02}"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("README.md"), format!("project {i}\n")).unwrap();
        let out = desk.exec(&ws, &model, &["--permission", "auto", "Hello"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        ids.push(crate::harness::session_of(&out));
    }

    // `BENCH_BOARD_ENV="NAME=value …"`: more variables for the app (trying WebKit settings).
    let extra = std::env::var("BENCH_BOARD_ENV").unwrap_or_default();
    let extra: Vec<(&str, &str)> = extra
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let app = desk.launch_with(&extra).await;
    app.el("[data-testid=session].current").await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = pss_mb();
    println!("  one session open: {}", app_breakdown());

    // Every session opened in this process, idle, then each given a goal.
    for id in &ids {
        let r = app
            .js_async(&format!(
                "const done = arguments[arguments.length - 1]; \
                 window.__TAURI_INTERNALS__.invoke('open_session', {{ id: {id:?} }}) \
                   .then(() => done('ok'), (e) => done(JSON.stringify(e)));"
            ))
            .await;
        assert_eq!(r, "ok", "{id}: {r}");
    }
    tokio::time::sleep(Duration::from_secs(8)).await;
    let opened = pss_mb();
    println!("  {}", app_breakdown());
    println!(
        "idle PSS, all app processes: {:.1} MB with one session open, {:.1} MB with {GOALS} open: {:.2} MB per session opened (target <= 2)",
        before.0,
        opened.0,
        (opened.0 - before.0) / (GOALS - 1) as f64
    );
    println!("  one open: {}; {GOALS} open: {}", before.1, opened.1);
    for id in &ids {
        let r = app
            .js_async(&format!(
                "const done = arguments[arguments.length - 1]; \
                 window.__TAURI_INTERNALS__.invoke('goal', {{ id: {id:?}, op: {{ op: 'set', objective: 'Keep walking the folder', budget: {{}}, replace: false }} }}) \
                   .then(() => done('ok'), (e) => done(JSON.stringify(e)));"
            ))
            .await;
        assert_eq!(r, "ok", "{id}: {r}");
    }
    app.click("[data-testid=open-board]").await;
    app.wait_js(
        &format!(
            "return document.querySelectorAll('[data-testid=board-row]').length === {GOALS} || null"
        ),
        "every goal on the board",
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let active = app
        .js("return document.querySelectorAll('[data-testid=board-row][data-status=active]').length")
        .await;
    // Frames while the goals run: the board idle, then scrolled a little every frame.
    for (label, step) in [("idle", 0), ("scrolled 12 px per frame", 12)] {
        let frames = app
            .js_async(&format!(
                "const done = arguments[arguments.length - 1]; const el = document.querySelector('[data-testid=goal-board]'); \
                 const times = []; let last = 0; let dir = 1; \
                 function tick(now) {{ if (last) times.push(now - last); last = now; \
                   if ({step}) {{ if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) dir = -1; else if (el.scrollTop <= 0) dir = 1; el.scrollTop += dir * {step}; }} \
                   if (times.length < 300) requestAnimationFrame(tick); else done(times); }} \
                 requestAnimationFrame(() => requestAnimationFrame(tick));"
            ))
            .await;
        let frames: Vec<f64> = frames
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let slow = frames.iter().filter(|f| **f > 1000.0 / 60.0 + 2.0).count();
        let long = frames.iter().filter(|f| **f > 50.0).count();
        let fps = frames.len() as f64 * 1000.0 / frames.iter().sum::<f64>();
        println!(
            "goal board, {GOALS} goals running ({active} active at the start), {label}: {fps:.1} fps; frame time (ms) {}; frames over 1/60 s + 2 ms: {slow}; long frames (> 50 ms): {long}",
            stats(frames)
        );
    }
    let spent = app
        .js("return [...document.querySelectorAll('[data-testid=board-cost]')].map(e => e.textContent).slice(0, 3).join(', ')")
        .await;
    println!("  (the first rows' cost then: {spent})");
    app.shot("bench-board").await;

    // Idle again: every goal paused, the sessions still open.
    for id in &ids {
        app.js_async(&format!(
            "const done = arguments[arguments.length - 1]; \
             window.__TAURI_INTERNALS__.invoke('goal', {{ id: {id:?}, op: {{ op: 'pause' }} }}).then(() => done(1), () => done(0));"
        ))
        .await;
    }
    app.wait_js(
        "return document.querySelectorAll('[data-testid=board-row][data-status=active]').length === 0 || null",
        "every goal paused",
    )
    .await;
    app.click("[data-testid=open-board]").await;
    for wait in [8, 30] {
        tokio::time::sleep(Duration::from_secs(if wait == 8 { 8 } else { 22 })).await;
        let after = pss_mb();
        println!(
            "idle PSS {wait} s after the {GOALS} goals ran and were paused: {:.1} MB: {:.2} MB per session over one open ({})",
            after.0,
            (after.0 - before.0) / (GOALS - 1) as f64,
            after.1
        );
        println!("  {}", app_breakdown());
    }
    // `BENCH_BOARD_RELOAD=1`: the page loaded afresh, to tell what the page holds from what
    // the processes keep.
    if std::env::var_os("BENCH_BOARD_RELOAD").is_some() {
        app.js("location.reload(); return 1").await;
        tokio::time::sleep(Duration::from_secs(12)).await;
        let after = pss_mb();
        println!(
            "idle PSS after the page was loaded afresh: {:.1} MB: {:.2} MB per session over one open ({})",
            after.0,
            (after.0 - before.0) / (GOALS - 1) as f64,
            after.1
        );
    }
    app.close().await;
}

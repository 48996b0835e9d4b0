//! Desktop benchmarks (a bench target, `scripts/bench.sh --desktop` runs it; it prints figures):
//! cold start to the first session on screen, idle memory of every app process, plan-file
//! change to repaint latency, scrolling a transcript of more than 5,000 messages, and the
//! Goals board with twenty goals running (`bench_board.rs`). The
//! timings are taken from outside the app: scripts run over WebDriver watch the page.

#[path = "bench_board.rs"]
mod board;
mod harness;

use harness::{Desk, root, watch_plan_paint};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 2..];
    Some(after.split_whitespace().map(str::to_string).collect())
}

/// The app's process: the child of the WebDriver whose executable is waymark-desktop.
fn app_pid() -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe"))
                .map(|p| p.ends_with("waymark-desktop"))
                .unwrap_or(false)
                && stat_fields(*pid).is_some_and(|f| f[0] != "Z")
        })
}

/// `pid` and all its descendants.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        let parent = all[i];
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            if let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok())
                && stat_fields(p).is_some_and(|f| f[1] == parent.to_string())
            {
                all.push(p);
            }
        }
        i += 1;
    }
    all
}

/// PSS (KiB) of every process of a window launched alone, without WebDriver, once it has
/// run for ten seconds: the process, its WebKit web and network processes.
fn idle_pss_alone(desk: &Desk, binary: &std::path::Path, env: &[(&str, &str)]) -> u64 {
    let mut cmd = std::process::Command::new(binary);
    cmd.envs(desk.env())
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let proc = harness::spawn(&mut cmd);
    let pid = proc.id();
    // The window is up once its web process is.
    let start = std::time::Instant::now();
    while tree(pid).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} showed no web process",
            binary.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Ten seconds after the start, as the target is set.
    std::thread::sleep(Duration::from_secs(10).saturating_sub(start.elapsed()));
    let procs = tree(pid);
    let pss = procs.iter().map(|p| kb(*p, "smaps_rollup", "Pss:")).sum();
    if std::env::var_os("BENCH_VERBOSE").is_some() {
        for p in &procs {
            let name = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
            println!(
                "    {}: PSS {:.1} MB (anonymous {:.1} MB)",
                name.trim(),
                kb(*p, "smaps_rollup", "Pss:") as f64 / 1024.0,
                kb(*p, "smaps_rollup", "Anonymous:") as f64 / 1024.0
            );
        }
    }
    drop(proc);
    pss
}

/// Idle PSS of the app against a blank Tauri 2 window (the floor), each launched alone,
/// alternating, in the same run. The blank app is `BLANK_TAURI_APP` (scripts/bench.sh builds
/// the reference skeleton in release for it, its window at the app's size); without it the
/// comparison is skipped. The app is measured on first launch, on a data folder of its own:
/// with the offline demo, and on the setup card.
fn idle_memory_against_blank(desk: &Desk) {
    let Some(blank) = std::env::var_os("BLANK_TAURI_APP")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
    else {
        println!("idle memory against a blank Tauri window: skipped (BLANK_TAURI_APP not set)");
        return;
    };
    let ours = harness::app_binary();
    let (mut app, mut setup, mut floor, mut flat) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        floor.push(idle_pss_alone(desk, &blank, &[]) as f64 / 1024.0);
        // The app turns accelerated compositing off where there is no GPU (as here); the
        // blank window does not, so it is also measured the way the app runs.
        flat.push(
            idle_pss_alone(desk, &blank, &[("WEBKIT_DISABLE_COMPOSITING_MODE", "1")]) as f64
                / 1024.0,
        );
        // With the offline demo: two sessions, one goal blocked on a question, one plan
        // waiting on its review.
        app.push(idle_pss_alone(&Desk::start(), &ours, &[("WAYMARK_DEMO", "1")]) as f64 / 1024.0);
        setup.push(idle_pss_alone(&Desk::start(), &ours, &[]) as f64 / 1024.0);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let (a, s) = (median(&mut app), median(&mut setup));
    let (f, g) = (median(&mut floor), median(&mut flat));
    println!(
        "idle PSS, all processes, launched alone, first launch (median of 3): app with the demo {a:.1} MB, on the setup card {s:.1} MB"
    );
    println!(
        "  blank Tauri window with compositing off, as the app runs here: {g:.1} MB; ratio {:.3} with the demo (target <= 1.10), {:.3} on the setup card",
        a / g,
        s / g
    );
    println!(
        "  blank Tauri window with compositing on: {f:.1} MB; ratio {:.3} with the demo",
        a / f
    );
}

fn kb(pid: u32, file: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn stats(mut v: Vec<f64>) -> String {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    format!(
        "median {:.1}, p95 {:.1}, max {:.1} (n={})",
        pct(0.5),
        pct(0.95),
        v[v.len() - 1],
        v.len()
    )
}

fn exec(desk: &Desk, ws: &std::path::Path, model: &str, args: &[&str]) {
    let out = desk.exec(ws, model, args);
    assert!(
        out.status.code().is_some_and(|c| matches!(c, 0 | 3 | 5)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn workspace(desk: &Desk) -> PathBuf {
    let ws = desk.dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("README.md"), "bench\n").unwrap();
    ws
}

/// Watches the page for its first frames with data, as the window shows them: the session
/// list (`list`) and then the first session opened in it (`open`). It resolves with the
/// wall-clock time (ms) of each of those frames, the time the page started loading
/// (`page`), and whether a frame had already been drawn when the watch began (`late`: its
/// time is then only the moment the bench looked). The page has no timing code of its own.
/// Cold start with no WebDriver at all: the app is launched alone and its screen watched from
/// outside (X screenshots) until it shows what it shows once settled: the session list and
/// the newest session. Returns ms from launch to the first screenshot equal to the settled
/// one, and the screenshot interval (the figure's resolution); `None` if nothing was drawn.
fn cold_start_alone(desk: &Desk) -> Option<(f64, f64)> {
    const W: usize = 1440;
    const H: usize = 900;
    let mut cmd = std::process::Command::new(harness::app_binary());
    cmd.envs(desk.env())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let launched = std::time::Instant::now();
    let proc = harness::spawn(&mut cmd);
    let mut shots: Vec<(f64, u64)> = Vec::new();
    while launched.elapsed() < Duration::from_secs(5) {
        let before = launched.elapsed().as_secs_f64() * 1000.0;
        let out = std::process::Command::new("import")
            .args(["-silent", "-window", "root", "-depth", "8", "rgb:-"])
            .env("DISPLAY", &desk.display)
            .output()
            .ok()?;
        let after = launched.elapsed().as_secs_f64() * 1000.0;
        if out.stdout.len() != W * H * 3 {
            return None;
        }
        // The window's top 700 rows: its composer (a blinking caret) stays out.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hasher::write(&mut h, &out.stdout[..W * 3 * 700]);
        shots.push(((before + after) / 2.0, std::hash::Hasher::finish(&h)));
        // Leave the CPU to the app between screenshots (each costs one, briefly).
        std::thread::sleep(Duration::from_millis(40));
    }
    drop(proc);
    let settled = shots.last()?.1;
    if shots.first()?.1 == settled {
        return None;
    }
    let at = shots.iter().find(|(_, h)| *h == settled)?.0;
    let interval = shots.last()?.0 / shots.len() as f64;
    Some((at, interval))
}

/// `stats` of the measured values, saying how many runs could not be measured.
fn stats_of(v: Vec<Option<f64>>) -> String {
    let runs = v.len();
    let got: Vec<f64> = v.into_iter().flatten().collect();
    let missed = runs - got.len();
    let note = if missed > 0 {
        format!("; {missed} of {runs} not measured")
    } else {
        String::new()
    };
    if got.is_empty() {
        format!("not measured{note}")
    } else {
        format!("{}{note}", stats(got))
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // `BENCH_ONLY_BOARD=1`: the Goals board with twenty goals running, alone.
    if std::env::var_os("BENCH_ONLY_BOARD").is_some() {
        board::run(&Desk::start()).await;
        return;
    }
    let desk = Desk::start();
    let ws = workspace(&desk);
    let plan_script = root().join("tests/e2e/scripts/plan_wait.json");
    exec(
        &desk,
        &ws,
        &format!("scripted:{}", plan_script.display()),
        &["--plan", "Plan it"],
    );

    // Cold start: a fresh app process per run, with no WebDriver, watched from outside.
    // `BENCH_ONLY_IDLE=1`: the idle-memory comparison alone.
    if std::env::var_os("BENCH_ONLY_IDLE").is_some() {
        idle_memory_against_blank(&desk);
        return;
    }
    // `BENCH_ONLY_PAINT=1`: skip cold start and idle memory (repaint and transcript only).
    let only_paint = std::env::var_os("BENCH_ONLY_PAINT").is_some();
    let mut alone = Vec::new();
    let mut interval = 0.0f64;
    for _ in 0..if only_paint { 0 } else { 10 } {
        if let Some((ms, i)) = cold_start_alone(&desk) {
            alone.push(Some(ms));
            interval = interval.max(i);
        } else {
            alone.push(None);
        }
    }
    println!(
        "cold start, no WebDriver: launch to the session list and first session on screen (ms, screenshots every ~{interval:.0} ms): {}",
        stats_of(alone)
    );
    // `BENCH_ONLY_START=1`: the cold-start figures alone.
    let only_start = std::env::var_os("BENCH_ONLY_START").is_some();

    if only_start {
        return;
    }
    // Idle memory against the floor, each window alone (the app opens the newest session).
    if !only_paint {
        idle_memory_against_blank(&desk);
    }

    // Idle memory of the app and its web processes with a session open.
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    app.click("[data-testid=tab-plan]").await;
    app.el("[data-testid=plan-doc]").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pid = app_pid().unwrap();
    let procs = tree(pid);
    let names: Vec<String> = procs
        .iter()
        .map(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .collect();
    for (p, n) in procs.iter().zip(&names) {
        println!(
            "  {n}: RSS {:.1} MB, PSS {:.1} MB (anonymous {:.1} MB)",
            kb(*p, "status", "VmRSS:") as f64 / 1024.0,
            kb(*p, "smaps_rollup", "Pss:") as f64 / 1024.0,
            kb(*p, "smaps_rollup", "Anonymous:") as f64 / 1024.0
        );
    }
    let rss: u64 = procs.iter().map(|p| kb(*p, "status", "VmRSS:")).sum();
    let pss: u64 = procs.iter().map(|p| kb(*p, "smaps_rollup", "Pss:")).sum();
    println!(
        "idle memory of {} processes {names:?}: RSS sum {:.1} MB, PSS sum {:.1} MB",
        procs.len(),
        rss as f64 / 1024.0,
        pss as f64 / 1024.0
    );

    // Plan change -> repaint. Not now first: with no review pending the tab follows the
    // file (under review it shows the revision as submitted).
    app.click("[data-testid=defer]").await;
    app.el("[data-testid=plan-doc][data-shows=file]").await;
    let sid = app
        .js("return document.querySelector('[data-testid=session].current').dataset.sessionId")
        .await;
    let path = desk
        .data_dir()
        .join("sessions")
        .join(sid.as_str().unwrap())
        .join("artifacts/plan.md");
    let mut lat = Vec::new();
    for i in 0..30 {
        let marker = format!("bench edit {i}");
        let text = format!(
            "## Summary\n{marker}\n\n{}",
            "- a step with `code` and **bold**\n".repeat(200)
        );
        app.js(&watch_plan_paint(&marker)).await;
        let before = now_ms();
        if i % 2 == 0 {
            std::fs::write(&path, &text).unwrap();
        } else {
            let tmp = path.with_file_name(".plan.md.swp");
            std::fs::write(&tmp, &text).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        }
        let painted = app.wait_js("return window.__planPainted", "repaint").await;
        lat.push(painted.as_f64().unwrap() - before);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    println!(
        "plan.md change -> Plan tab repainted (ms, 200-line plan, plain and rename writes): {}",
        stats(lat)
    );
    app.close().await;

    // A transcript of more than 5,000 messages: a goal of 2,500 turns, two replies each, the
    // second with Markdown and a code block.
    let turns = 2_500;
    let mut responses = Vec::new();
    for i in 0..turns {
        responses.push(json!({"text": format!("Turn {i}: checking the folder."), "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}], "usage": {"input_tokens": 100, "output_tokens": 20}}));
        // Markdown and code, as real replies have them.
        responses.push(json!({"text": format!("### Turn {i} done\n\nThe folder holds **one file**; next:\n\n- read `src/main.rs`\n- run the tests\n\n```rust\nfn turn() -> u32 {{ {i} }}\n```\n"), "usage": {"input_tokens": 50, "output_tokens": 10}}));
    }
    let script = desk.dir.path().join("long.json");
    std::fs::write(
        &script,
        json!({"responses": responses, "when_exhausted": "repeat_last"}).to_string(),
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    exec(
        &desk,
        &ws,
        &format!("scripted:{}", script.display()),
        &[
            "--permission",
            "auto",
            &format!("/goal Walk the folder turns={turns}"),
        ],
    );
    println!(
        "(made a {turns}-turn goal session in {:.1} s)",
        t0.elapsed().as_secs_f64()
    );
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;
    let long = app.js("return [...document.querySelectorAll('[data-testid=session]')].find(b => !b.textContent.includes('Plan it')).dataset.sessionId").await;
    let t = now_ms();
    app.open_session(long.as_str().unwrap()).await;
    // The newest part on screen (the older part may still be on its way)…
    let first = app
        .wait_js("const t = document.querySelector('[data-testid=transcript]'); return t && t.querySelector('[data-testid=assistant-message]') ? Number(t.dataset.items) : null", "the newest messages")
        .await;
    println!(
        "opened a {turns}-turn session: its newest {first} items on screen in {:.0} ms",
        now_ms() - t
    );
    // …then the whole transcript.
    let items = app
        .wait_js("const t = document.querySelector('[data-testid=transcript]'); const n = t ? Number(t.dataset.items) : 0; return n > 5000 && t.querySelector('.item') ? n : null", "the long transcript")
        .await;
    println!(
        "opened a transcript of {items} items in {:.0} ms",
        now_ms() - t
    );
    // Of which the view's call alone (the runtime's read, the IPC, the page's JSON parse),
    // the session being open already.
    let call = app
        .js_async(&format!(
            "const done = arguments[arguments.length - 1]; const t = performance.now(); \
             window.__TAURI_INTERNALS__.invoke('open_session', {{ id: {long} }}).then( \
               (v) => done([performance.now() - t, JSON.stringify(v).length, v.events.length]), \
               (e) => done(String(e)));"
        ))
        .await;
    println!("  the open_session call alone: [ms, bytes of JSON, events] {call}");
    for (label, step) in [
        ("idle (no scrolling)", 0),
        ("a wheel-like 120 px per frame", 120),
        ("a fling of 600 px per frame", 600),
    ] {
        let frames = app
            .client
            .execute_async(
                &format!(
                    "const done = arguments[arguments.length - 1]; const el = document.querySelector('[data-testid=transcript]'); \
                     el.scrollTop = el.scrollHeight / 3; const times = []; let last = 0; \
                     function tick(now) {{ if (last) times.push(now - last); last = now; el.scrollTop += {step}; \
                       if (times.length < 240) requestAnimationFrame(tick); else done(times); }} \
                     requestAnimationFrame(() => requestAnimationFrame(tick));"
                ),
                vec![],
            )
            .await
            .unwrap();
        let frames: Vec<f64> = frames
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let long_frames = frames.iter().filter(|f| **f > 50.0).count();
        println!(
            "transcript, {label}: frame time (ms) {}; long frames (> 50 ms): {long_frames}",
            stats(frames)
        );
    }
    app.shot("bench-long-transcript").await;

    // One message's render: a typical reply (a heading, a list, a code block, a table) in
    // batches of 64, as the transcript asks for them, round trip included.
    let per = app
        .js_async(concat!(
            "const done = arguments[arguments.length - 1];",
            "const fence = '`'.repeat(3);",
            "const reply = (i) => '## Step ' + i + '\\n\\nI read **src/main.rs** and changed `parse`:\\n\\n- one\\n- two\\n\\n' + fence + 'rust\\nfn main() { let n = ' + i + '; }\\n' + fence + '\\n\\n| a | b |\\n|---|---|\\n| ' + i + ' | x |\\n';",
            "const batch = (k) => Array.from({ length: 64 }, (_, i) => reply(k * 64 + i));",
            "(async () => { const t = performance.now(); for (let k = 0; k < 10; k++) await window.__TAURI_INTERNALS__.invoke('render_markdown', { texts: batch(k) }); done((performance.now() - t) / 640); })().catch((e) => done(String(e)));",
        ))
        .await;
    println!("one reply rendered (ms per message, 640 messages in batches of 64): {per}");
    app.close().await;
    drop(desk);

    // The Goals board on a desk of its own (its settings turn verification off).
    board::run(&Desk::start()).await;
}

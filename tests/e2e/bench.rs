//! Desktop benchmarks (a bench target, `scripts/bench.sh --desktop` runs it; it prints figures):
//! cold start to an interactive window, idle memory of every app process, plan-file change
//! to repaint latency, and scrolling a transcript of more than 5,000 messages.

mod harness;

use harness::{App, Desk, root};
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
        out.status.code().is_some_and(|c| c == 0 || c == 3),
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

/// Launches the app directly and returns (interactive, page load start), in ms after spawn.
fn direct_start(desk: &Desk) -> (f64, f64) {
    use std::io::BufRead;
    let mut cmd = std::process::Command::new(harness::app_binary());
    cmd.envs(desk.env())
        .env("WAYMARK_WEB_CONSOLE", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let spawned = now_ms();
    let mut app = harness::spawn(&mut cmd);
    let pid = app.child().id();
    let out = app.child().stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("waymark-startup ").nth(1) {
                let _ = tx.send(rest.to_string());
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the app never reported being interactive");
    let field = |name: &str| -> f64 {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line:?}"))
    };
    let times = (field("interactive") - spawned, field("page") - spawned);
    // Closed the way a desktop logout does; the next launch starts from nothing.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let _ = app.child().wait();
    times
}

async fn interactive(app: &App) -> f64 {
    app.wait_js("return document.body.dataset.interactiveAt ? Number(document.body.dataset.interactiveAt) : null", "interactive").await.as_f64().unwrap()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let desk = Desk::start();
    let ws = workspace(&desk);
    let plan_script = root().join("tests/e2e/scripts/plan_wait.json");
    exec(
        &desk,
        &ws,
        &format!("scripted:{}", plan_script.display()),
        &["--plan", "Plan it"],
    );

    // Cold start as a user launches it (no WebDriver, which holds the first navigation back
    // until its session is set up): spawn to the first session shown and usable, as the page
    // reports it on its console (`WAYMARK_WEB_CONSOLE` sends that to stderr).
    let mut starts = Vec::new();
    let mut page = Vec::new();
    for _ in 0..10 {
        let (interactive, loading) = direct_start(&desk);
        starts.push(interactive);
        page.push(loading);
    }
    println!("cold start to interactive window (ms): {}", stats(starts));
    println!(
        "  of which spawn to the page starting to load (ms): {}",
        stats(page)
    );

    // Idle memory of the app and its web processes with a session open.
    let app = desk.launch().await;
    interactive(&app).await;
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

    // Plan change -> repaint.
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
        let before = now_ms();
        if i % 2 == 0 {
            std::fs::write(&path, &text).unwrap();
        } else {
            let tmp = path.with_file_name(".plan.md.swp");
            std::fs::write(&tmp, &text).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        }
        let painted = app
            .wait_js(&format!("const d = document.querySelector('[data-testid=plan-doc]'); return d && d.textContent.includes({marker:?}) && d.dataset.paintedAt ? Number(d.dataset.paintedAt) : null"), "repaint")
            .await;
        lat.push(painted.as_f64().unwrap() - before);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    println!(
        "plan.md change -> Plan tab repainted (ms, 200-line plan, plain and rename writes): {}",
        stats(lat)
    );
    app.close().await;

    // A transcript of more than 5,000 messages: a goal of 2,500 turns, two replies each.
    let turns = 2_500;
    let mut responses = Vec::new();
    for i in 0..turns {
        responses.push(json!({"text": format!("Turn {i}: checking the folder."), "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}], "usage": {"input_tokens": 100, "output_tokens": 20}}));
        responses.push(json!({"text": format!("Turn {i} done; the folder holds one file, and the next step follows."), "usage": {"input_tokens": 50, "output_tokens": 10}}));
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
    interactive(&app).await;
    let long = app.js("return [...document.querySelectorAll('[data-testid=session]')].find(b => !b.textContent.includes('Plan it')).dataset.sessionId").await;
    let t = now_ms();
    app.open_session(long.as_str().unwrap()).await;
    let items = app
        .wait_js("const t = document.querySelector('[data-testid=transcript]'); const n = t ? Number(t.dataset.items) : 0; return n > 5000 && t.querySelector('.item') ? n : null", "the long transcript")
        .await;
    println!(
        "opened a transcript of {items} items in {:.0} ms",
        now_ms() - t
    );
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
    app.close().await;
}

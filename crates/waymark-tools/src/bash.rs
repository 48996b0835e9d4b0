//! `bash`: runs a command in the workspace in its own process group, with a timeout and an
//! output cap. On timeout or Stop the whole group is killed and the output so far is kept.

use super::{Tool, ToolContext, ToolError, ToolOutput, parse_args, truncate_middle};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// Bytes kept from each end of a command's output while it runs.
const KEEP_BYTES: usize = 1 << 20;

/// Runs a shell command.
pub struct Bash;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BashArgs {
    command: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// Output collected from both pipes: the start, and a rolling window of the end.
#[derive(Default)]
struct Collected {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
    /// What has arrived since the live view was last given output (its newest part).
    unseen: std::collections::VecDeque<u8>,
    /// A line too long for the live view is being skipped to its end: the view is only ever
    /// given whole lines, so redaction sees every secret whole.
    skipping: bool,
}

/// How often a running command's new output lines go to the live view.
const LIVE_EVERY: Duration = Duration::from_millis(200);
/// The most output the live view is given at once (the newest part of it).
const LIVE_MAX: usize = 8 * 1024;

impl Collected {
    /// The whole lines that arrived since the last call (a line still being written waits
    /// for its end), at most [`LIVE_MAX`] bytes of the newest.
    fn take_lines(&mut self) -> Option<String> {
        let end = self.unseen.iter().rposition(|b| *b == b'\n')? + 1;
        let lines: Vec<u8> = self.unseen.drain(..end).collect();
        // The newest lines that fit, cut at a line's start (never inside one).
        let over = lines.len().saturating_sub(LIVE_MAX);
        let start = if over == 0 {
            0
        } else {
            lines[over..].iter().position(|b| *b == b'\n')? + over + 1
        };
        (start < lines.len()).then(|| String::from_utf8_lossy(&lines[start..]).into_owned())
    }

    fn push(&mut self, bytes: &[u8]) {
        let mut fresh = bytes;
        if self.skipping {
            match fresh.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    self.skipping = false;
                    fresh = &fresh[i + 1..];
                }
                None => fresh = &[],
            }
        }
        self.unseen.extend(fresh);
        if self.unseen.len() > LIVE_MAX * 2 {
            // Too much unseen: keep the whole lines at its end; a line still being written
            // that is this long is skipped to its end.
            match self.unseen.iter().rposition(|b| *b == b'\n') {
                Some(i) if self.unseen.len() - (i + 1) <= LIVE_MAX => {
                    let cut = self.unseen.len().saturating_sub(LIVE_MAX * 2);
                    let from = self
                        .unseen
                        .iter()
                        .skip(cut)
                        .position(|b| *b == b'\n')
                        .map_or(i + 1, |p| cut + p + 1);
                    self.unseen.drain(..from);
                }
                _ => {
                    self.unseen.clear();
                    self.skipping = true;
                }
            }
        }
        self.total += bytes.len();
        let room = KEEP_BYTES.saturating_sub(self.head.len());
        let (h, t) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(h);
        self.tail.extend(t);
        while self.tail.len() > KEEP_BYTES {
            self.tail.pop_front();
        }
    }

    fn text(&self) -> String {
        let tail = {
            let (a, b) = self.tail.as_slices();
            [a, b].concat()
        };
        let dropped = self.total - self.head.len() - self.tail.len();
        if dropped == 0 {
            let mut s = String::from_utf8_lossy(&self.head).into_owned();
            s.push_str(&String::from_utf8_lossy(&tail));
            return s;
        }
        // Output was left out between the two: each is cut back to whole lines, so no line
        // (and no secret in it) shows in part, where redaction would not find it.
        let head = match self.head.iter().rposition(|b| *b == b'\n') {
            Some(i) => &self.head[..=i],
            None => &[][..],
        };
        let tail = match tail.iter().position(|b| *b == b'\n') {
            Some(i) => &tail[i + 1..],
            None => &[][..],
        };
        let omitted = self.total - head.len() - tail.len();
        format!(
            "{}[… {omitted} bytes of output omitted …]\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(tail)
        )
    }
}

async fn pump(mut r: impl tokio::io::AsyncRead + Unpin, out: Arc<Mutex<Collected>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => out
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(&buf[..n]),
        }
    }
}

/// Gives the live view the command's new whole lines, a few times a second, for as long as
/// it runs (never resolves; without a live view, only waits).
async fn stream(live: Option<&crate::LiveOutput>, out: &Mutex<Collected>) {
    let Some(live) = live else {
        return std::future::pending().await;
    };
    let mut every = tokio::time::interval(LIVE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let lines = out.lock().unwrap_or_else(|p| p.into_inner()).take_lines();
        if let Some(lines) = lines {
            live(&lines);
        }
    }
}

#[allow(unsafe_code)]
fn signal_group(pgid: u32, sig: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid signals only that process group, which is the
        // group this tool created for its child; there is no memory access involved.
        unsafe {
            libc::kill(-(pgid as i32), sig);
        }
    }
}

enum End {
    Exited(Option<i32>),
    TimedOut,
    Stopped,
    /// A sandboxed command's temp folder passed its limit.
    TempFull,
}

/// Resolves once the sandboxed command's temp folder holds more than its limit (never for a
/// command that is not sandboxed).
async fn temp_full(sandbox: Option<&waymark_sandbox::SandboxSpec>) {
    let Some(spec) = sandbox else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(waymark_sandbox::temp::WATCH_EVERY).await;
        let (dir, max) = (spec.tmp.clone(), spec.tmp_max_bytes);
        if tokio::task::spawn_blocking(move || waymark_sandbox::temp::over(&dir, max))
            .await
            .unwrap_or(false)
        {
            return;
        }
    }
}

impl Tool for Bash {
    fn name(&self) -> &'static str {
        "bash"
    }
    fn description(&self) -> &'static str {
        "Run a bash command in the workspace. Output (stdout and stderr) is returned with the exit code. Default timeout 120 s; `timeout_ms` asks for another, up to the limit the user set (and never past a time limit the session sets)."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "command": {"type": "string"},
            "timeout_ms": {"type": "integer", "minimum": 100}
        }, "required": ["command"]})
    }
    fn effects(&self) -> crate::Effects {
        crate::Effects::SHELL
    }
}

impl crate::FreeTool for Bash {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: BashArgs = parse_args(self.name(), args)?;
            if a.command.trim().is_empty() {
                return Err(ToolError::Model("the command is empty".into()));
            }
            let (timeout, capped) = ctx.timeouts.resolve(a.timeout_ms);
            let mut cmd = match &ctx.sandbox {
                // Plan mode: the helper confines the shell before it starts.
                Some(spec) => {
                    std::os::unix::fs::DirBuilderExt::mode(
                        std::fs::DirBuilder::new().recursive(true),
                        0o700,
                    )
                    .create(&spec.tmp)
                    .map_err(|e| {
                        ToolError::Model(format!("cannot prepare the sandbox temp folder: {e}"))
                    })?;
                    let argv = spec.command_line(
                        std::ffi::OsStr::new("bash"),
                        &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new(&a.command)],
                    );
                    let mut c = tokio::process::Command::new(&argv[0]);
                    c.args(&argv[1..]);
                    c
                }
                None => {
                    let mut c = tokio::process::Command::new("bash");
                    c.arg("-c").arg(&a.command);
                    c
                }
            };
            // Tool processes never inherit secrets (see `secrets::ToolEnv`).
            let env = if ctx.sandbox.is_some() {
                &ctx.env.sandboxed
            } else {
                &ctx.env.plain
            };
            cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
            if let Some(spec) = &ctx.sandbox {
                cmd.env("TMPDIR", &spec.tmp);
            }
            cmd.current_dir(&ctx.workspace)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .env("PAGER", "cat")
                .env("GIT_PAGER", "cat")
                .env("GIT_TERMINAL_PROMPT", "0")
                .kill_on_drop(true);
            // Its own session (hence process group): no controlling terminal to type into,
            // and one group to kill on timeout or Stop.
            waymark_sandbox::new_session_async(&mut cmd);
            let mut child = cmd
                .spawn()
                .map_err(|e| ToolError::Model(format!("could not start bash: {e}")))?;
            let pgid = child.id().unwrap_or(0);
            let out = Arc::new(Mutex::new(Collected::default()));
            let mut readers = Vec::new();
            if let Some(o) = child.stdout.take() {
                readers.push(tokio::spawn(pump(o, out.clone())));
            }
            if let Some(e) = child.stderr.take() {
                readers.push(tokio::spawn(pump(e, out.clone())));
            }
            let end = tokio::select! {
                status = child.wait() => End::Exited(status.ok().and_then(|s| s.code())),
                _ = tokio::time::sleep(timeout) => End::TimedOut,
                _ = ctx.cancel.cancelled() => End::Stopped,
                _ = temp_full(ctx.sandbox.as_ref()) => End::TempFull,
                _ = stream(ctx.live.as_ref(), &out) => unreachable!("the live view never ends"),
            };
            if ctx.sandbox.is_some() && matches!(end, End::Exited(_)) {
                // Nothing a sandboxed command started outlives it (it cannot leave the group).
                signal_group(pgid, libc::SIGKILL);
            }
            if !matches!(end, End::Exited(_)) {
                signal_group(pgid, libc::SIGTERM);
                // Short, so Stop ends the turn well within a second.
                if tokio::time::timeout(Duration::from_millis(250), child.wait())
                    .await
                    .is_err()
                {
                    signal_group(pgid, libc::SIGKILL);
                    let _ = child.wait().await;
                }
                signal_group(pgid, libc::SIGKILL);
            }
            // Background jobs may hold the pipes open; give the readers a moment, then move on.
            for r in readers {
                let _ = tokio::time::timeout(Duration::from_millis(150), r).await;
            }
            // Nothing of the group runs any more: what it left in the temp folder goes, so
            // the data folder does not fill up command after command.
            if let Some(spec) = &ctx.sandbox {
                let dir = spec.tmp.clone();
                let emptied =
                    tokio::task::spawn_blocking(move || waymark_sandbox::temp::empty(&dir)).await;
                if let Ok(Err(e)) = emptied {
                    tracing::warn!("the sandbox temp folder was not emptied: {e}");
                }
            }
            let text = out.lock().unwrap_or_else(|p| p.into_inner()).text();
            // Secrets go before the cut: a cut through one would leave a piece of it that
            // redaction no longer finds.
            let text = match &ctx.redactor {
                Some(r) => r.redact(&text).into_owned(),
                None => text,
            };
            let body = truncate_middle(&text, ctx.output_limit);
            let body = if body.is_empty() {
                "(no output)".to_string()
            } else {
                body
            };
            match end {
                End::Exited(Some(0)) => Ok(ToolOutput::text(format!("{body}\n[exit code: 0]"))),
                End::Exited(Some(waymark_sandbox::NOT_ENFORCED_EXIT))
                    if ctx.sandbox.is_some() && text.contains("waymark sandbox:") =>
                {
                    Err(ToolError::Model(format!(
                        "{body}\n[the shell sandbox could not be applied, so the command did not run]"
                    )))
                }
                End::Exited(Some(code)) => {
                    Err(ToolError::Model(format!("{body}\n[exit code: {code}]")))
                }
                End::Exited(None) => Err(ToolError::Model(format!("{body}\n[killed by a signal]"))),
                End::TimedOut => Err(ToolError::Model(format!(
                    "{body}\n[timed out after {} ms{}; the command and its child processes were killed]",
                    timeout.as_millis(),
                    capped.map(|c| format!(" ({c})")).unwrap_or_default()
                ))),
                End::Stopped => Err(ToolError::Model(format!(
                    "{body}\n[stopped by the user; the command and its child processes were killed]"
                ))),
                End::TempFull => Err(ToolError::Model(format!(
                    "{body}\n[stopped: the command's temp files passed the sandbox's limit of {} MB or {} entries (sandbox.temp_max_mb); the command and its child processes were killed and the temp folder emptied]",
                    ctx.sandbox
                        .as_ref()
                        .map_or(0, |s| s.tmp_max_bytes / (1024 * 1024)),
                    waymark_sandbox::temp::MAX_ENTRIES
                ))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::Fixture;
    use super::*;

    #[tokio::test]
    async fn runs_in_the_workspace_and_reports_exit_codes() {
        let f = Fixture::new();
        let ok = f
            .run(&Bash, json!({"command": "pwd; echo err >&2"}))
            .await
            .unwrap();
        assert!(ok.content.contains(f.ws().to_str().unwrap()));
        assert!(ok.content.contains("err") && ok.content.ends_with("[exit code: 0]"));
        let fail = f
            .run(&Bash, json!({"command": "exit 7"}))
            .await
            .unwrap_err();
        assert!(fail.to_string().contains("[exit code: 7]"));
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let f = Fixture::new();
        let marker = f.ws().join("survived");
        let cmd = format!(
            "(sleep 2; touch {}) & echo started; sleep 30",
            marker.display()
        );
        let e = f
            .run(&Bash, json!({"command": cmd, "timeout_ms": 300}))
            .await
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("started") && msg.contains("timed out"),
            "{msg}"
        );
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(
            !marker.exists(),
            "a child of the timed-out command kept running"
        );
    }

    /// Issue 37, item 8: a running command's lines reach the live view as they arrive, whole
    /// lines only, long before it ends; the result still has all of it.
    #[tokio::test]
    async fn output_streams_live_while_the_command_runs() {
        let mut f = Fixture::new();
        let seen: Arc<Mutex<Vec<(std::time::Instant, String)>>> = Default::default();
        let sink = seen.clone();
        f.ctx.live = Some(Arc::new(move |s: &str| {
            sink.lock()
                .unwrap()
                .push((std::time::Instant::now(), s.to_string()))
        }));
        let started = std::time::Instant::now();
        let out = f
            .run(
                &Bash,
                json!({"command": "for i in 1 2 3; do echo line $i; sleep 1; done; printf 'no end'"}),
            )
            .await
            .unwrap();
        let ended = std::time::Instant::now();
        assert!(out.content.contains("line 3") && out.content.contains("no end"));
        let seen = seen.lock().unwrap();
        let first = seen
            .iter()
            .find(|(_, s)| s.contains("line 1"))
            .unwrap_or_else(|| panic!("line 1 never streamed: {seen:?}"));
        assert!(
            ended.duration_since(first.0) > Duration::from_millis(1500),
            "line 1 came only at the end: {:?} after the start, the command took {:?}",
            first.0 - started,
            ended - started
        );
        let all: String = seen.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(all.matches("line 1").count(), 1, "each line once: {all:?}");
        assert!(all.ends_with('\n'), "whole lines only: {all:?}");
    }

    /// Whatever the output's shape, the live view gets whole lines only: a secret is never
    /// cut in two, where redaction would miss its halves.
    #[test]
    fn the_live_view_is_given_whole_lines_only() {
        let secret = "sk-live-0123456789abcdef";
        let mut c = Collected::default();
        let mut given = Vec::new();
        // A long line holding the secret, arriving in small pieces, past every cap.
        let long = format!("{}{secret}{}\n", "x".repeat(LIVE_MAX * 3), "y".repeat(100));
        for piece in long.as_bytes().chunks(1000) {
            c.push(piece);
            given.extend(c.take_lines());
        }
        // Many short lines, then a line cut by the cap.
        for i in 0..5000 {
            c.push(format!("line {i} {secret}\n").as_bytes());
        }
        given.extend(c.take_lines());
        c.push(b"partial");
        given.extend(c.take_lines());
        // One piece that overflows the live view just past the secret's start: whatever is
        // dropped, it is never the secret's head alone.
        let mut c = Collected::default();
        let piece = format!("{secret}\n{}", "c".repeat(LIVE_MAX * 2 - secret.len() + 9));
        c.push(piece.as_bytes());
        given.extend(c.take_lines());
        for g in &given {
            assert!(g.ends_with('\n'), "{g:?}");
            for line in g.lines() {
                assert!(
                    !(line.contains("sk-live") || line.contains("89abcdef"))
                        || line.contains(secret),
                    "a cut secret: {line:?}"
                );
                assert!(
                    line.starts_with("line ") || line.starts_with('x'),
                    "{line:?}"
                );
            }
        }
        assert!(given.iter().any(|g| g.contains("line 4999")));
        assert!(given.iter().all(|g| g.len() <= LIVE_MAX));
    }

    /// A secret across the place the output is cut to size is redacted before the cut, so
    /// no piece of it reaches the model (red team).
    #[tokio::test]
    async fn a_secret_where_the_output_is_cut_is_redacted_first() {
        let secret = "sk-test-0123456789abcdefghij";
        let mut f = Fixture::new();
        let mut r = waymark_config::secrets::Redactor::default();
        r.add("TEST_API_KEY", secret);
        f.ctx.redactor = Some(Arc::new(r));
        f.ctx.output_limit = 30_000;
        let cmd = format!(
            "head -c 14990 /dev/zero | tr '\\0' a; printf '{secret}'; head -c 30000 /dev/zero | tr '\\0' b"
        );
        let out = f.run(&Bash, json!({ "command": cmd })).await.unwrap();
        assert!(out.content.contains("aaaa") && out.content.contains("bbbb"));
        for piece in ["sk-test-01", "sk-test", "456789abcdefghij", "cdefghij"] {
            assert!(!out.content.contains(piece), "{piece} shows");
        }
    }

    #[tokio::test]
    async fn stop_keeps_partial_output() {
        let f = Fixture::new();
        let cancel = f.ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            cancel.cancel();
        });
        let e = f
            .run(&Bash, json!({"command": "echo partial; sleep 30"}))
            .await
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("partial") && msg.contains("stopped by the user"),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn huge_output_is_capped_with_a_note() {
        let mut f = Fixture::new();
        f.ctx.output_limit = 2000;
        let out = f
            .run(&Bash, json!({"command": "seq 1 100000"}))
            .await
            .unwrap();
        assert!(out.content.len() < 2300);
        assert!(out.content.contains("omitted") && out.content.contains("100000"));
    }
}

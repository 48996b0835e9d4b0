//! Running one hook: `sh -c COMMAND` in the workspace, with the shell's scrubbed
//! environment, the event's JSON on stdin, in a process group of its own that is killed when
//! the hook times out or the user presses Stop (and once it has exited, so nothing it left
//! behind runs on). Its stdout and stderr are kept up to [`MAX_OUTPUT`] bytes each.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

/// The most of each of a hook's stdout and stderr that is kept.
pub const MAX_OUTPUT: usize = 256 * 1024;

/// How long a hook's output is still read after the hook itself exited (a process it left
/// in the background may hold its stdout open).
const DRAIN: Duration = Duration::from_millis(200);

/// How a hook's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// It was killed by a signal (a crash).
    Signalled,
    TimedOut,
    Stopped,
    /// It could not be started.
    NotStarted(String),
}

/// What a hook's run left.
#[derive(Debug, Clone)]
pub struct Run {
    pub ended: Ended,
    pub stdout: String,
    pub stderr: String,
    /// Its stdout was longer than [`MAX_OUTPUT`] and is cut (so JSON in it cannot be read).
    pub cut: bool,
    pub took: Duration,
}

/// Kills the hook's process group when the run is dropped before it finished (the turn
/// that waited on it was ended): a hook never outlives what it was run for.
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}

/// Runs `command` with `input` on stdin.
pub async fn run(
    command: &str,
    input: &[u8],
    cwd: &Path,
    env: &[(OsString, OsString)],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Run {
    let began = Instant::now();
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("CLAUDE_PROJECT_DIR", cwd)
        .env("WAYMARK_PROJECT_DIR", cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // The input goes through a socket, not a pipe: a hook that exits without reading it
    // makes the send fail with EPIPE, where a pipe's write would raise SIGPIPE, which kills
    // a CLI that restored its default action.
    let (ours, theirs) = match std::os::unix::net::UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => {
            return Run {
                ended: Ended::NotStarted(format!("no socket for its input: {e}")),
                stdout: String::new(),
                stderr: String::new(),
                cut: false,
                took: began.elapsed(),
            };
        }
    };
    cmd.stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)));
    let spawned = cmd.spawn();
    // The child holds its end now; ours must not keep a second copy of it open.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return Run {
                ended: Ended::NotStarted(e.to_string()),
                stdout: String::new(),
                stderr: String::new(),
                cut: false,
                took: began.elapsed(),
            };
        }
    };
    let group = child.id().and_then(|p| i32::try_from(p).ok());
    let mut guard = GroupGuard(group);
    // A hook that never reads its input must not hold the run up: written on a thread of
    // its own, which ends when the hook has read it all or its end is closed.
    let input = input.to_vec();
    tokio::task::spawn_blocking(move || send_all(&ours, &input));
    let out = child.stdout.take().map(|o| tokio::spawn(read_capped(o)));
    let err = child.stderr.take().map(|e| tokio::spawn(read_capped(e)));
    let ended = tokio::select! {
        biased;
        () = cancel.cancelled() => Ended::Stopped,
        () = tokio::time::sleep(timeout) => Ended::TimedOut,
        status = child.wait() => match status {
            Ok(s) => s.code().map_or(Ended::Signalled, Ended::Exited),
            Err(e) => Ended::NotStarted(e.to_string()),
        },
    };
    if !matches!(ended, Ended::Exited(_) | Ended::Signalled) {
        // Killed while the leader is still unreaped, so the group id is still its own.
        kill_group(group);
        let _ = child.wait().await;
    }
    // The leader is reaped now: its group is killed below only while something of it still
    // holds the output open, which keeps the group id from being reused meanwhile.
    guard.0 = None;
    let (stdout, cut) = collect(out, group).await;
    let (stderr, _) = collect(err, group).await;
    Run {
        ended,
        stdout,
        stderr,
        cut,
        took: began.elapsed(),
    }
}

/// What a reader kept and whether it cut. A process the hook left in the background that
/// holds the output open past [`DRAIN`] has its group killed; one that escaped the group
/// (`setsid`) is given up on a moment later.
async fn collect(
    reader: Option<tokio::task::JoinHandle<(Vec<u8>, bool)>>,
    group: Option<i32>,
) -> (String, bool) {
    let Some(mut reader) = reader else {
        return (String::new(), false);
    };
    let (bytes, cut) = match tokio::time::timeout(DRAIN, &mut reader).await {
        Ok(r) => r.unwrap_or_default(),
        Err(_) => {
            kill_group(group);
            match tokio::time::timeout(DRAIN, &mut reader).await {
                Ok(r) => r.unwrap_or_default(),
                Err(_) => {
                    reader.abort();
                    (Vec::new(), false)
                }
            }
        }
    };
    (String::from_utf8_lossy(&bytes).into_owned(), cut)
}

/// Sends `input` and then the end of input, without ever raising SIGPIPE.
fn send_all(to: &std::os::unix::net::UnixStream, input: &[u8]) {
    use rustix::net::{SendFlags, Shutdown, send, shutdown};
    let mut at = 0;
    while at < input.len() {
        match send(to, &input[at..], SendFlags::NOSIGNAL) {
            Ok(n) => at += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
    let _ = shutdown(to, Shutdown::Write);
}

async fn read_capped(mut r: impl AsyncRead + Unpin) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, cut),
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                cut |= n > room;
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// Kills the hook's process group. Only a real group of its own: never 0 or 1, which
/// `kill` would read as "every process".
fn kill_group(group: Option<i32>) {
    if let Some(pid) = group
        .filter(|g| *g > 1)
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Vec<(OsString, OsString)> {
        vec![("PATH".into(), "/usr/bin:/bin".into())]
    }

    /// Runs `command` in a new temp folder with a plain PATH, within `timeout`.
    async fn run_in_temp(command: &str, input: &[u8], timeout: Duration) -> Run {
        let dir = tempfile::tempdir().unwrap();
        run(
            command,
            input,
            dir.path(),
            &env(),
            timeout,
            &CancellationToken::new(),
        )
        .await
    }

    #[tokio::test]
    async fn a_hook_reads_its_input_and_says_its_piece() {
        let r = run_in_temp(
            "cat; echo done >&2; exit 3",
            b"{\"a\":1}",
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(r.ended, Ended::Exited(3));
        assert_eq!(r.stdout, "{\"a\":1}");
        assert_eq!(r.stderr.trim(), "done");
    }

    /// A hook that sleeps past its timeout is killed with everything it started.
    #[tokio::test]
    async fn a_hook_past_its_timeout_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("still-running");
        let cmd = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let began = Instant::now();
        let r = run_in_temp(&cmd, b"", Duration::from_millis(200)).await;
        assert_eq!(r.ended, Ended::TimedOut);
        assert!(began.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "a process of the hook outlived it");
    }

    /// A hook that exits without reading its input, given more than a pipe holds: the run
    /// ends normally, and no SIGPIPE reaches the process (the CLI restores its default
    /// action, which would kill it).
    #[tokio::test]
    async fn a_hook_that_never_reads_its_input_ends_cleanly() {
        let big = vec![b'x'; 4 * 1024 * 1024];
        let r = run_in_temp("exit 0", &big, Duration::from_secs(10)).await;
        assert_eq!(r.ended, Ended::Exited(0));
        let r = run_in_temp(
            "head -c 10 >/dev/null; echo read",
            &big,
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(r.stdout.trim(), "read");
    }

    #[tokio::test]
    async fn stop_kills_a_running_hook() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let stopper = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            stopper.cancel();
        });
        let r = run(
            "sleep 30",
            b"",
            dir.path(),
            &env(),
            Duration::from_secs(60),
            &cancel,
        )
        .await;
        assert_eq!(r.ended, Ended::Stopped);
    }

    #[tokio::test]
    async fn the_environment_is_only_what_it_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let r = run(
            "env",
            b"",
            dir.path(),
            &[("ONLY_THIS".into(), "1".into())],
            Duration::from_secs(10),
            &CancellationToken::new(),
        )
        .await;
        assert!(r.stdout.contains("ONLY_THIS=1"), "{}", r.stdout);
        assert!(r.stdout.contains("CLAUDE_PROJECT_DIR="), "{}", r.stdout);
        assert!(!r.stdout.contains("HOME="), "{}", r.stdout);
    }
}

//! One git process at a time, bounded: started as the leader of its own process group, its
//! output read while it runs (standard output whole or up to a cap, errors up to 64 KiB), and
//! the whole group killed when it outlives [`LIMIT`]. A worktree can hold what makes git wait
//! forever (a FIFO named `.gitignore`, `objects/info/alternates` made a FIFO by the agent):
//! a review or a merge then fails with a clear error instead of hanging the app.

use crate::{Result, WorktreeError};
use std::io::Read as _;
use std::path::Path;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::Duration;

/// The longest one git call may take.
#[cfg(not(test))]
pub(crate) const LIMIT: Duration = Duration::from_secs(120);
/// The longest one git call may take (shorter in this crate's tests, which make git wait).
#[cfg(test)]
pub(crate) const LIMIT: Duration = Duration::from_secs(10);

/// Most of git's error output kept.
const ERR_MAX: u64 = 64 * 1024;

/// What a git call reads and where its standard output goes.
pub(crate) enum Io {
    /// Reads nothing; its output is kept, cut at this many bytes when given (then git is
    /// stopped).
    Keep(Option<usize>),
    /// Reads `input`; its output is kept whole.
    Feed(Vec<u8>),
    /// Reads `input` and writes its output to the file `to` (a pack).
    FeedInto { input: Vec<u8>, to: std::fs::File },
    /// Reads the file `from` (when given) and writes its output to the file `to` (a pack).
    Files {
        from: Option<std::fs::File>,
        to: Option<std::fs::File>,
    },
}

/// Runs `c` (in `dir`, for messages) within [`LIMIT`]: its output, the standard output cut
/// at `cap` bytes when given (then git is stopped; `true` says so).
pub(crate) fn run(c: Command, dir: &Path, cap: Option<usize>) -> Result<(Output, bool)> {
    run_io(c, dir, Io::Keep(cap))
}

/// [`run`] with the input and output `io` says.
pub(crate) fn run_io(mut c: Command, dir: &Path, io: Io) -> Result<(Output, bool)> {
    use std::os::unix::process::CommandExt as _;
    let failed = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => WorktreeError::NoGit,
        _ => WorktreeError::Io {
            path: dir.display().to_string(),
            source: e,
        },
    };
    let (cap, feed) = match io {
        Io::Keep(cap) => {
            c.stdin(Stdio::null()).stdout(Stdio::piped());
            (cap, None)
        }
        Io::Feed(input) => {
            c.stdin(Stdio::piped()).stdout(Stdio::piped());
            (None, Some(input))
        }
        Io::FeedInto { input, to } => {
            c.stdin(Stdio::piped()).stdout(Stdio::from(to));
            (None, Some(input))
        }
        Io::Files { from, to } => {
            c.stdin(from.map_or_else(Stdio::null, Stdio::from));
            c.stdout(to.map_or_else(Stdio::piped, Stdio::from));
            (None, None)
        }
    };
    let mut child = c
        .process_group(0)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(failed)?;
    let group = child.id() as i32;
    let Some(mut err) = child.stderr.take() else {
        kill(group);
        let _ = child.wait();
        return Err(failed(std::io::Error::other(
            "git's output could not be read",
        )));
    };
    let out = child.stdout.take();
    let feeder = match (feed, child.stdin.take()) {
        (Some(input), Some(mut stdin)) => Some(std::thread::spawn(move || {
            use std::io::Write as _;
            // git stopping early (an error) closes the pipe: what it said tells why.
            let _ = stdin.write_all(&input);
        })),
        _ => None,
    };
    let errors = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = (&mut err).take(ERR_MAX).read_to_end(&mut buf);
        let _ = std::io::copy(&mut err, &mut std::io::sink());
        buf
    });
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let Some(mut out) = out else {
            return (buf, false, None);
        };
        let limit = cap.map_or(u64::MAX, |c| c as u64 + 1);
        let read = (&mut out).take(limit).read_to_end(&mut buf);
        let cut = cap.is_some_and(|c| buf.len() > c);
        if cut {
            // Enough: git is stopped rather than left to fill a pipe no one reads.
            kill(group);
        }
        (buf, cut, read.err())
    });
    let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<ExitStatus>>();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(LIMIT) {
        Ok(s) => s.map_err(failed)?,
        Err(_) => {
            kill(group);
            let _ = waiter.join();
            let _ = reader.join();
            let _ = feeder.map(std::thread::JoinHandle::join);
            let _ = errors.join();
            return Err(WorktreeError::Git {
                command: "git".into(),
                dir: dir.display().to_string(),
                message: format!(
                    "git did not finish within {} s and was stopped (something in the repository or the worktree makes it wait: a FIFO where a file is expected, a file system that does not answer). Nothing was changed by this step.",
                    LIMIT.as_secs()
                ),
            });
        }
    };
    let _ = waiter.join();
    let _ = feeder.map(std::thread::JoinHandle::join);
    let (mut stdout, cut, read) = reader.join().unwrap_or_default();
    let stderr = errors.join().unwrap_or_default();
    if let Some(e) = read {
        return Err(failed(e));
    }
    if let Some(cap) = cap.filter(|_| cut) {
        stdout.truncate(cap);
    }
    Ok((
        Output {
            status,
            stdout,
            stderr,
        },
        cut,
    ))
}

/// Kills process group `group` (a git process Waymark started, leading its own group).
fn kill(group: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(group) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

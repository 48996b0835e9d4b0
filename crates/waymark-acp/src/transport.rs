//! The stdio transport `waymark acp` talks to its client through: newline-delimited JSON-RPC.
//!
//! The SDK's own reader keeps a line whole however long it is, and ends the connection on a
//! line that is not UTF-8. Here a line longer than [`LINE_MAX`] is skipped as it streams by
//! (never held) and handed on as a short line that is not JSON, which the SDK answers with a
//! parse error; so are a line that is not UTF-8 (which would otherwise close the connection)
//! and one that is not JSON (whose error would otherwise quote it back, control characters
//! spelled out six times over); a blank line is dropped.
//!
//! Stdin is read on a thread of its own, not on tokio's blocking pool: a read waiting on a
//! client that keeps its end open must never hold up the process's exit after SIGTERM, SIGHUP
//! or `session/close`. Stdout is written from the connection's own task when it is a pipe or a
//! socket (an editor's or sshd's end, the usual case): it is made non-blocking, so a client
//! that stops reading parks the write instead of the process, and no line costs a hand-over
//! to another thread (measured: about one context switch per update). Anything else (a file,
//! a terminal) is written on a thread of its own.

use futures_util::{Sink, Stream};
use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use tokio::sync::mpsc;

/// The longest line read, in bytes: a prompt with large embedded files fits.
pub(crate) const LINE_MAX: usize = 16 << 20;

/// How much is read from stdin at a time.
const CHUNK: usize = 64 * 1024;

/// How long a line waits for room on its way out before the client counts as gone.
const WRITE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Ends when the stdout thread has written everything it was given, or stopped.
pub(crate) type Written = tokio::sync::oneshot::Receiver<()>;

/// Splits bytes into lines of at most `max` bytes, a longer one replaced by a line that is not
/// JSON.
struct Splitter {
    max: usize,
    line: Vec<u8>,
    /// Bytes of the line being skipped (over the bound) so far.
    skipped: usize,
}

impl Splitter {
    fn new(max: usize) -> Splitter {
        Splitter {
            max,
            line: Vec::new(),
            skipped: 0,
        }
    }

    /// Takes `chunk`, adding each line it completes to `out`.
    fn feed(&mut self, mut chunk: &[u8], out: &mut VecDeque<String>) {
        while !chunk.is_empty() {
            let (part, ends) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (&chunk[..i], true),
                None => (chunk, false),
            };
            chunk = &chunk[part.len() + usize::from(ends)..];
            if self.skipped > 0 || self.line.len() + part.len() > self.max {
                // Over the bound: what was kept goes, and the rest streams by unread.
                self.skipped += self.line.len() + part.len();
                self.line = Vec::new();
            } else {
                self.line.extend_from_slice(part);
            }
            if ends {
                out.extend(self.take());
            }
        }
    }

    /// At the end of input: the last line, if it lacked its newline.
    fn finish(&mut self) -> Option<String> {
        self.take()
    }

    /// The line read, as the SDK is to see it: a blank one is none; one over the bound, one
    /// that is not UTF-8 and one that is not JSON become a short line that is not JSON, so the
    /// parse error the SDK answers with (which quotes the line) stays short whatever was sent.
    fn take(&mut self) -> Option<String> {
        let skipped = std::mem::take(&mut self.skipped);
        let line = std::mem::take(&mut self.line);
        if skipped > 0 {
            tracing::warn!("acp: a line of {skipped} bytes was over the bound and not read");
            return Some(format!(
                "(a line of {skipped} bytes, over the {} the agent reads, was skipped)",
                self.max
            ));
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            return Some(format!("(a line of {} bytes was not UTF-8)", line.len()));
        };
        let text = text.trim_end_matches('\r');
        if text.trim().is_empty() {
            return None;
        }
        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
            return Some(format!("(a line of {} bytes was not JSON)", line.len()));
        }
        Some(text.to_string())
    }
}

/// The lines of the chunks `rx` brings, each at most `max` bytes; ends when `rx` does.
fn lines(
    rx: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    max: usize,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    let state = (rx, Splitter::new(max), VecDeque::new(), false);
    futures_util::stream::unfold(
        state,
        |(mut rx, mut split, mut ready, mut ended)| async move {
            loop {
                if let Some(line) = ready.pop_front() {
                    return Some((Ok(line), (rx, split, ready, ended)));
                }
                if ended {
                    return None;
                }
                match rx.recv().await {
                    Some(Ok(chunk)) => split.feed(&chunk, &mut ready),
                    Some(Err(e)) => return Some((Err(e), (rx, split, ready, true))),
                    None => {
                        ended = true;
                        ready.extend(split.finish());
                    }
                }
            }
        },
    )
}

/// `stdin`, read in chunks on a thread of its own.
fn stdin_chunks(
    mut stdin: impl std::io::Read + Send + 'static,
) -> mpsc::Receiver<std::io::Result<Vec<u8>>> {
    let (tx, rx) = mpsc::channel(4);
    let spawned = std::thread::Builder::new()
        .name("acp-stdin".into())
        .spawn(move || {
            let mut buf = vec![0u8; CHUNK];
            loop {
                let sent = match stdin.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => tx.blocking_send(Ok(buf[..n].to_vec())),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        return;
                    }
                };
                if sent.is_err() {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!("acp: stdin cannot be read: {e}");
    }
    rx
}

/// `out` (neither a pipe nor a socket), written line by line on a thread of its own; and what says when that thread has
/// written all it was given (or stopped).
fn stdout_lines(
    mut out: impl std::io::Write + Send + 'static,
    wait: std::time::Duration,
) -> (
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    Written,
) {
    let (tx, mut rx) = mpsc::channel::<String>(64);
    let (done, written) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("acp-stdout".into())
        .spawn(move || {
            let _done = done;
            while let Some(line) = rx.blocking_recv() {
                let written = out
                    .write_all(line.as_bytes())
                    .and_then(|()| out.write_all(b"\n"))
                    .and_then(|()| out.flush());
                if let Err(e) = written {
                    tracing::warn!("acp: stdout closed: {e}");
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!("acp: stdout cannot be written: {e}");
    }
    let sink = futures_util::sink::unfold(
        tx,
        move |tx: mpsc::Sender<String>, line: String| async move {
            // A client that stops reading would otherwise have the SDK queue every update for
            // it without end: after `wait` the connection ends, as if it had gone away.
            match tokio::time::timeout(wait, tx.send(line)).await {
                Ok(Ok(())) => Ok::<_, std::io::Error>(tx),
                Ok(Err(_)) => Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe)),
                Err(_) => Err(timed_out(wait)),
            }
        },
    );
    (sink, written)
}

/// A pipe or socket written without blocking, put back in blocking mode when dropped (its
/// description may be shared with whoever handed it over).
struct Nonblocking {
    out: Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    /// The same description, to restore.
    fd: OwnedFd,
}

impl Drop for Nonblocking {
    fn drop(&mut self) {
        let _ = rustix::io::ioctl_fionbio(&self.fd, false);
    }
}

/// `out` written without blocking, when it is a pipe or a Unix socket that is not also
/// `input` (a read of one description shared both ways must keep blocking); `None`
/// otherwise.
fn nonblocking(out: &impl AsFd, input: &impl AsFd) -> Option<Nonblocking> {
    use rustix::fs::{FileType, fstat};
    let stat = fstat(out).ok()?;
    if fstat(input).is_ok_and(|i| (i.st_dev, i.st_ino) == (stat.st_dev, stat.st_ino)) {
        return None;
    }
    let fd = out.as_fd().try_clone_to_owned().ok()?;
    let made: std::io::Result<Pin<Box<dyn tokio::io::AsyncWrite + Send>>> =
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Fifo => tokio::net::unix::pipe::Sender::from_owned_fd(fd.try_clone().ok()?)
                .map(|p| Box::pin(p) as _),
            FileType::Socket => {
                let socket = std::os::unix::net::UnixStream::from(fd.try_clone().ok()?);
                socket
                    .set_nonblocking(true)
                    .and_then(|()| tokio::net::UnixStream::from_std(socket))
                    .map(|s| Box::pin(s) as _)
            }
            _ => return None,
        };
    match made {
        Ok(out) => Some(Nonblocking { out, fd }),
        Err(e) => {
            tracing::debug!("acp: stdout is written from a thread: {e}");
            let _ = rustix::io::ioctl_fionbio(&fd, false);
            None
        }
    }
}

/// Lines written to the non-blocking `out` from the task that sends them; and what says when
/// the sink is gone (each line is written before its send returns).
fn direct_lines(
    out: Nonblocking,
    wait: std::time::Duration,
) -> (
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    Written,
) {
    use tokio::io::AsyncWriteExt as _;
    let (done, written) = tokio::sync::oneshot::channel::<()>();
    let sink = futures_util::sink::unfold(
        (out, done),
        move |mut state: (Nonblocking, _), line: String| async move {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            // A client that stops reading would otherwise have the SDK queue every update
            // for it without end: after `wait` the connection ends, as if it had gone away.
            match tokio::time::timeout(wait, state.0.out.write_all(&bytes)).await {
                Ok(Ok(())) => Ok(state),
                Ok(Err(e)) => {
                    tracing::warn!("acp: stdout closed: {e}");
                    Err(e)
                }
                Err(_) => Err(timed_out(wait)),
            }
        },
    );
    (sink, written)
}

/// The error of a client that read nothing for `wait`.
fn timed_out(wait: std::time::Duration) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("the client read nothing for {} s", wait.as_secs()),
    )
}

/// Where the transport's lines go.
type LineSink = Pin<Box<dyn Sink<String, Error = std::io::Error> + Send>>;

/// The process's `stdin` and `stdout` as the SDK's line transport, and what says when
/// everything sent has been written.
pub(crate) fn stdio(
    stdin: impl std::io::Read + AsFd + Send + 'static,
    stdout: impl std::io::Write + AsFd + Send + 'static,
) -> (
    agent_client_protocol::Lines<
        LineSink,
        impl Stream<Item = std::io::Result<String>> + Send + 'static,
    >,
    Written,
) {
    let (out, written): (LineSink, Written) = match nonblocking(&stdout, &stdin) {
        Some(fd) => {
            let (sink, written) = direct_lines(fd, WRITE_WAIT);
            (Box::pin(sink), written)
        }
        None => {
            let (sink, written) = stdout_lines(stdout, WRITE_WAIT);
            (Box::pin(sink), written)
        }
    };
    (
        agent_client_protocol::Lines::new(out, Box::pin(lines(stdin_chunks(stdin), LINE_MAX))),
        written,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt as _;

    /// The lines `chunks` split into, as they arrive.
    async fn split(chunks: &[&[u8]], max: usize) -> Vec<String> {
        let (tx, rx) = mpsc::channel(chunks.len().max(1));
        for c in chunks {
            tx.send(Ok(c.to_vec())).await.unwrap();
        }
        drop(tx);
        lines(rx, max).map(|l| l.unwrap()).collect().await
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_whole_however_they_are_cut() {
        assert_eq!(
            split(&[b"{\"a\":1}\r\n{}", b"\n[1", b"2]"], 8).await,
            ["{\"a\":1}", "{}", "[12]"]
        );
        assert!(split(&[], 8).await.is_empty());
    }

    #[tokio::test]
    async fn a_line_over_the_bound_is_skipped_and_the_next_is_read() {
        let got = split(
            &[
                b"{\"id\":1,\"params\":\"aaaa",
                b"aaaaaaaaaaaa\"}\n{\"id\":2}\n",
            ],
            10,
        )
        .await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].contains("was skipped"), "{got:?}");
        assert!(serde_json::from_str::<serde_json::Value>(&got[0]).is_err());
        assert_eq!(got[1], "{\"id\":2}");
        // Exactly the bound, its newline aside, is read.
        assert_eq!(split(&[b"\"12345678\"\n"], 10).await, ["\"12345678\""]);
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_read_lossily() {
        let got = split(&[b"\xff\xfe{}\n{}\n"], 64).await;
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], "(a line of 4 bytes was not UTF-8)");
        assert_eq!(got[1], "{}");
    }

    /// Output that never drains: every write waits until the test lets it go.
    struct Stuck(std::sync::mpsc::Receiver<()>);

    impl std::io::Write for Stuck {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_client_that_reads_nothing_ends_the_connection_instead_of_queueing() {
        use futures_util::SinkExt as _;
        let (release, stuck) = std::sync::mpsc::channel();
        let (sink, _written) = stdout_lines(Stuck(stuck), std::time::Duration::from_millis(100));
        let mut sink = Box::pin(sink);
        let mut sent = 0;
        let ended = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            loop {
                match sink.send("{}".to_string()).await {
                    Ok(()) => sent += 1,
                    Err(e) => break e,
                }
                assert!(sent < 1000, "the sink took {sent} lines nobody reads");
            }
        })
        .await
        .expect("a send waited on the client without end");
        assert_eq!(ended.kind(), std::io::ErrorKind::TimedOut);
        drop(release);
    }

    /// Sends lines to `sink` until it fails, on a runtime of its own in a thread of its own,
    /// so a write that blocks the thread cannot hang the test: the error, and the lines taken.
    fn fill_until_it_fails(
        make: impl FnOnce() -> LineSink + Send + 'static,
    ) -> (std::io::Error, usize) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use futures_util::SinkExt as _;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let mut sink = make();
                let mut sent = 0;
                let line = "x".repeat(1000);
                let e = loop {
                    match sink.send(line.clone()).await {
                        Ok(()) => sent += 1,
                        Err(e) => break e,
                    }
                };
                drop(sink);
                let _ = tx.send((e, sent));
            });
        });
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .expect("a write to a client that reads nothing blocked the connection's thread")
    }

    #[test]
    fn a_pipe_nobody_reads_ends_the_connection_without_blocking_the_task() {
        let (reader, writer) = std::io::pipe().unwrap();
        let (input, _other) = std::io::pipe().unwrap();
        let ours = writer.try_clone().unwrap();
        let (e, sent) = fill_until_it_fails(move || {
            let out = nonblocking(&ours, &input).expect("a pipe is written without blocking");
            Box::pin(direct_lines(out, std::time::Duration::from_millis(200)).0)
        });
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        // The pipe holds what fits (64 KiB by default), and no more is queued for it.
        assert!(sent < 1000, "{sent} lines were taken for a pipe of 64 KiB");
        // The description goes back to blocking for whoever else holds it.
        let flags = rustix::fs::fcntl_getfl(&writer).unwrap();
        assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK));
        drop(reader);
    }

    #[tokio::test]
    async fn only_a_pipe_or_socket_of_its_own_is_written_without_blocking() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let (input, _w) = std::io::pipe().unwrap();
        assert!(nonblocking(&a, &input).is_some(), "a socket of its own");
        // One socket carrying both directions: the blocking read on stdin must stay blocking.
        assert!(nonblocking(&a, &a).is_none());
        assert!(nonblocking(&a, &a.try_clone().unwrap()).is_none());
        let file = std::fs::File::open("/dev/null").unwrap();
        assert!(nonblocking(&file, &input).is_none(), "not a pipe or socket");
        drop(b);
    }

    #[tokio::test]
    async fn garbage_is_answered_short_and_blank_lines_not_at_all() {
        let long_garbage = vec![1u8; 5000];
        let got = split(&[b"\n  \n", &long_garbage, b"\n{}\n"], 1 << 20).await;
        assert_eq!(got, ["(a line of 5000 bytes was not JSON)", "{}"]);
    }
}

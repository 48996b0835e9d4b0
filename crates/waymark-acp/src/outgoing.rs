//! What `waymark acp` writes to its client: one JSON-RPC message per line on stdout, and the
//! flow control that keeps a slow client from making it queue without bound.
//!
//! Stdout that is a pipe or a Unix socket (an editor's or sshd's end, the usual case) is
//! written from the connection's own task, without blocking and without touching the file
//! description the process was given (which a shell, `2>&1` or the editor may share): a pipe
//! is opened again, non-blocking, through `/proc/self/fd`, and a socket is sent to with
//! `MSG_DONTWAIT`. No line then costs a hand-over to another thread (measured: about one
//! context switch per update, most of what `acp` cost over `exec`). Anything else (a file, a
//! terminal) is written on a thread of its own.
//!
//! A line whose write makes no progress for [`WRITE_WAIT`] ends the connection, as if the
//! client had gone; once stdin has ended, [`CLOSING_WAIT`]. [`Flow`] counts the prompts'
//! updates not written yet, and past [`PENDING_MAX`] the prompts hold their next one back: the
//! session's events then pile up in its own bounded channel, and the editor is told what it
//! missed, instead of the SDK queueing every update without end for a client that reads a
//! trickle.

use futures_util::Sink;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::sync::{Notify, mpsc};

/// How long a line may make no progress on its way out before the client counts as gone.
pub(crate) const WRITE_WAIT: Duration = Duration::from_secs(30);

/// The same, once the client has closed its input: what is left is written if it can be
/// soon, and the connection's sessions are not kept running for it.
pub(crate) const CLOSING_WAIT: Duration = Duration::from_secs(2);

/// Ends when everything handed to the stdout thread is written (or it stopped); at once for
/// the direct writer, whose lines are written before their send returns.
pub(crate) type Written = tokio::sync::oneshot::Receiver<()>;

/// Where the transport's lines go.
pub(crate) type LineSink = Pin<Box<dyn Sink<String, Error = std::io::Error> + Send>>;

/// How many of the prompts' updates may wait to be written before they hold the next back.
pub(crate) const PENDING_MAX: usize = 64;

/// What starts a `session/update` notification as the SDK writes it.
const UPDATE: &[u8] = b"\"method\":\"session/update\"";

/// A flag and the wake-up of those who wait for it to be set.
#[derive(Default)]
struct Signal {
    on: AtomicBool,
    changed: Notify,
}

impl Signal {
    fn set(&self) {
        if !self.on.swap(true, Ordering::SeqCst) {
            self.changed.notify_waiters();
        }
    }

    /// Returns once the flag is set.
    async fn until_set(&self) {
        loop {
            let mut changed = pin!(self.changed.notified());
            changed.as_mut().enable();
            if self.on.load(Ordering::SeqCst) {
                return;
            }
            changed.await;
        }
    }
}

/// The state of the way out, shared by the writer and the prompts. The default one meters
/// nothing (a transport this module does not write: the SDK's own, in tests).
#[derive(Default)]
pub(crate) struct Flow {
    /// Whether updates are counted (the writer here tells when each is written).
    metered: bool,
    /// The updates sent and not written yet (never below nothing: an update some other part
    /// sent without counting it is written uncounted).
    pending: AtomicUsize,
    /// Wakes a prompt waiting for room.
    written: Notify,
    /// Stdin has ended: the connection is closing.
    closing: Signal,
}

impl Flow {
    /// The flow of a transport this module writes.
    pub(crate) fn metered() -> Flow {
        Flow {
            metered: true,
            ..Flow::default()
        }
    }

    /// An update was sent.
    pub(crate) fn sent(&self) {
        if self.metered {
            self.pending.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Whether too many updates wait to be written already (more should not be asked for).
    pub(crate) fn backlogged(&self) -> bool {
        self.metered && self.pending.load(Ordering::SeqCst) >= PENDING_MAX
    }

    /// `line` was written: an update counts off.
    fn wrote(&self, line: &[u8]) {
        // The SDK writes `{"jsonrpc":"2.0","method":"session/update",…`: the head says (an
        // answer or a request has its id first).
        let head = &line[..line.len().min(64)];
        let Some(at) = head.windows(UPDATE.len()).position(|w| w == UPDATE) else {
            return;
        };
        if head[..at].windows(4).any(|w| w == b"\"id\"") {
            return;
        }
        let before = self
            .pending
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(1))
            })
            .unwrap_or(0);
        if before <= PENDING_MAX {
            self.written.notify_waiters();
        }
    }

    /// Returns once fewer than [`PENDING_MAX`] updates wait to be written: a prompt takes
    /// nothing more from its session until then.
    pub(crate) async fn room(&self) {
        self.until_pending(|n| n < PENDING_MAX).await;
    }

    /// Returns once every update sent has been written.
    pub(crate) async fn drained(&self) {
        self.until_pending(|n| n == 0).await;
    }

    async fn until_pending(&self, enough: impl Fn(usize) -> bool) {
        loop {
            let mut written = pin!(self.written.notified());
            written.as_mut().enable();
            if enough(self.pending.load(Ordering::SeqCst)) {
                return;
            }
            written.await;
        }
    }

    /// Whether the client has closed its input.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.on.load(Ordering::SeqCst)
    }

    /// Says the client closed its input.
    pub(crate) fn close(&self) {
        self.closing.set();
    }

    /// Ends [`CLOSING_WAIT`] after the client closed its input (never before).
    async fn closing_for_long(&self) {
        self.closing.until_set().await;
        tokio::time::sleep(CLOSING_WAIT).await;
    }
}

/// The error of a client that took in nothing for `wait`.
fn timed_out(wait: Duration) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("the client read nothing for {} s", wait.as_secs()),
    )
}

/// Stdout written from the task, without blocking.
enum Direct {
    /// A description of the pipe of its own, non-blocking.
    Pipe(tokio::net::unix::pipe::Sender),
    /// A copy of the socket, watched for room and sent to with `MSG_DONTWAIT`.
    Socket(AsyncFd<OwnedFd>),
}

impl Direct {
    /// `out` written from the task, when it is a pipe or a Unix socket that is not also
    /// `input` (one description carrying both ways keeps its blocking read); `None` otherwise.
    fn of(out: &impl AsFd, input: &impl AsFd) -> Option<Direct> {
        use rustix::fs::{FileType, fstat};
        let stat = fstat(out).ok()?;
        if fstat(input).is_ok_and(|i| (i.st_dev, i.st_ino) == (stat.st_dev, stat.st_ino)) {
            return None;
        }
        let made = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Fifo => Self::pipe(out),
            FileType::Socket => Self::socket(out),
            _ => return None,
        };
        made.inspect_err(|e| tracing::info!("acp: stdout is written from a thread: {e}"))
            .ok()
    }

    /// The pipe opened again for writing, non-blocking: a description of its own, so the
    /// flag reaches no one else who holds the pipe.
    fn pipe(out: &impl AsFd) -> std::io::Result<Direct> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = format!("/proc/self/fd/{}", out.as_fd().as_raw_fd());
        let file = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        Ok(Direct::Pipe(tokio::net::unix::pipe::Sender::from_file(
            file,
        )?))
    }

    /// A copy of the socket, left blocking (its description is shared), written with
    /// `MSG_DONTWAIT` when tokio says there is room.
    #[allow(unsafe_code)]
    fn socket(out: &impl AsFd) -> std::io::Result<Direct> {
        let fd = out.as_fd().try_clone_to_owned()?;
        // SAFETY: the descriptor is owned by the `AsyncFd` it is registered with, so it stays
        // open for as long as that is registered.
        let fd = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::WRITABLE)? };
        Ok(Direct::Socket(fd))
    }

    /// Writes what of `buf` fits now, without waiting: how much (0 when none fits).
    fn write_now(&self, buf: &[u8]) -> std::io::Result<usize> {
        let wrote = match self {
            Direct::Pipe(p) => p.try_write(buf),
            Direct::Socket(s) => send(s.get_ref(), buf),
        };
        match wrote {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            other => other,
        }
    }

    /// Writes some of `buf`, waiting until there is room: how much.
    async fn write_some(&self, buf: &[u8]) -> std::io::Result<usize> {
        loop {
            let wrote = match self {
                Direct::Pipe(p) => {
                    p.writable().await?;
                    p.try_write(buf)
                }
                Direct::Socket(s) => match s.writable().await?.try_io(|fd| send(fd.get_ref(), buf))
                {
                    Ok(wrote) => wrote,
                    // Full again: the readiness was cleared, so the next wait is real.
                    Err(_) => continue,
                },
            };
            match wrote {
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                    ) => {}
                other => return other,
            }
        }
    }
}

/// One send to the socket that never waits (nor raises SIGPIPE).
fn send(fd: &OwnedFd, buf: &[u8]) -> std::io::Result<usize> {
    use rustix::net::SendFlags;
    Ok(rustix::net::send(
        fd,
        buf,
        SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
    )?)
}

/// Writes `bytes` whole to `out`, and tells `flow`. A wait without progress of `wait`
/// ([`CLOSING_WAIT`] once the client closed its input) is an error.
async fn write_line(
    out: &Direct,
    flow: &Flow,
    bytes: &[u8],
    wait: Duration,
) -> std::io::Result<()> {
    let mut rest = &bytes[out.write_now(bytes)?..];
    if rest.is_empty() {
        flow.wrote(bytes);
        return Ok(());
    }
    tracing::debug!("acp: the client is slow to read");
    let written = async {
        while !rest.is_empty() {
            let n = tokio::select! {
                n = tokio::time::timeout(wait, out.write_some(rest)) => n.map_err(|_| timed_out(wait))??,
                () = flow.closing_for_long() => return Err(timed_out(CLOSING_WAIT)),
            };
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            rest = &rest[n..];
        }
        Ok(())
    }
    .await;
    if written.is_ok() {
        flow.wrote(bytes);
    }
    written
}

/// Lines written to `out` from the task that sends them (each is written before its send
/// returns), and what says when the sink is gone.
fn direct_lines(
    out: Direct,
    flow: std::sync::Arc<Flow>,
    wait: Duration,
) -> (
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    Written,
) {
    let (done, written) = tokio::sync::oneshot::channel::<()>();
    let sink = futures_util::sink::unfold(
        (out, flow, done),
        move |state: (Direct, std::sync::Arc<Flow>, _), line: String| async move {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            match write_line(&state.0, &state.1, &bytes, wait).await {
                Ok(()) => Ok(state),
                Err(e) => {
                    tracing::warn!("acp: stdout closed: {e}");
                    Err(e)
                }
            }
        },
    );
    (sink, written)
}

/// `out` (neither a pipe nor a socket), written line by line on a thread of its own; and what
/// says when that thread has written all it was given (or stopped).
fn thread_lines(
    mut out: impl std::io::Write + Send + 'static,
    flow: std::sync::Arc<Flow>,
    wait: Duration,
) -> (
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    Written,
) {
    let (tx, mut rx) = mpsc::channel::<String>(64);
    let (done, written) = tokio::sync::oneshot::channel();
    let told = flow.clone();
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
                told.wrote(line.as_bytes());
            }
        });
    if let Err(e) = spawned {
        tracing::error!("acp: stdout cannot be written: {e}");
    }
    let sink = futures_util::sink::unfold(
        (tx, flow),
        move |(tx, flow): (mpsc::Sender<String>, std::sync::Arc<Flow>), line: String| async move {
            let sent = tokio::select! {
                sent = tokio::time::timeout(wait, tx.send(line)) => match sent {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(_)) => Err(std::io::ErrorKind::BrokenPipe.into()),
                    Err(_) => Err(timed_out(wait)),
                },
                () = flow.closing_for_long() => Err(timed_out(CLOSING_WAIT)),
            };
            sent.map(|()| (tx, flow))
        },
    );
    (sink, written)
}

/// Stdout as the transport's sink: written from the task when it is a pipe or a socket that
/// is not also `input`, from a thread of its own otherwise.
pub(crate) fn stdout(
    out: impl std::io::Write + AsFd + Send + 'static,
    input: &impl AsFd,
    flow: std::sync::Arc<Flow>,
) -> (LineSink, Written) {
    match Direct::of(&out, input) {
        Some(direct) => {
            let (sink, written) = direct_lines(direct, flow, WRITE_WAIT);
            (Box::pin(sink), written)
        }
        None => {
            let (sink, written) = thread_lines(out, flow, WRITE_WAIT);
            (Box::pin(sink), written)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::SinkExt as _;
    use std::sync::Arc;

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
        let (release, stuck) = std::sync::mpsc::channel();
        let flow = Arc::new(Flow::default());
        let (sink, _written) = thread_lines(Stuck(stuck), flow.clone(), Duration::from_millis(100));
        let mut sink = Box::pin(sink);
        let mut sent = 0;
        let ended = tokio::time::timeout(Duration::from_secs(10), async {
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

    /// Runs `body` on a runtime of its own in a thread of its own, so a write that blocks the
    /// thread cannot hang the test.
    fn on_own_thread<T: Send + 'static>(
        body: impl FnOnce() -> Pin<Box<dyn std::future::Future<Output = T>>> + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let _ = tx.send(rt.block_on(body()));
        });
        rx.recv_timeout(Duration::from_secs(20))
            .expect("a write to a client that reads nothing blocked the connection's thread")
    }

    /// Sends lines of `size` bytes to `sink` until it fails: the error, and the lines taken.
    async fn fill(mut sink: LineSink, size: usize) -> (std::io::Error, usize) {
        let line = "x".repeat(size);
        let mut sent = 0;
        loop {
            match sink.send(line.clone()).await {
                Ok(()) => sent += 1,
                Err(e) => return (e, sent),
            }
        }
    }

    /// Lines of 1,000 bytes written to `out` (whose other end nobody reads), each allowed
    /// 200 ms without progress, until it fails: the error, and the lines taken.
    fn fill_unread(out: impl AsFd + Send + 'static) -> (std::io::Error, usize) {
        let (input, _other) = std::io::pipe().unwrap();
        on_own_thread(move || {
            Box::pin(async move {
                let direct = Direct::of(&out, &input).expect("written from the task");
                let flow = Arc::new(Flow::default());
                let sink = direct_lines(direct, flow, Duration::from_millis(200)).0;
                fill(Box::pin(sink), 1000).await
            })
        })
    }

    #[test]
    fn a_pipe_nobody_reads_ends_the_connection_without_blocking_the_task() {
        let (reader, writer) = std::io::pipe().unwrap();
        let (e, sent) = fill_unread(writer.try_clone().unwrap());
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        // The pipe holds what fits (64 KiB by default), and no more is queued for it.
        assert!(sent < 1000, "{sent} lines were taken for a pipe of 64 KiB");
        // The description the process was given was never made non-blocking.
        let flags = rustix::fs::fcntl_getfl(&writer).unwrap();
        assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK));
        drop(reader);
    }

    #[test]
    fn a_socket_nobody_reads_ends_the_connection_and_stays_blocking_for_others() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let (e, sent) = fill_unread(ours.try_clone().unwrap());
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        assert!(
            sent < 10_000,
            "{sent} lines were taken for a socket nobody reads"
        );
        let flags = rustix::fs::fcntl_getfl(&ours).unwrap();
        assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK));
        drop(theirs);
    }

    #[test]
    fn a_slow_reader_gets_a_long_line_whole() {
        use std::io::Read as _;
        let (mut reader, writer) = std::io::pipe().unwrap();
        let (input, _other) = std::io::pipe().unwrap();
        // 1 MiB, read 64 KiB at a time every 50 ms: about 0.8 s in all, each wait far
        // shorter than the 300 ms allowed without progress, the whole far longer.
        let reading = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                std::thread::sleep(Duration::from_millis(50));
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
        });
        let result = on_own_thread(move || {
            Box::pin(async move {
                let out = Direct::of(&writer, &input).unwrap();
                let flow = Arc::new(Flow::default());
                let (sink, _) = direct_lines(out, flow, Duration::from_millis(300));
                let mut sink = Box::pin(sink);
                let sent = sink.send("y".repeat(1 << 20)).await;
                drop(sink);
                drop(writer);
                sent.map_err(|e| e.to_string())
            })
        });
        assert_eq!(result, Ok(()));
        let got = reading.join().unwrap();
        assert_eq!(got.len(), (1 << 20) + 1);
        assert!(got.ends_with(b"y\n"));
    }

    #[tokio::test]
    async fn a_prompt_waits_for_room_once_too_many_updates_are_unwritten() {
        let update = br#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#;
        let answer = br#"{"jsonrpc":"2.0","id":3,"result":{"method":"session/update"}}"#;
        let flow = Flow::metered();
        for _ in 0..PENDING_MAX - 1 {
            flow.sent();
        }
        // Below the bound: room at once.
        tokio::time::timeout(Duration::from_secs(1), flow.room())
            .await
            .expect("room below the bound");
        flow.sent();
        let mut room = pin!(flow.room());
        assert!(
            futures_util::poll!(room.as_mut()).is_pending(),
            "room with {PENDING_MAX} updates unwritten"
        );
        assert!(flow.backlogged());
        // An answer written is not an update: no room yet.
        flow.wrote(answer);
        assert!(futures_util::poll!(room.as_mut()).is_pending());
        flow.wrote(update);
        tokio::time::timeout(Duration::from_secs(1), room)
            .await
            .expect("a written line makes room");
        // Updates written that were never counted do not take it below nothing.
        for _ in 0..2 * PENDING_MAX {
            flow.wrote(update);
        }
        assert_eq!(flow.pending.load(Ordering::SeqCst), 0);
        tokio::time::timeout(Duration::from_secs(1), flow.drained())
            .await
            .expect("drained");
        // A transport written elsewhere is not metered: always room.
        let open = Flow::default();
        for _ in 0..10 * PENDING_MAX {
            open.sent();
        }
        tokio::time::timeout(Duration::from_secs(1), open.room())
            .await
            .expect("an unmetered flow always has room");
    }

    #[test]
    fn once_the_client_closed_its_input_a_stuck_line_waits_briefly() {
        let (reader, writer) = std::io::pipe().unwrap();
        let (input, _other) = std::io::pipe().unwrap();
        let took = on_own_thread(move || {
            Box::pin(async move {
                let out = Direct::of(&writer, &input).unwrap();
                let flow = Arc::new(Flow::default());
                let (sink, _) = direct_lines(out, flow.clone(), WRITE_WAIT);
                flow.close();
                let started = tokio::time::Instant::now();
                let (e, _) = fill(Box::pin(sink), 1000).await;
                assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
                started.elapsed()
            })
        });
        assert!(took < Duration::from_secs(10), "{took:?}");
        drop(reader);
    }

    #[tokio::test]
    async fn only_a_pipe_or_socket_of_its_own_is_written_from_the_task() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let (input, _w) = std::io::pipe().unwrap();
        assert!(Direct::of(&a, &input).is_some(), "a socket of its own");
        // One socket carrying both directions: the blocking read on stdin must stay blocking.
        assert!(Direct::of(&a, &a).is_none());
        assert!(Direct::of(&a, &a.try_clone().unwrap()).is_none());
        let file = std::fs::File::open("/dev/null").unwrap();
        assert!(Direct::of(&file, &input).is_none(), "not a pipe or socket");
        drop(b);
    }
}

//! The stdio transport `waymark acp` talks to its client through: newline-delimited JSON-RPC.
//!
//! The SDK's own reader keeps a line whole however long it is, and ends the connection on a
//! line that is not UTF-8. Here a line longer than [`LINE_MAX`] is skipped as it streams by
//! (never held) and handed on as a line that is not JSON, which the SDK answers with a parse
//! error; a line that is not UTF-8 is read lossily, so it too gets the protocol's error instead
//! of closing the connection.
//!
//! Stdin and stdout are read and written on threads of their own, not on tokio's blocking
//! pool: a read waiting on a client that keeps its end open (or a write to one that stopped
//! reading) must never hold up the process's exit after SIGTERM, SIGHUP or `session/close`.

use futures_util::Stream;
use std::collections::VecDeque;
use tokio::sync::mpsc;

/// The longest line read, in bytes: a prompt with large embedded files fits.
pub(crate) const LINE_MAX: usize = 16 << 20;

/// How much is read from stdin at a time.
const CHUNK: usize = 64 * 1024;

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
                out.push_back(self.take());
            }
        }
    }

    /// At the end of input: the last line, if it lacked its newline.
    fn finish(&mut self) -> Option<String> {
        (self.skipped > 0 || !self.line.is_empty()).then(|| self.take())
    }

    fn take(&mut self) -> String {
        let skipped = std::mem::take(&mut self.skipped);
        let line = std::mem::take(&mut self.line);
        if skipped > 0 {
            tracing::warn!("acp: a line of {skipped} bytes was over the bound and not read");
            return format!(
                "(a line of {skipped} bytes, over the {} the agent reads, was skipped)",
                self.max
            );
        }
        String::from_utf8_lossy(&line)
            .trim_end_matches('\r')
            .to_string()
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

/// `out`, written line by line on a thread of its own.
fn stdout_lines(
    mut out: impl std::io::Write + Send + 'static,
) -> impl futures_util::Sink<String, Error = std::io::Error> + Send + 'static {
    let (tx, mut rx) = mpsc::channel::<String>(64);
    let spawned = std::thread::Builder::new()
        .name("acp-stdout".into())
        .spawn(move || {
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
    futures_util::sink::unfold(tx, async |tx: mpsc::Sender<String>, line: String| {
        tx.send(line)
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        Ok::<_, std::io::Error>(tx)
    })
}

/// The process's `stdin` and `stdout` as the SDK's line transport.
pub(crate) fn stdio(
    stdin: impl std::io::Read + Send + 'static,
    stdout: impl std::io::Write + Send + 'static,
) -> agent_client_protocol::Lines<
    impl futures_util::Sink<String, Error = std::io::Error> + Send + 'static,
    impl Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    agent_client_protocol::Lines::new(
        Box::pin(stdout_lines(stdout)),
        Box::pin(lines(stdin_chunks(stdin), LINE_MAX)),
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
            split(&[b"{\"a\":1}\r\n{}", b"\nla", b"st"], 8).await,
            ["{\"a\":1}", "{}", "last"]
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
        assert_eq!(split(&[b"0123456789\n"], 10).await, ["0123456789"]);
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_read_lossily() {
        let got = split(&[b"\xff\xfe{}\n{}\n"], 64).await;
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], "{}");
    }
}

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
//! or `session/close`. Stdout is `crate::outgoing`'s.

use crate::outgoing::{Flow, LineSink, Written};
use futures_util::Stream;
use std::collections::VecDeque;
use std::os::fd::AsFd;
use std::sync::Arc;
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
    flow: Arc<Flow>,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    let state = (rx, Splitter::new(max), VecDeque::new(), false, flow);
    futures_util::stream::unfold(
        state,
        |(mut rx, mut split, mut ready, mut ended, flow)| async move {
            loop {
                if let Some(line) = ready.pop_front() {
                    return Some((Ok(line), (rx, split, ready, ended, flow)));
                }
                if ended {
                    return None;
                }
                match rx.recv().await {
                    Some(Ok(chunk)) => split.feed(&chunk, &mut ready),
                    Some(Err(e)) => {
                        flow.close();
                        return Some((Err(e), (rx, split, ready, true, flow)));
                    }
                    None => {
                        // The client closed its input: what is left to write waits briefly.
                        flow.close();
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

/// The process's `stdin` and `stdout` as the SDK's line transport, and what says when
/// everything sent has been written. `flow` learns when stdin ends.
pub(crate) fn stdio(
    stdin: impl std::io::Read + AsFd + Send + 'static,
    stdout: impl std::io::Write + AsFd + Send + 'static,
    flow: Arc<Flow>,
) -> (
    agent_client_protocol::Lines<
        LineSink,
        impl Stream<Item = std::io::Result<String>> + Send + 'static,
    >,
    Written,
) {
    let (out, written) = crate::outgoing::stdout(stdout, &stdin, flow.clone());
    let incoming = lines(stdin_chunks(stdin), LINE_MAX, flow);
    (
        agent_client_protocol::Lines::new(out, Box::pin(incoming)),
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
        lines(rx, max, Arc::new(Flow::default()))
            .map(|l| l.unwrap())
            .collect()
            .await
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

    #[tokio::test]
    async fn garbage_is_answered_short_and_blank_lines_not_at_all() {
        let long_garbage = vec![1u8; 5000];
        let got = split(&[b"\n  \n", &long_garbage, b"\n{}\n"], 1 << 20).await;
        assert_eq!(got, ["(a line of 5000 bytes was not JSON)", "{}"]);
    }
}

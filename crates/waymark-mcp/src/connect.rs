//! Reaching a server: a stdio server started as the leader of its own process group (killed
//! whole when its connection is dropped), its stdout read through a limit on the size of one
//! message; or a Streamable HTTP server, over rmcp's transport with the same limit. Either
//! way the `initialize` handshake offers the newest version that still has one, within the
//! server's start-up time.

use crate::McpError;
use crate::handler::Handler;
use rmcp::ServiceExt as _;
use rmcp::service::{RoleClient, RunningService};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, ReadBuf};
use waymark_config::mcp::McpTransport;

/// The largest message a server may send (one JSON-RPC line over stdio, one HTTP body or
/// SSE event). A bigger one closes the connection, with a message saying why.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// A live connection: the rmcp service and, for a stdio server, its process group.
pub struct Connection {
    pub service: RunningService<RoleClient, Handler>,
    /// Set when the server sent a message over [`MAX_MESSAGE_BYTES`] (the reason it closed).
    pub oversized: Arc<AtomicBool>,
    /// Set by [`Connection::kill`]: closed from then on, whatever rmcp has noticed yet.
    killed: AtomicBool,
    /// The stdio server's process group, killed when dropped (or by [`Connection::kill`]).
    group: std::sync::Mutex<Option<Group>>,
}

/// A stdio server's process group: killed whole (the leader and all it started) when
/// dropped, on every path, a failed start included.
struct Group(Box<dyn process_wrap::tokio::ChildWrapper>);

impl Drop for Group {
    fn drop(&mut self) {
        // `ProcessGroupChild` signals the whole group; tokio reaps the leader.
        let _ = self.0.start_kill();
    }
}

impl Connection {
    /// Whether the server said it offers resources.
    pub fn has_resources(&self) -> bool {
        self.service
            .peer()
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_some())
    }

    /// Ends the connection at once: a stdio server's process group is killed, an HTTP
    /// session dropped. For a server that no longer answers even a cancellation.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        drop(self.group.lock().unwrap_or_else(|p| p.into_inner()).take());
        self.service.cancellation_token().cancel();
    }

    /// Whether the server has gone (exited, closed its stream, or was cut off).
    pub fn is_closed(&self) -> bool {
        self.killed.load(Ordering::Acquire) || self.service.is_transport_closed()
    }

    /// Why the connection closed, when it is known.
    pub fn closed_reason(&self) -> String {
        if self.oversized.load(Ordering::Acquire) {
            format!(
                "it sent a message over {} MiB, so the connection was closed",
                MAX_MESSAGE_BYTES / (1024 * 1024)
            )
        } else {
            "the server closed the connection (it may have exited)".to_string()
        }
    }
}

/// Connects to `server` and completes `initialize` within `startup`.
pub async fn connect(
    server: &str,
    transport: &McpTransport,
    startup: Duration,
    handler: Handler,
    log_stderr: bool,
) -> Result<Connection, McpError> {
    let fail = |message: String| McpError::new(server, message);
    let oversized = Arc::new(AtomicBool::new(false));
    let (service, child) = match transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            // Exactly the environment given: never this process's, which holds the
            // provider keys.
            cmd.args(args)
                .env_clear()
                .envs(env)
                .env(crate::reap::OWNER_VAR, crate::reap::owner_mark())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(if log_stderr {
                    std::process::Stdio::piped()
                } else {
                    std::process::Stdio::null()
                });
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
            crate::reap::die_with_parent(&mut cmd);
            // The server leads a process group of its own, killed whole when it is dropped:
            // nothing it started outlives it.
            let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
            // Started from the one thread that lives as long as the app (see `reap`).
            wrapped
                .wrap(process_wrap::tokio::ProcessGroup::leader())
                .wrap(process_wrap::tokio::KillOnDrop);
            let spawned = tokio::time::timeout(startup, crate::reap::spawn(wrapped))
                .await
                .map_err(|_| no_answer(server, startup))?;
            let mut child =
                Group(spawned.map_err(|e| fail(format!("cannot start `{command}`: {e}")))?);
            let (Some(stdin), Some(stdout)) = (child.0.stdin().take(), child.0.stdout().take())
            else {
                return Err(fail(
                    "its standard input and output could not be opened".into(),
                ));
            };
            if let Some(err) = child.0.stderr().take() {
                tokio::spawn(log_lines(server.to_string(), err));
            }
            let reader = Bounded {
                inner: stdout,
                since_newline: 0,
                oversized: oversized.clone(),
            };
            let service = tokio::time::timeout(startup, handler.serve((reader, stdin)))
                .await
                .map_err(|_| no_answer(server, startup))?
                .map_err(|e| fail(format!("`initialize` failed: {e}")))?;
            (service, Some(child))
        }
        McpTransport::Http { url, headers } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            install_tls_provider();
            let mut custom = std::collections::HashMap::new();
            for (k, v) in headers {
                let name = http::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| fail(format!("the header name `{k}` is not valid")))?;
                let value = http::HeaderValue::from_str(v)
                    .map_err(|_| fail(format!("the value of header `{k}` is not valid")))?;
                custom.insert(name, value);
            }
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            config.custom_headers = custom;
            config.max_sse_event_size = MAX_MESSAGE_BYTES;
            config.max_json_response_size = MAX_MESSAGE_BYTES;
            // A lost stream is taken up again a few times, never forever.
            let mut retry = rmcp::transport::common::client_side_sse::ExponentialBackoff::default();
            retry.max_times = Some(5);
            retry.base_duration = Duration::from_millis(500);
            retry.max_delay = Some(Duration::from_secs(8));
            config.retry_config = Arc::new(retry);
            let transport = StreamableHttpClientTransport::from_config(config);
            let service = tokio::time::timeout(startup, handler.serve(transport))
                .await
                .map_err(|_| no_answer(server, startup))?
                .map_err(|e| fail(format!("`initialize` failed: {e}")))?;
            (service, None)
        }
    };
    // Every listing and read goes to the server: rmcp's response cache could answer with
    // what it had before an error.
    service
        .peer()
        .set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
        .await;
    Ok(Connection {
        service,
        oversized,
        killed: AtomicBool::new(false),
        group: std::sync::Mutex::new(child),
    })
}

fn no_answer(server: &str, startup: Duration) -> McpError {
    McpError::new(
        server,
        format!(
            "no answer to `initialize` within {} (the server's startup_timeout_ms)",
            crate::seconds(startup)
        ),
    )
}

/// The longest stderr line logged whole; the rest of a longer one is dropped.
const MAX_LOG_LINE: usize = 4096;

/// Writes a server's stderr to the log (redacted there like every record), line by line,
/// each cut to [`MAX_LOG_LINE`], until the server closes it.
async fn log_lines(server: String, err: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt as _;
    let mut reader = tokio::io::BufReader::new(err);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Read at most one buffer past the cap before deciding: memory stays bounded.
        let mut long = false;
        loop {
            let buf = match reader.fill_buf().await {
                Ok([]) => return,
                Ok(b) => b,
                Err(_) => return,
            };
            let (take, end) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            let room = MAX_LOG_LINE.saturating_sub(line.len());
            line.extend_from_slice(&buf[..take.min(room)]);
            long |= take > room;
            reader.consume(take);
            if end {
                break;
            }
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end();
        if !text.is_empty() {
            tracing::info!(target: "mcp", server = %server, cut = long, "{text}");
        }
    }
}

/// A server's stdout, cut off (an error, which ends the connection) once one line grows
/// past [`MAX_MESSAGE_BYTES`]: memory stays bounded whatever the server sends.
struct Bounded<R> {
    inner: R,
    since_newline: usize,
    oversized: Arc<AtomicBool>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Bounded<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                for &b in &buf.filled()[before..] {
                    if b == b'\n' {
                        this.since_newline = 0;
                    } else {
                        this.since_newline += 1;
                        if this.since_newline > MAX_MESSAGE_BYTES {
                            this.oversized.store(true, Ordering::Release);
                            // An error read gives no bytes.
                            buf.set_filled(before);
                            return Poll::Ready(Err(std::io::Error::other(
                                "a message from the server is over the size limit",
                            )));
                        }
                    }
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

/// Puts rustls's ring provider in place before any https client is built (rmcp's reqwest is
/// built without one, so there is no C crypto build); later calls do nothing.
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    #[tokio::test]
    async fn a_line_past_the_limit_ends_the_stream_and_says_why() {
        let big = vec![b'x'; MAX_MESSAGE_BYTES + 10];
        let flag = Arc::new(AtomicBool::new(false));
        let mut r = Bounded {
            inner: &big[..],
            since_newline: 0,
            oversized: flag.clone(),
        };
        let mut sink = Vec::new();
        let err = r.read_to_end(&mut sink).await.unwrap_err();
        assert!(err.to_string().contains("size limit"), "{err}");
        assert!(flag.load(Ordering::Acquire));
        assert!(sink.len() <= MAX_MESSAGE_BYTES + 64 * 1024);
    }

    #[tokio::test]
    async fn many_short_lines_add_up_to_any_size() {
        let line = [vec![b'y'; 1023], vec![b'\n']].concat();
        let data: Vec<u8> = line.repeat(MAX_MESSAGE_BYTES / 1024 + 100);
        let flag = Arc::new(AtomicBool::new(false));
        let mut r = Bounded {
            inner: &data[..],
            since_newline: 0,
            oversized: flag.clone(),
        };
        let mut sink = Vec::new();
        r.read_to_end(&mut sink).await.unwrap();
        assert_eq!(sink.len(), data.len());
        assert!(!flag.load(Ordering::Acquire));
    }
}

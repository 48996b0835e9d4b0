//! The HTTP side shared by the wire clients: POST with retries before the first streamed
//! byte, status mapping to typed errors, and an SSE event stream with an idle timeout.

use super::{ProviderError, ProviderErrorKind, StreamEvent, StreamSink};
use backon::{ExponentialBuilder, Retryable};
use eventsource_stream::{Event as SseEvent, Eventsource};
use futures_util::{Stream, StreamExt};
use std::pin::Pin;
use std::time::Duration;

/// How failed requests are retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Tries in all (the first included).
    pub max_tries: u32,
    pub min_delay: Duration,
    pub max_delay: Duration,
    /// Longest `Retry-After` honoured.
    pub retry_after_cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_tries: 3,
            min_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            retry_after_cap: Duration::from_secs(60),
        }
    }
}

/// Timeouts and retries of a wire client.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub connect_timeout: Duration,
    /// From sending the request to the response headers.
    pub first_byte_timeout: Duration,
    /// Longest silence between two stream chunks.
    pub idle_timeout: Duration,
    /// How long reading an error response's body may take (at most [`ERROR_BODY_CAP`]).
    pub error_body_timeout: Duration,
    pub retry: RetryPolicy,
}

/// The most of an error response's body that is read; the rest is left unread.
pub const ERROR_BODY_CAP: usize = 64 * 1024;

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            connect_timeout: Duration::from_secs(20),
            first_byte_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(300),
            error_body_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
        }
    }
}

/// Folds a wire format's stream events into a reply.
pub(crate) trait StreamFold: Default {
    /// Takes one SSE `data` payload.
    fn push(&mut self, data: &str, sink: StreamSink<'_>) -> Result<(), ProviderError>;
    /// The stream said it is complete.
    fn is_done(&self) -> bool;
    /// The reply, or `bad_response` if the stream stopped early.
    fn finish(self, estimate_input: u64) -> Result<super::ModelResponse, ProviderError>;
}

/// The HTTP side of one wire client: options, a lazily built client, and what to tell the
/// user to check when the key is refused.
pub(crate) struct Wire {
    opts: HttpOptions,
    key_hint: String,
    /// Built on the first call: setting up TLS is a noticeable part of a short CLI run.
    client: std::sync::OnceLock<Result<reqwest::Client, ProviderError>>,
}

impl Wire {
    pub(crate) fn new(opts: HttpOptions, key_hint: &str) -> Self {
        Wire {
            opts,
            key_hint: key_hint.to_string(),
            client: std::sync::OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, ProviderError> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .connect_timeout(self.opts.connect_timeout)
                    .build()
                    .map_err(|e| {
                        ProviderError::new(ProviderErrorKind::Network, format!("HTTP client: {e}"))
                    })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Sends a request and folds its event stream into the reply.
    pub(crate) async fn call<F: StreamFold>(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &[u8],
        sink: StreamSink<'_>,
        estimate_input: u64,
    ) -> Result<super::ModelResponse, ProviderError> {
        let mut events = post_sse(
            self.client()?,
            url,
            headers,
            body,
            &self.opts,
            &self.key_hint,
            sink,
        )
        .await?;
        let mut folder = F::default();
        while let Some(ev) = events.next().await {
            folder.push(&ev?.data, sink)?;
            if folder.is_done() {
                break;
            }
        }
        folder.finish(estimate_input)
    }
}

pub(crate) type SseStream = Pin<Box<dyn Stream<Item = Result<SseEvent, ProviderError>> + Send>>;

/// Sends the request (retrying per policy) and returns the response's SSE events.
async fn post_sse(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: &[u8],
    opts: &HttpOptions,
    key_hint: &str,
    sink: StreamSink<'_>,
) -> Result<SseStream, ProviderError> {
    let policy = &opts.retry;
    let backoff = ExponentialBuilder::default()
        .with_min_delay(policy.min_delay)
        .with_max_delay(policy.max_delay)
        .with_max_times(policy.max_tries.saturating_sub(1) as usize)
        .with_jitter();
    let attempt = std::sync::atomic::AtomicU32::new(0);
    let send = || async {
        attempt.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        send_once(client, url, headers, body, opts, key_hint).await
    };
    let cap = policy.retry_after_cap;
    let response = send
        .retry(backoff)
        .when(|e: &ProviderError| e.kind.is_retryable())
        .adjust(move |e: &ProviderError, d| match (e.retry_after, d) {
            // Out of tries: keep the backoff's verdict.
            (_, None) => None,
            (Some(ra), Some(_)) => Some(ra.min(cap)),
            (None, d) => d,
        })
        .notify(|e: &ProviderError, wait: Duration| {
            sink(StreamEvent::Retry {
                attempt: attempt.load(std::sync::atomic::Ordering::Relaxed),
                wait,
                error: e.clone(),
            });
        })
        .await?;
    let idle = opts.idle_timeout;
    let events = response.bytes_stream().eventsource();
    let stream = futures_util::stream::unfold(Box::pin(events), move |mut events| async move {
        match tokio::time::timeout(idle, events.next()).await {
            Err(_) => Some((
                Err(ProviderError::new(
                    ProviderErrorKind::Timeout,
                    format!("the model sent nothing for {} s", idle.as_secs()),
                )),
                events,
            )),
            Ok(None) => None,
            Ok(Some(Ok(ev))) => Some((Ok(ev), events)),
            Ok(Some(Err(e))) => Some((
                Err(ProviderError::bad_response(format!(
                    "the event stream broke: {e}"
                ))),
                events,
            )),
        }
    });
    Ok(Box::pin(stream))
}

async fn send_once(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: &[u8],
    opts: &HttpOptions,
    key_hint: &str,
) -> Result<reqwest::Response, ProviderError> {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_vec())
        .header("accept", "text/event-stream");
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = match tokio::time::timeout(opts.first_byte_timeout, req.send()).await {
        Err(_) => {
            return Err(ProviderError::new(
                ProviderErrorKind::Timeout,
                format!(
                    "no response from {url} within {} s",
                    opts.first_byte_timeout.as_secs()
                ),
            ));
        }
        Ok(Err(e)) => {
            return Err(ProviderError::new(
                ProviderErrorKind::Network,
                format!("could not reach {url}: {}", error_chain(&e)),
            ));
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let retry_after = retry_after(resp.headers());
    let text = error_body(resp, opts.error_body_timeout).await;
    let detail = error_detail(&text);
    let code = status.as_u16();
    let mut err = match code {
        429 if is_quota(&text) => ProviderError::new(
            ProviderErrorKind::QuotaExhausted,
            format!("the provider says the quota is used up (HTTP 429): {detail}"),
        ),
        429 => ProviderError::new(
            ProviderErrorKind::RateLimited,
            format!("rate limited by the provider (HTTP 429): {detail}"),
        ),
        401 | 403 => ProviderError::new(
            ProviderErrorKind::Auth,
            format!(
                "the provider refused the credentials (HTTP {code}): {detail}; check {key_hint}"
            ),
        ),
        402 => ProviderError::new(
            ProviderErrorKind::QuotaExhausted,
            format!("the provider asks for payment (HTTP 402): {detail}"),
        ),
        500..=599 => ProviderError::new(
            ProviderErrorKind::ServerError,
            format!("the provider failed (HTTP {code}): {detail}"),
        ),
        400 | 413 if is_context_too_long(&text) => ProviderError::new(
            ProviderErrorKind::ContextTooLong,
            format!(
                "the request is longer than the model's context window (HTTP {code}): {detail}"
            ),
        ),
        _ => ProviderError::new(
            ProviderErrorKind::RequestRejected,
            format!("the provider rejected the request (HTTP {code}): {detail}"),
        ),
    };
    err.retry_after = retry_after;
    Err(err)
}

/// Reads an error body with a size cap and a time limit, so a server that answers an error
/// with an endless or huge body cannot hold the turn or fill memory.
async fn error_body(mut resp: reqwest::Response, limit: Duration) -> String {
    let mut buf = Vec::new();
    let read = async {
        while let Ok(Some(chunk)) = resp.chunk().await {
            let room = ERROR_BODY_CAP - buf.len();
            buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if buf.len() >= ERROR_BODY_CAP {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(limit, read).await;
    String::from_utf8_lossy(&buf).into_owned()
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Whether an error body says the prompt does not fit the context window: OpenAI's
/// `context_length_exceeded` code, Anthropic's "prompt is too long", and the wording
/// OpenAI-compatible servers use.
pub(crate) fn is_context_too_long(body: &str) -> bool {
    let v = serde_json::from_str::<serde_json::Value>(body).ok();
    let code = v
        .as_ref()
        .and_then(|v| v.pointer("/error/code"))
        .and_then(|c| c.as_str());
    if code == Some("context_length_exceeded") {
        return true;
    }
    let message = v
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("message")))
        .and_then(|m| m.as_str())
        .unwrap_or(body)
        .to_ascii_lowercase();
    message.contains("prompt is too long")
        || message.contains("maximum context length")
        || message.contains("context length exceeded")
        || message.contains("context_length_exceeded")
}

fn is_quota(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    b.contains("insufficient_quota") || b.contains("quota exceeded") || b.contains("billing")
}

/// The human part of an error body (`error.message` when it is JSON), kept short.
pub(crate) fn error_detail(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("message"))
                .and_then(|m| m.as_str())
                .map(str::to_string)
        });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    let text = if text.is_empty() {
        "(empty body)".to_string()
    } else {
        text
    };
    if text.len() > 500 {
        let cut = (0..=500)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        format!("{}…", &text[..cut])
    } else {
        text
    }
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Some(Duration::from_millis(ms.max(0.0) as u64));
    }
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|s| Duration::from_millis((s.max(0.0) * 1000.0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_length_errors_are_recognized_in_the_real_shapes() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 16385 tokens. However, your messages resulted in 17000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210034 tokens > 200000 maximum"}}"#;
        assert!(is_context_too_long(openai));
        assert!(is_context_too_long(anthropic));
        assert!(!is_context_too_long(
            r#"{"error":{"message":"max_tokens is too large","type":"invalid_request_error"}}"#
        ));
        assert!(!is_context_too_long("Bad Request"));
    }

    #[test]
    fn error_detail_prefers_json_message_and_truncates() {
        assert_eq!(
            error_detail(r#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(error_detail(""), "(empty body)");
        let long = "é".repeat(400);
        assert!(error_detail(&long).ends_with('…'));
    }

    #[test]
    fn quota_bodies_are_recognised() {
        assert!(is_quota(r#"{"error":{"code":"insufficient_quota"}}"#));
        assert!(!is_quota(r#"{"error":{"code":"rate_limit_exceeded"}}"#));
    }
}

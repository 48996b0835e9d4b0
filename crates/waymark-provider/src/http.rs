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
    /// How far the reply has come.
    fn progress(&self) -> super::Progress;
}

/// The HTTP side of one wire client: options, a lazily built client, and what to tell the
/// user to check when the key is refused.
pub(crate) struct Wire {
    opts: HttpOptions,
    key_hint: String,
    /// The endpoint is plain http (a server on this machine or the network): reached
    /// directly, never through a proxy the environment names, which would see the key.
    direct: bool,
    /// Built on the first call: setting up TLS is a noticeable part of a short CLI run.
    client: std::sync::OnceLock<Result<reqwest::Client, ProviderError>>,
}

impl Wire {
    pub(crate) fn new(opts: HttpOptions, key_hint: &str, base_url: &str) -> Self {
        Wire {
            opts,
            key_hint: key_hint.to_string(),
            direct: base_url
                .get(..7)
                .is_some_and(|s| s.eq_ignore_ascii_case("http://")),
            client: std::sync::OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, ProviderError> {
        self.client
            .get_or_init(|| {
                let builder = reqwest::Client::builder()
                    .connect_timeout(self.opts.connect_timeout)
                    // A redirect is an error, never followed: reqwest would carry some key
                    // headers (Anthropic's `x-api-key`) to whatever host it names.
                    .redirect(reqwest::redirect::Policy::none());
                let builder = if self.direct {
                    builder.no_proxy()
                } else {
                    builder
                };
                builder.build().map_err(|e| {
                    ProviderError::new(ProviderErrorKind::Network, format!("HTTP client: {e}"))
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// GETs `url` once (no retries: a user is waiting) and returns its body, at most
    /// [`LISTING_CAP`] bytes read within the idle timeout; a longer or slower one is an error.
    pub(crate) async fn get(
        &self,
        url: &str,
        headers: &[(&str, String)],
    ) -> Result<String, ProviderError> {
        let mut resp = send_once(
            self.client()?,
            url,
            headers,
            None,
            &self.opts,
            &self.key_hint,
        )
        .await?;
        let mut buf = Vec::new();
        let read = async {
            while let Some(chunk) = resp.chunk().await.map_err(|e| {
                ProviderError::bad_response(format!("{url} broke off: {}", error_chain(&e)))
            })? {
                if buf.len() + chunk.len() > LISTING_CAP {
                    return Err(ProviderError::bad_response(format!(
                        "{url} sent more than {} KiB",
                        LISTING_CAP / 1024
                    )));
                }
                buf.extend_from_slice(&chunk);
            }
            Ok(())
        };
        tokio::time::timeout(self.opts.idle_timeout, read)
            .await
            .map_err(|_| {
                ProviderError::new(
                    ProviderErrorKind::Timeout,
                    format!(
                        "{url} did not finish within {} s",
                        self.opts.idle_timeout.as_secs()
                    ),
                )
            })??;
        String::from_utf8(buf)
            .map_err(|_| ProviderError::bad_response(format!("{url} sent text that is not UTF-8")))
    }

    /// Sends a request and folds its event stream into the reply. With `reasoning_hidden`,
    /// the model reasons without streaming it (see [`super::Progress::reasoning_hidden`]).
    pub(crate) async fn call<F: StreamFold>(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &[u8],
        sink: StreamSink<'_>,
        estimate_input: u64,
        reasoning_hidden: bool,
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
        // Answered: a failure from here on is one the provider bills.
        let answered = |mut e: ProviderError| {
            e.streamed = true;
            e
        };
        let mut folder = F::default();
        let progress = |folder: &F| super::Progress {
            reasoning_hidden,
            ..folder.progress()
        };
        // The provider has the request: a model reasoning out of sight is already at work.
        sink(super::StreamEvent::Progress(progress(&folder)));
        while let Some(ev) = events.next().await {
            folder
                .push(&ev.map_err(answered)?.data, sink)
                .map_err(answered)?;
            // What a failure or a stop from here on is charged for.
            sink(super::StreamEvent::Progress(progress(&folder)));
            if folder.is_done() {
                break;
            }
        }
        folder.finish(estimate_input).map_err(answered)
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
        send_once(client, url, headers, Some(body), opts, key_hint).await
    };
    let cap = policy.retry_after_cap;
    let response = send
        .retry(backoff)
        .when(|e: &ProviderError| e.kind.is_retryable())
        .adjust(move |e: &ProviderError, d| match (e.retry_after, d) {
            // Out of tries: keep the backoff's verdict.
            (_, None) => None,
            // A limit that lasts longer than any retry here waits: the error goes up at once
            // (a goal then waits for the reset, or resumes by itself when it comes).
            _ if e.resets_in.is_some_and(|r| r > cap) => None,
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

/// Sends one request: a POST of `body` for an event stream, or, with none, a GET for JSON.
async fn send_once(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: Option<&[u8]>,
    opts: &HttpOptions,
    key_hint: &str,
) -> Result<reqwest::Response, ProviderError> {
    let mut req = match body {
        Some(body) => client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .header("accept", "text/event-stream"),
        None => client.get(url).header("accept", "application/json"),
    };
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
    if status.is_redirection() {
        let to = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|l| {
                waymark_protocol::display::escape_line(&l.chars().take(300).collect::<String>())
            })
            .unwrap_or_else(|| "nowhere".into());
        return Err(ProviderError::new(
            ProviderErrorKind::BadResponse,
            format!(
                "{url} answered with a redirect (HTTP {}) to {to}: redirects are not followed, so a key never goes to another address; give the address the server answers at",
                status.as_u16()
            ),
        ));
    }
    let retry_after = retry_after(resp.headers());
    // A usage limit says when it resets (read before the body consumes the response).
    let limit_headers = (status.as_u16() == 429).then(|| resp.headers().clone());
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
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    err.resets_in = limit_reset(limit_headers.as_ref(), now);
    Err(err)
}

/// The most a model listing may hold (a thousand names fit many times over).
const LISTING_CAP: usize = 2 * 1024 * 1024;

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

/// When a usage limit resets, from the first of these a 429 carries: `Retry-After`
/// (seconds), OpenAI's `x-ratelimit-reset-requests` / `-tokens` (durations such as `6m0s`,
/// `20ms`; the later of the two), Anthropic's `anthropic-ratelimit-*-reset` (RFC 3339
/// times; the latest). `now_ms`: the current time, for the RFC 3339 form.
pub fn limit_reset(headers: Option<&reqwest::header::HeaderMap>, now_ms: i64) -> Option<Duration> {
    let headers = headers?;
    if let Some(d) = retry_after(headers) {
        return Some(d);
    }
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let openai = ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]
        .iter()
        .filter_map(|h| text(h).and_then(go_duration))
        .max();
    if openai.is_some() {
        return openai;
    }
    headers
        .iter()
        .filter(|(k, _)| {
            let k = k.as_str();
            k.starts_with("anthropic-ratelimit-") && k.ends_with("-reset")
        })
        .filter_map(|(_, v)| v.to_str().ok().and_then(rfc3339_ms))
        .max()
        .map(|at| Duration::from_millis(at.saturating_sub(now_ms).max(0) as u64))
}

/// A Go-style duration (`1h2m3.5s`, `6m0s`, `20ms`, `1.5s`).
fn go_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|n| *n > 0)?;
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit..];
    }
    (total.is_finite() && total < 1e9).then(|| Duration::from_secs_f64(total))
}

/// Milliseconds since the epoch of an RFC 3339 time (`2026-12-01T14:05:09Z`, fractions and
/// offsets allowed).
fn rfc3339_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    let num = |a: usize, b: usize| s.get(a..b)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (
        num(0, 4)?,
        num(5, 7)?,
        num(8, 10)?,
        num(11, 13)?,
        num(14, 16)?,
        num(17, 19)?,
    );
    if s.get(4..5)? != "-" || s.get(7..8)? != "-" || !matches!(s.get(10..11)?, "T" | "t" | " ") {
        return None;
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut ms = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(frac.len());
        let digits = format!("{:0<3}", &frac[..n.min(3)]);
        ms = digits.parse().ok()?;
        rest = &frac[n..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o.get(1..3)?.parse::<i64>().ok()? * 60 + o.get(4..6)?.parse::<i64>().ok()?)
        }
        _ => return None,
    };
    // Days from the civil date (proleptic Gregorian).
    let (y2, m2) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + mi * 60 + se - offset_min * 60) * 1000) + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_resets_come_from_the_first_header_present() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let map = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            h
        };
        let now = rfc3339_ms("2026-12-01T14:00:00Z").unwrap();
        assert_eq!(now, 1_796_133_600_000);
        // Retry-After first.
        let h = map(&[("retry-after", "30"), ("x-ratelimit-reset-tokens", "6m0s")]);
        assert_eq!(limit_reset(Some(&h), now), Some(Duration::from_secs(30)));
        // OpenAI: the later of requests and tokens.
        let h = map(&[
            ("x-ratelimit-reset-requests", "20ms"),
            ("x-ratelimit-reset-tokens", "1m30.5s"),
        ]);
        assert_eq!(
            limit_reset(Some(&h), now),
            Some(Duration::from_millis(90_500))
        );
        // Anthropic: RFC 3339 times, the latest, against now.
        let h = map(&[
            ("anthropic-ratelimit-requests-reset", "2026-12-01T14:01:00Z"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2026-12-01T15:04:00+01:00",
            ),
        ]);
        assert_eq!(limit_reset(Some(&h), now), Some(Duration::from_secs(240)));
        // A time already past resets now; nothing readable is none.
        let h = map(&[(
            "anthropic-ratelimit-tokens-reset",
            "2026-12-01T13:00:00.250Z",
        )]);
        assert_eq!(limit_reset(Some(&h), now), Some(Duration::ZERO));
        let h = map(&[
            ("x-ratelimit-reset-tokens", "soon"),
            ("anthropic-ratelimit-tokens-reset", "yesterday"),
        ]);
        assert_eq!(limit_reset(Some(&h), now), None);
        assert_eq!(limit_reset(None, now), None);
    }

    #[test]
    fn go_durations_and_rfc3339_times_parse_or_refuse() {
        assert_eq!(
            go_duration("1h2m3.5s"),
            Some(Duration::from_secs_f64(3723.5))
        );
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        for bad in ["", "5", "s", "1x", "1e400s", "-1s"] {
            assert_eq!(go_duration(bad), None, "{bad}");
        }
        assert_eq!(rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_ms("2000-02-29T12:00:00.5Z"), Some(951_825_600_500));
        for bad in [
            "2026-13-01T00:00:00Z",
            "2026-12-01 00:00:00",
            "2026-12-01T00:00:00+1",
            "x",
        ] {
            assert_eq!(rfc3339_ms(bad), None, "{bad}");
        }
    }

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

//! One web fetch: a GET for a checked URL, following at most [`MAX_REDIRECTS`] redirects on
//! the same host (each one checked again before anything is sent), within [`TIMEOUT`] in all,
//! and reading at most [`MAX_BODY`] bytes of the answer. Every hop's name is looked up here
//! and checked ([`crate::target::check_addresses`]), and the client connects only to those
//! addresses: it has no resolver of its own and no proxy.

use crate::error::{Result, WebError};
use crate::target::{Checked, check_addresses, check_parsed};
use futures_util::StreamExt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use url::Url;
use waymark_config::secrets::Redactor;

pub const MAX_REDIRECTS: usize = 5;
pub const TIMEOUT: Duration = Duration::from_secs(15);
pub const MAX_BODY: usize = 5 * 1024 * 1024;

/// What a fetch brought back.
#[derive(Debug)]
pub struct Fetched {
    /// The URL the answer came from (after redirects on the same host).
    pub url: Url,
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// The body was longer than [`MAX_BODY`] and is cut there.
    pub cut: bool,
    /// A redirect to another host, not followed: the model fetches it as a call of its
    /// own, which the user's permission covers (or not) by that host.
    pub elsewhere: Option<Url>,
}

/// What the fetch may reach: the redactor's secrets and the listed private `host:port`s.
pub struct Reach<'a> {
    pub redactor: Option<&'a Redactor>,
    pub allow_private: &'a [String],
}

/// Fetches `start`, stopping when `cancel` fires.
pub async fn fetch(
    start: Checked,
    reach: &Reach<'_>,
    cancel: &CancellationToken,
) -> Result<Fetched> {
    let deadline = Instant::now() + TIMEOUT;
    let work = follow(start, reach, deadline);
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(WebError::Failed("stopped by the user".into())),
        r = tokio::time::timeout_at(deadline.into(), work) => r.unwrap_or_else(|_| {
            Err(WebError::Failed(format!("no complete answer within {} s", TIMEOUT.as_secs())))
        }),
    }
}

async fn follow(mut at: Checked, reach: &Reach<'_>, deadline: Instant) -> Result<Fetched> {
    for hop in 0..=MAX_REDIRECTS {
        let addrs = addresses(&at).await?;
        check_addresses(&at, &addrs)?;
        let client = client_for(&at, &addrs, deadline)?;
        let answer = client
            .get(at.url.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1",
            )
            .send()
            .await
            .map_err(|e| {
                WebError::Failed(format!("the request to {} failed: {}", at.host, cause(&e)))
            })?;
        let status = answer.status();
        if status.is_redirection()
            && let Some(location) = answer.headers().get(reqwest::header::LOCATION)
        {
            let location = location
                .to_str()
                .map_err(|_| WebError::Failed("a redirect's Location is not text".into()))?;
            let next = at.url.join(location).map_err(|e| {
                WebError::Failed(format!("a redirect to `{location}` is not a URL: {e}"))
            })?;
            if next.host_str().map(str::to_ascii_lowercase).as_deref()
                != at.url.host_str().map(str::to_ascii_lowercase).as_deref()
            {
                // Checked anyway, so a redirect toward a secret or a private address is
                // said as refused, not offered to the model as a place to go.
                check_parsed(next.clone(), reach.redactor, reach.allow_private)?;
                return Ok(Fetched {
                    url: at.url,
                    status: status.as_u16(),
                    content_type: None,
                    body: Vec::new(),
                    cut: false,
                    elsewhere: Some(next),
                });
            }
            if hop == MAX_REDIRECTS {
                break;
            }
            at = check_parsed(next, reach.redactor, reach.allow_private)
                .map_err(|e| WebError::Refused(format!("a redirect was refused: {e}")))?;
            continue;
        }
        let content_type = answer
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let (body, cut) = read_capped(answer).await?;
        return Ok(Fetched {
            url: at.url,
            status: status.as_u16(),
            content_type,
            body,
            cut,
            elsewhere: None,
        });
    }
    Err(WebError::Refused(format!(
        "more than {MAX_REDIRECTS} redirects"
    )))
}

/// The addresses of the URL's host: the one written in it, or what the name resolves to.
async fn addresses(at: &Checked) -> Result<Vec<SocketAddr>> {
    if let Ok(ip) = at.host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, at.port)]);
    }
    let found = tokio::net::lookup_host((at.host.as_str(), at.port))
        .await
        .map_err(|e| WebError::Failed(format!("`{}` could not be looked up: {e}", at.host)))?;
    Ok(found.collect())
}

/// A client that reaches `at`'s host at exactly `addrs`: any other name fails to resolve,
/// and no proxy is used (one would connect wherever it likes).
fn client_for(at: &Checked, addrs: &[SocketAddr], deadline: Instant) -> Result<reqwest::Client> {
    let left = deadline.saturating_duration_since(Instant::now());
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(NoLookup))
        .timeout(left.max(Duration::from_millis(1)))
        .user_agent(concat!(
            "Waymark/",
            env!("CARGO_PKG_VERSION"),
            " (web_fetch)"
        ));
    if at.host.parse::<IpAddr>().is_err() {
        builder = builder.resolve_to_addrs(&at.host, addrs);
    }
    builder
        .build()
        .map_err(|e| WebError::Failed(format!("the web client could not be set up: {e}")))
}

/// Reads the body, up to [`MAX_BODY`] bytes; whether there was more.
async fn read_capped(answer: reqwest::Response) -> Result<(Vec<u8>, bool)> {
    let mut body = Vec::new();
    let mut stream = answer.bytes_stream();
    while let Some(piece) = stream.next().await {
        let piece =
            piece.map_err(|e| WebError::Failed(format!("the answer broke off: {}", cause(&e))))?;
        let room = MAX_BODY - body.len();
        if piece.len() > room {
            body.extend_from_slice(&piece[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&piece);
    }
    Ok((body, false))
}

/// A resolver that resolves nothing: every name the client may reach is given to it.
struct NoLookup;

impl reqwest::dns::Resolve for NoLookup {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_string();
        Box::pin(
            async move { Err(format!("`{name}` was not checked, so it is not looked up").into()) },
        )
    }
}

/// An error with its causes, on one line.
fn cause(e: &dyn std::error::Error) -> String {
    let mut said = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        said.push_str(": ");
        said.push_str(&s.to_string());
        source = s.source();
    }
    said
}

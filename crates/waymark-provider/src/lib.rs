//! Model providers: one trait, a request (system, messages, tools) in, streamed deltas out,
//! ending with the full reply and its usage or a typed error. Our own thin clients for the
//! OpenAI Chat Completions and Anthropic Messages wire formats, and an offline scripted model.

mod anthropic;
mod http;
mod models;
mod openai;
mod scripted;
mod spec;
mod usage;

pub use anthropic::AnthropicProvider;
pub use http::{HttpOptions, RetryPolicy};
pub use models::MAX_MODELS;
pub use openai::OpenAiProvider;
pub use scripted::{Script, ScriptedProvider};
pub use spec::{ResolvedModel, SpecError, resolve_model};

use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use waymark_protocol::ToolCallRecord;
use waymark_protocol::{RouteKind, Usage};

/// Where and how a wire client reaches its model.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Provider name shown to the user (`openai`, `ollama`, a settings name).
    pub label: String,
    /// Base URL without the trailing path of the API call.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// What to tell the user to check when the key is refused.
    pub key_hint: String,
    pub route: RouteKind,
    pub context_tokens: u64,
    /// Whether its models take images (OpenAI's, Anthropic's and Ollama's do; a server named in
    /// the settings only when its `images` says so).
    pub images: bool,
}

impl Endpoint {
    pub fn describe(&self) -> String {
        format!("{}:{}", self.label, self.model)
    }
}

/// One entry of the conversation as sent to a model.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelMessage {
    User {
        text: String,
        /// Images the user attached (checked and fitted when admitted).
        images: Vec<waymark_protocol::ToolImage>,
    },
    Assistant {
        text: String,
        reasoning: Option<String>,
        tool_calls: Vec<ToolCallRecord>,
    },
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
        /// Images beside the text, for providers that take them (the text describes each
        /// in a line for those that do not).
        images: Vec<waymark_protocol::ToolImage>,
    },
}

impl ModelMessage {
    /// The images it carries (a tool's result's, or those a user attached), to trim.
    pub fn images_mut(&mut self) -> Option<&mut Vec<waymark_protocol::ToolImage>> {
        match self {
            ModelMessage::ToolResult { images, .. } | ModelMessage::User { images, .. } => {
                Some(images)
            }
            ModelMessage::Assistant { .. } => None,
        }
    }

    /// A user message of text alone.
    pub fn user(text: impl Into<String>) -> Self {
        ModelMessage::User {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// What a model call is for; the scripted model plays a separate list for the verifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallPurpose {
    Main,
    Verifier,
    /// Summarizing older history to fit the context window.
    Compact,
    /// Turning the user's rough words into a goal draft (one call, no tools).
    Draft,
}

/// A model request.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<ModelMessage>,
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: u32,
    pub purpose: CallPurpose,
}

impl ModelRequest {
    /// Rough size in tokens (4 bytes a token), used for context budgeting and estimates.
    pub fn estimated_tokens(&self) -> u64 {
        self.message_tokens() + tools_tokens(&self.tools)
    }

    /// Rough size of the system prompt and messages alone.
    ///
    /// An image counts as [`IMAGE_BYTES`].
    pub fn message_tokens(&self) -> u64 {
        let mut bytes = self.system.len();
        for m in &self.messages {
            bytes += match m {
                ModelMessage::User { text, images } => text.len() + images.len() * IMAGE_BYTES,
                // Reasoning is sent back where the wire takes it (`reasoning_content`), so it
                // counts: limits and charges work from this figure.
                ModelMessage::Assistant {
                    text,
                    reasoning,
                    tool_calls,
                } => {
                    text.len() + reasoning.as_ref().map_or(0, String::len) + calls_bytes(tool_calls)
                }
                // Providers count an image as a fixed number of tokens, about 1.6k for a
                // small one, whatever its bytes.
                ModelMessage::ToolResult {
                    content, images, ..
                } => content.len() + RESULT_OVERHEAD_BYTES + images.len() * IMAGE_BYTES,
            };
        }
        estimate_tokens(bytes)
    }
}

/// What a tool result adds to its content in a request (ids, role), in bytes.
pub const RESULT_OVERHEAD_BYTES: usize = 16;
/// What an image counts as in the size estimates, in bytes of text.
pub const IMAGE_BYTES: usize = 6400;

/// The error for a reply the model declined to give; `said` is what it said instead (its
/// refusal, or the text before the stop), shown cut and on one line.
pub(crate) fn refused(said: &str) -> ProviderError {
    let said = waymark_protocol::display::escape_line(said.trim());
    let said = cut_at_word(&said, 300);
    ProviderError::new(
        ProviderErrorKind::Refused,
        if said.is_empty() {
            "the model declined to answer (its provider's content filter stopped the reply)"
                .to_string()
        } else {
            format!("the model declined to answer: {said}")
        },
    )
}

/// `text` cut to at most `max` characters at a space, with `…` when cut: a word is kept whole
/// or left out, so a secret the redactor knows is never cut into a piece it would not find
/// (the runtime redacts the message after the provider made it).
fn cut_at_word(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    // A word running past the cut is dropped whole (nothing is left of one that fills it).
    let whole = match text.chars().nth(max) {
        Some(c) if !c.is_whitespace() => head.rfind(char::is_whitespace).map_or("", |i| &head[..i]),
        _ => head.as_str(),
    };
    format!("{}…", whole.trim_end())
}

/// The size of a reply's tool calls in a request, in bytes (names and arguments).
pub fn calls_bytes(calls: &[ToolCallRecord]) -> usize {
    calls
        .iter()
        .map(|c| c.name.len() + c.arguments.to_string().len())
        .sum()
}

/// Rough size of a tool list in tokens.
pub fn tools_tokens(tools: &[ToolSpec]) -> u64 {
    estimate_tokens(
        tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
            .sum(),
    )
}

/// Tokens for a byte count (4 bytes a token, at least 1 for non-empty text).
pub fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// A streamed piece of a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Text(String),
    Reasoning(String),
    /// How far the reply has come (sent after each event of a wire client's stream).
    Progress(Progress),
    /// A failed attempt that will be retried after `wait`.
    Retry {
        attempt: u32,
        wait: Duration,
        error: ProviderError,
    },
}

/// The complete reply of one model call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelResponse {
    pub text: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub usage: Usage,
}

/// Receives streamed pieces while a call runs.
pub type StreamSink<'a> = &'a (dyn Fn(StreamEvent) + Send + Sync);

/// A model behind some wire protocol.
pub trait ModelProvider: Send + Sync {
    /// `kind:model`, for display.
    fn describe(&self) -> String;
    /// Whose money a call spends.
    fn route(&self) -> RouteKind;
    /// The model's context window in tokens.
    fn context_tokens(&self) -> u64;
    /// Whether it runs on this machine or the local network (a built-in price of nothing,
    /// Ollama's, holds only there).
    fn is_local(&self) -> bool {
        false
    }
    /// Whether it takes images in a user's message: one sent to a model that does not is
    /// refused before any call.
    fn takes_images(&self) -> bool {
        false
    }
    /// Runs one call, streaming pieces into `sink`.
    fn call<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: StreamSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>>;
    /// The models its server offers, checked for display (see `models.rs`); an error when
    /// the server cannot say.
    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, ProviderError>> {
        let who = self.describe();
        Box::pin(async move {
            Err(ProviderError::new(
                ProviderErrorKind::RequestRejected,
                format!("{who} cannot list its models: type the model's name"),
            ))
        })
    }
}

/// A session's model as one call goes to it: the provider and the spec it was made from,
/// read together, so a call is limited and charged by the model it went to whatever the user
/// switches to meanwhile.
#[derive(Clone)]
pub struct Route {
    pub spec: String,
    pub provider: Arc<dyn ModelProvider>,
}

impl Route {
    /// The model's price by the settings' `pricing` (`None`: it has none).
    pub fn price(
        &self,
        pricing: &std::collections::BTreeMap<String, waymark_config::pricing::Price>,
    ) -> Option<waymark_config::pricing::Price> {
        waymark_config::pricing::price_of(&self.spec, pricing, self.provider.is_local())
    }
}

/// Builds a session's provider again (what the stand-in tries before each model call).
pub type Rebuild = Box<dyn Fn() -> Result<Arc<dyn ModelProvider>, ProviderError> + Send + Sync>;

/// Stands in for a provider that cannot be built now (its API key is not set): a stored
/// session still opens, to be read and answered. Each model call first tries to build the
/// real provider again, so a key stored meanwhile (in the keyring, say) is used at once;
/// while it still cannot be built, the call fails saying why.
pub struct Unavailable {
    pub spec: String,
    pub error: ProviderError,
    pub rebuild: Rebuild,
    built: std::sync::OnceLock<Arc<dyn ModelProvider>>,
}

impl Unavailable {
    pub fn new(spec: String, error: ProviderError, rebuild: Rebuild) -> Self {
        Unavailable {
            spec,
            error,
            rebuild,
            built: std::sync::OnceLock::new(),
        }
    }

    fn real(&self) -> Result<&Arc<dyn ModelProvider>, ProviderError> {
        if let Some(p) = self.built.get() {
            return Ok(p);
        }
        let p = (self.rebuild)()?;
        Ok(self.built.get_or_init(|| p))
    }
}

impl ModelProvider for Unavailable {
    fn describe(&self) -> String {
        self.built
            .get()
            .map_or_else(|| self.spec.clone(), |p| p.describe())
    }
    fn route(&self) -> RouteKind {
        self.built.get().map_or(RouteKind::OwnKey, |p| p.route())
    }
    fn context_tokens(&self) -> u64 {
        self.built.get().map_or(128_000, |p| p.context_tokens())
    }
    fn is_local(&self) -> bool {
        self.built.get().is_some_and(|p| p.is_local())
    }
    fn takes_images(&self) -> bool {
        self.built.get().is_some_and(|p| p.takes_images())
    }
    fn call<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: StreamSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        match self.real() {
            Ok(p) => p.call(request, sink),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}

/// Kinds of provider failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderErrorKind {
    RateLimited,
    QuotaExhausted,
    Auth,
    ServerError,
    BadResponse,
    Timeout,
    Network,
    RequestRejected,
    /// The request is longer than the model's context window (OpenAI
    /// `context_length_exceeded`, Anthropic "prompt is too long"): compact and send again.
    ContextTooLong,
    ScriptExhausted,
    /// The model declined to answer: OpenAI's `finish_reason: "content_filter"` or a
    /// `refusal` in the reply, Anthropic's `stop_reason: "refusal"`. Never tried again.
    Refused,
}

impl ProviderErrorKind {
    pub fn code(self) -> &'static str {
        match self {
            ProviderErrorKind::RateLimited => "rate_limited",
            ProviderErrorKind::QuotaExhausted => "quota_exhausted",
            ProviderErrorKind::Auth => "auth",
            ProviderErrorKind::ServerError => "server_error",
            ProviderErrorKind::BadResponse => "bad_response",
            ProviderErrorKind::Timeout => "timeout",
            ProviderErrorKind::Network => "network",
            ProviderErrorKind::RequestRejected => "request_rejected",
            ProviderErrorKind::ContextTooLong => "context_too_long",
            ProviderErrorKind::ScriptExhausted => "script_exhausted",
            ProviderErrorKind::Refused => "provider_refusal",
        }
    }

    /// Failures worth another try before the first streamed byte.
    pub fn is_retryable(self) -> bool {
        match self {
            ProviderErrorKind::RateLimited
            | ProviderErrorKind::ServerError
            | ProviderErrorKind::Network => true,
            ProviderErrorKind::QuotaExhausted
            | ProviderErrorKind::Auth
            | ProviderErrorKind::BadResponse
            | ProviderErrorKind::Timeout
            | ProviderErrorKind::RequestRejected
            | ProviderErrorKind::ContextTooLong
            | ProviderErrorKind::ScriptExhausted
            | ProviderErrorKind::Refused => false,
        }
    }
}

/// A typed provider failure with a message for the user.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", kind.code())]
pub struct ProviderError {
    pub kind: ProviderErrorKind,
    pub message: String,
    /// Server-requested wait before retrying (`Retry-After`).
    pub retry_after: Option<Duration>,
    /// When the provider's usage limit resets, from the first of `Retry-After`, the
    /// `x-ratelimit-reset-*` headers and the `anthropic-ratelimit-*-reset` headers present
    /// (see [`http::limit_reset`]); None when the reply named none.
    pub resets_in: Option<Duration>,
    /// The provider had begun answering (its reply was streaming) when the call failed: it
    /// bills such a call, so the caller charges it on Waymark's estimate.
    pub streamed: bool,
}

impl ProviderError {
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        ProviderError {
            kind,
            message: message.into(),
            retry_after: None,
            resets_in: None,
            streamed: false,
        }
    }

    pub fn bad_response(message: impl Into<String>) -> Self {
        Self::new(ProviderErrorKind::BadResponse, message)
    }

    pub fn info(&self) -> waymark_protocol::ErrorInfo {
        let mut info = waymark_protocol::ErrorInfo::new(self.kind.code(), self.message.clone());
        info.resets_in_ms = self
            .resets_in
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        info
    }
}

pub use usage::{MAX_CALL_TOKENS, Progress};

/// Parses a tool call's argument text; empty means no arguments. Text that is not JSON is
/// passed on as a string so the tool can tell the model what is wrong.
pub(crate) fn parse_arguments(raw: &str) -> serde_json::Value {
    if raw.trim().is_empty() {
        return serde_json::json!({});
    }
    serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.to_string()))
}

#[cfg(test)]
#[path = "extreme_tests.rs"]
mod extreme_tests;

#[cfg(test)]
mod estimate_tests {
    use super::*;

    /// Fourth red-team: reasoning sent back with each request (`reasoning_content`) was left out
    /// of the request's estimate, so limits, the floor under reported figures and the charge of a
    /// failed call all worked from a figure far too low. It counts.
    #[test]
    fn reasoning_sent_back_counts_in_the_request_estimate() {
        let req = ModelRequest {
            system: String::new(),
            messages: vec![ModelMessage::Assistant {
                text: String::new(),
                reasoning: Some("r".repeat(32_000)),
                tool_calls: vec![],
            }],
            tools: vec![],
            max_output_tokens: 1,
            purpose: CallPurpose::Main,
        };
        assert!(req.message_tokens() >= 8_000, "{}", req.message_tokens());
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;

    /// A refusal is cut at a word, so a secret the runtime redacts afterwards is whole or
    /// gone, never a piece it would not recognise.
    #[test]
    fn a_refusal_is_cut_at_a_word_never_through_a_secret() {
        let secret = "sk-live-OPENAIKEY-0123456789abcdef";
        let said = format!("{} {secret} and more", "word ".repeat(55));
        let e = refused(&said);
        let shown = e.to_string();
        assert!(!shown.contains("sk-live-OPENAI"), "{shown}");
        assert!(shown.ends_with('…'), "{shown}");
        // A short one is kept whole; one word longer than the cut leaves nothing of it.
        assert!(
            refused("I cannot help with that.")
                .to_string()
                .ends_with("I cannot help with that.")
        );
        assert!(!refused(&"x".repeat(400)).to_string().contains("xxx"));
    }
}

//! The offline scripted model: plays a JSON script of responses in order (a separate list
//! feeds verifier calls). Its position survives restarts in the session directory, so a
//! session driven by several processes (exec, then answer) walks one script. A script may
//! branch on what the user said: while the newest user-side message holds a branch's `when`
//! text (and, if given, one of its `when_any` words and none of its `unless_any` words),
//! that branch's replies play, each list from its own position (the demo's review paths:
//! approve, revise, and an answer to a blocked goal followed whichever way it goes).

use super::{
    CallPurpose, ModelProvider, ModelRequest, ModelResponse, ProviderError, ProviderErrorKind,
    StreamEvent, StreamSink, estimate_tokens,
};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use waymark_protocol::ToolCallRecord;
use waymark_protocol::{RouteKind, Usage};

/// The largest script file read (the longest test scripts are a few MiB).
pub const SCRIPT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The text of `path` if it is a regular file of at most [`SCRIPT_MAX_BYTES`].
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(SCRIPT_MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > SCRIPT_MAX_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than the {SCRIPT_MAX_BYTES} bytes a script may have"
        )));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not UTF-8 text"))
}

/// What happens when a list runs out.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum WhenExhausted {
    #[default]
    Error,
    RepeatLast,
}

/// A scripted model file.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub responses: Vec<ScriptResponse>,
    /// Replies played instead of `responses` while the newest user-side message matches
    /// the branch (the first branch that matches).
    #[serde(default)]
    pub branches: Vec<Branch>,
    #[serde(default)]
    pub verifier: Vec<ScriptResponse>,
    #[serde(default)]
    pub when_exhausted: WhenExhausted,
    /// Context window the scripted model claims (tests of context budgeting).
    #[serde(default)]
    pub context_tokens: Option<u64>,
    /// Replies to compaction calls, in order; without any, a compaction gets a fixed summary
    /// naming how many messages it covered (so any script survives compaction).
    #[serde(default)]
    pub compact: Vec<ScriptResponse>,
    /// Replies to goal-draft calls, in order; without any, a draft is made from the user's
    /// words (so the offline demo can draft a goal).
    #[serde(default)]
    pub draft: Vec<ScriptResponse>,
    /// Refuse a request whose estimated size passes `context_tokens`, as a real provider
    /// does (`context_too_long`).
    #[serde(default)]
    pub reject_over_window: bool,
}

/// A list of replies for one kind of message (see [`Script::branches`]). Every condition
/// given must hold; a branch with neither `when` nor `when_any` never plays.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct Branch {
    /// Text the newest user-side message must hold (case-sensitive, the runtime's
    /// reminders included).
    #[serde(default)]
    pub when: String,
    /// Words of which what the user wrote must hold at least one, ignoring case: the
    /// newest user-side message without the `<system_reminder>` block the runtime puts
    /// first (so an answer is matched however it is worded, never by the reminder's text).
    #[serde(default)]
    pub when_any: Vec<String>,
    /// Words of which what the user wrote must hold none, ignoring case (an answer naming
    /// both choices, or negating one, then plays neither branch).
    #[serde(default)]
    pub unless_any: Vec<String>,
    #[serde(default)]
    pub responses: Vec<ScriptResponse>,
}

impl Branch {
    /// Whether `newest`, the newest user-side message, calls for this branch.
    fn matches(&self, newest: &str) -> bool {
        if self.when.is_empty() && self.when_any.is_empty() {
            return false;
        }
        let said = newest
            .strip_prefix("<system_reminder>")
            .and_then(|rest| rest.split_once("</system_reminder>"))
            .map_or(newest, |(_, after)| after)
            .to_lowercase();
        let holds = |word: &String| !word.is_empty() && said.contains(&word.to_lowercase());
        (self.when.is_empty() || newest.contains(&self.when))
            && (self.when_any.is_empty() || self.when_any.iter().any(holds))
            && !self.unless_any.iter().any(holds)
    }
}

/// One scripted reply.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct ScriptResponse {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptToolCall>,
    #[serde(default)]
    pub usage: Option<ScriptUsage>,
    #[serde(default)]
    pub error: Option<ScriptError>,
    /// With a `rate_limited` or `quota_exhausted` error: when the provider says the limit
    /// resets, in milliseconds (as its `Retry-After` or reset headers would).
    #[serde(default)]
    pub resets_in_ms: Option<u64>,
    #[serde(default)]
    pub delay_ms: Option<u64>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// The provider's call id; omitted, the call comes without one (as from some servers).
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

#[derive(Deserialize, Debug, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ScriptError {
    RateLimited,
    QuotaExhausted,
    ServerError,
    BadResponse,
    ContextTooLong,
}

impl Script {
    /// Parses a script; the error names the file and the line.
    pub fn from_file(path: &Path) -> Result<Script, ProviderError> {
        // A regular file of a sane size: never a FIFO (opening one would block), a device or a
        // huge file. Opened once without blocking, then checked and read through that handle,
        // so a file swapped in after a check is never the one read.
        let refuse = |why: String| {
            ProviderError::new(
                ProviderErrorKind::RequestRejected,
                format!("the scripted model file {}: {why}", path.display()),
            )
        };
        let text = read_bounded(path).map_err(|e| refuse(e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::RequestRejected,
                format!("the scripted model file {} is invalid: {e}", path.display()),
            )
        })
    }
}

#[derive(Serialize, Deserialize, Default, Debug, Clone)]
struct Cursor {
    responses: usize,
    verifier: usize,
    #[serde(default)]
    compact: usize,
    #[serde(default)]
    draft: usize,
    /// The position in each branch, by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    branches: Vec<usize>,
}

/// The scripted model's own goal draft when its script has none: the user's words (inside
/// `<rough_goal>` in the newest user message, else its last line) as the objective, with
/// plain criteria and a small budget, as the JSON a real model is asked for.
fn scripted_draft(request: &ModelRequest) -> String {
    let text = request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            crate::ModelMessage::User { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or("");
    let words = text
        .rsplit_once("<rough_goal>")
        .and_then(|(_, rest)| rest.split_once("</rough_goal>"))
        .map(|(w, _)| w)
        .unwrap_or_else(|| {
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
        })
        .trim();
    serde_json::json!({
        "objective": words,
        "criteria": ["The change is made and the project's tests pass", "What changed is summarized"],
        "budget": {"tokens": 200_000, "turns": 20, "seconds": 3600},
        "reasoning": "A small, single-area change: a few turns, well under an hour."
    })
    .to_string()
}

/// Plays a [`Script`].
pub struct ScriptedProvider {
    label: String,
    script: Script,
    workspace: String,
    session_dir: Mutex<String>,
    cursor: Mutex<Cursor>,
    cursor_path: Option<PathBuf>,
    /// Opened on first use (the session folder may not exist yet when the provider is made).
    cursor_file: Mutex<Option<std::fs::File>>,
}

const CURSOR_FILE: &str = "scripted-model.cursor.json";

/// Longest pause a scripted reply may ask for (ten minutes).
const MAX_DELAY_MS: u64 = 600_000;

impl ScriptedProvider {
    /// A provider for `script`; with `session_dir`, the position is kept in a file there.
    pub fn new(label: &str, script: Script, workspace: &Path, session_dir: Option<&Path>) -> Self {
        let path = session_dir.map(|d| d.join(CURSOR_FILE));
        let cursor = path
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| serde_json::from_str(t.trim()).ok())
            .unwrap_or_default();
        ScriptedProvider {
            label: label.to_string(),
            script,
            workspace: workspace.display().to_string(),
            session_dir: Mutex::new(
                session_dir
                    .map(|d| d.display().to_string())
                    .unwrap_or_default(),
            ),
            cursor: Mutex::new(cursor),
            cursor_path: path,
            cursor_file: Mutex::new(None),
        }
    }

    /// The branch the request's newest user-side message calls for, if any.
    fn branch_for(&self, request: &ModelRequest) -> Option<usize> {
        let newest = request.messages.iter().rev().find_map(|m| match m {
            crate::ModelMessage::User { text, .. } => Some(text.as_str()),
            _ => None,
        })?;
        self.script.branches.iter().position(|b| b.matches(newest))
    }

    fn next(
        &self,
        purpose: CallPurpose,
        branch: Option<usize>,
    ) -> Result<ScriptResponse, ProviderError> {
        let mut guard = self.cursor.lock().unwrap_or_else(|p| p.into_inner());
        let cur = &mut *guard;
        let branch_name;
        let (list, index, name) = match (purpose, branch) {
            (CallPurpose::Main, Some(b)) => {
                if cur.branches.len() <= b {
                    cur.branches.resize(b + 1, 0);
                }
                branch_name = format!("branches[{b}]");
                (
                    &self.script.branches[b].responses,
                    &mut cur.branches[b],
                    branch_name.as_str(),
                )
            }
            (CallPurpose::Main, None) => (&self.script.responses, &mut cur.responses, "responses"),
            (CallPurpose::Verifier, _) => (&self.script.verifier, &mut cur.verifier, "verifier"),
            (CallPurpose::Compact, _) => (&self.script.compact, &mut cur.compact, "compact"),
            (CallPurpose::Draft, _) => (&self.script.draft, &mut cur.draft, "draft"),
        };
        let item = match list.get(*index) {
            Some(r) => r.clone(),
            None => match (self.script.when_exhausted, list.last()) {
                (WhenExhausted::RepeatLast, Some(last)) => last.clone(),
                (WhenExhausted::RepeatLast, None) | (WhenExhausted::Error, _) => {
                    return Err(ProviderError::new(
                        ProviderErrorKind::ScriptExhausted,
                        format!(
                            "the scripted model has no more `{name}` entries (it had {}); add more or set \"when_exhausted\": \"repeat_last\"",
                            list.len()
                        ),
                    ));
                }
            },
        };
        *index += 1;
        if let Some(path) = &self.cursor_path {
            self.save_cursor(path, cur);
        }
        Ok(item)
    }

    /// Best effort: a lost cursor only replays a reply, it never corrupts the session. The
    /// file is kept open and overwritten in place (padded to a fixed width), since a rename
    /// per model call costs more than the rest of the call.
    fn save_cursor(&self, path: &Path, cur: &Cursor) {
        use std::os::unix::fs::FileExt as _;
        let mut file = self.cursor_file.lock().unwrap_or_else(|p| p.into_inner());
        if file.is_none() {
            use std::os::unix::fs::OpenOptionsExt as _;
            *file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(path)
                .ok();
        }
        if let (Some(f), Ok(json)) = (file.as_ref(), serde_json::to_string(&cur)) {
            // Padded to a width no cursor of a sane script outgrows, so a shorter one never
            // leaves the tail of a longer one behind.
            let _ = f.write_all_at(format!("{json:<255}\n").as_bytes(), 0);
        }
    }

    /// Sets what `${session_dir}` expands to (a provider shared by tests learns it late).
    pub fn set_session_dir(&self, dir: &Path) {
        *self.session_dir.lock().unwrap_or_else(|p| p.into_inner()) = dir.display().to_string();
    }

    fn expand(&self, v: &Value) -> Value {
        let session_dir = self
            .session_dir
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        expand_with(v, &self.workspace, &session_dir)
    }
}

fn expand_with(v: &Value, workspace: &str, session_dir: &str) -> Value {
    match v {
        Value::String(s) => Value::String(
            s.replace("${workspace}", workspace)
                .replace("${session_dir}", session_dir),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| expand_with(x, workspace, session_dir))
                .collect(),
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), expand_with(x, workspace, session_dir)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Splits text into a few pieces at character boundaries, so it streams as deltas.
fn pieces(text: &str) -> Vec<&str> {
    let n = if text.len() < 8 { 1 } else { 4 };
    let step = text.len().div_ceil(n);
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

impl ModelProvider for ScriptedProvider {
    fn describe(&self) -> String {
        self.label.clone()
    }

    fn route(&self) -> RouteKind {
        RouteKind::Managed
    }

    fn context_tokens(&self) -> u64 {
        self.script.context_tokens.unwrap_or(200_000)
    }

    /// The scripted model stands for one that does: tests read what it was sent.
    fn takes_images(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: StreamSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            let window = self.context_tokens();
            let size = request.estimated_tokens();
            if self.script.reject_over_window && size > window {
                return Err(ProviderError::new(
                    ProviderErrorKind::ContextTooLong,
                    format!("prompt is too long: {size} tokens > {window} maximum (scripted)"),
                ));
            }
            let r = if request.purpose == CallPurpose::Compact && self.script.compact.is_empty() {
                ScriptResponse {
                    text: Some(format!(
                        "Scripted summary of the {} earlier messages.",
                        request.messages.len()
                    )),
                    ..ScriptResponse::default()
                }
            } else if request.purpose == CallPurpose::Draft && self.script.draft.is_empty() {
                ScriptResponse {
                    text: Some(scripted_draft(request)),
                    ..ScriptResponse::default()
                }
            } else {
                self.next(request.purpose, self.branch_for(request))?
            };
            let text = r.text.clone().unwrap_or_default();
            let parts = pieces(&text);
            let delay = r.delay_ms.unwrap_or(0);
            if delay > MAX_DELAY_MS {
                return Err(ProviderError::bad_response(format!(
                    "the scripted reply's delay_ms is {delay}; at most {MAX_DELAY_MS} is accepted"
                )));
            }
            let per_piece = Duration::from_millis(delay / (parts.len() as u64 + 1));
            if delay > 0 {
                tokio::time::sleep(per_piece).await;
            }
            for p in parts {
                sink(StreamEvent::Text(p.to_string()));
                if delay > 0 {
                    tokio::time::sleep(per_piece).await;
                }
            }
            if let Some(e) = r.error {
                let (kind, msg) = match e {
                    ScriptError::RateLimited => {
                        (ProviderErrorKind::RateLimited, "rate limited (scripted)")
                    }
                    ScriptError::QuotaExhausted => (
                        ProviderErrorKind::QuotaExhausted,
                        "quota used up (scripted)",
                    ),
                    ScriptError::ServerError => {
                        (ProviderErrorKind::ServerError, "server error (scripted)")
                    }
                    ScriptError::BadResponse => {
                        (ProviderErrorKind::BadResponse, "malformed reply (scripted)")
                    }
                    ScriptError::ContextTooLong => (
                        ProviderErrorKind::ContextTooLong,
                        "prompt is too long (scripted)",
                    ),
                };
                let mut err = ProviderError::new(kind, msg);
                err.resets_in = r.resets_in_ms.map(Duration::from_millis);
                return Err(err);
            }
            let tool_calls: Vec<ToolCallRecord> = r
                .tool_calls
                .iter()
                .map(|c| {
                    ToolCallRecord::from_provider(
                        c.id.clone(),
                        c.name.clone(),
                        self.expand(&c.arguments),
                    )
                })
                .collect();
            let usage = match r.usage {
                Some(u) => crate::usage::check(Usage {
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    cached_tokens: 0,
                    estimated: false,
                })?,
                None => Usage {
                    input_tokens: request.estimated_tokens(),
                    output_tokens: estimate_tokens(text.len() + super::calls_bytes(&tool_calls))
                        .max(1),
                    cached_tokens: 0,
                    estimated: true,
                },
            };
            Ok(ModelResponse {
                text,
                reasoning: None,
                tool_calls,
                usage,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CallPurpose;
    use std::sync::Mutex as StdMutex;

    #[test]
    fn a_script_file_is_read_only_when_regular_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let huge = dir.path().join("huge.json");
        // Sparse: the size is what counts, nothing is written.
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(SCRIPT_MAX_BYTES + 1)
            .unwrap();
        let e = Script::from_file(&huge).err().unwrap();
        assert!(e.message.contains("larger than"), "{}", e.message);
        let e = Script::from_file(dir.path()).err().unwrap();
        assert!(e.message.contains("not a regular file"), "{}", e.message);
        let ok = dir.path().join("ok.json");
        std::fs::write(&ok, r#"{"responses": [{"text": "hi"}]}"#).unwrap();
        assert!(Script::from_file(&ok).is_ok());
    }

    fn req(purpose: CallPurpose) -> ModelRequest {
        ModelRequest {
            system: "s".into(),
            messages: vec![],
            tools: vec![],
            max_output_tokens: 10,
            purpose,
        }
    }

    fn script(json: &str) -> Script {
        serde_json::from_str(json).unwrap()
    }

    #[tokio::test]
    async fn plays_in_order_streams_deltas_and_expands_placeholders() {
        let s = script(
            r#"{"responses":[{"text":"hello there, world","tool_calls":[{"name":"write","arguments":{"path":"${session_dir}/artifacts/notes.md"}}]},{"text":"done"}],
                "verifier":[{"text":"VERDICT: PASS"}]}"#,
        );
        let dir = tempfile::tempdir().unwrap();
        let p = ScriptedProvider::new("scripted:x", s, Path::new("/ws"), Some(dir.path()));
        let deltas = StdMutex::new(Vec::new());
        let sink = |e: StreamEvent| deltas.lock().unwrap().push(e);
        let r = p.call(&req(CallPurpose::Main), &sink).await.unwrap();
        assert!(deltas.lock().unwrap().len() > 1);
        assert_eq!(
            r.tool_calls[0].arguments["path"],
            format!("{}/artifacts/notes.md", dir.path().display())
        );
        assert!(r.usage.output_tokens > 0);
        let v = p.call(&req(CallPurpose::Verifier), &sink).await.unwrap();
        assert_eq!(v.text, "VERDICT: PASS");
        // A new provider on the same session dir continues where the last one stopped.
        let s2 = script(r#"{"responses":[{"text":"a"},{"text":"done"}]}"#);
        let p2 = ScriptedProvider::new("scripted:x", s2, Path::new("/ws"), Some(dir.path()));
        assert_eq!(
            p2.call(&req(CallPurpose::Main), &sink).await.unwrap().text,
            "done"
        );
        let e = p2.call(&req(CallPurpose::Main), &sink).await.unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::ScriptExhausted);
    }

    /// A request whose newest user-side message is `text` (a tool result after it too).
    fn said(text: &str) -> ModelRequest {
        ModelRequest {
            messages: vec![
                crate::ModelMessage::user(text),
                crate::ModelMessage::ToolResult {
                    call_id: "c".into(),
                    name: "read_file".into(),
                    content: "approved by the tool".into(),
                    is_error: false,
                    images: vec![],
                },
            ],
            ..req(CallPurpose::Main)
        }
    }

    /// The newest user-side message picks the list; each list keeps its own place, across
    /// a restart too; a message no branch names plays the main list.
    #[tokio::test]
    async fn a_branch_plays_while_the_newest_user_message_names_it() {
        let s = || {
            script(
                r#"{"responses":[{"text":"main 1"},{"text":"main 2"}],
                    "branches":[{"when":"approved","responses":[{"text":"impl 1"},{"text":"impl 2"}]},
                                {"when":"asks for changes","responses":[{"text":"revise 1"}]}]}"#,
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let p = ScriptedProvider::new("scripted", s(), Path::new("/ws"), Some(dir.path()));
        let sink = |_: StreamEvent| {};
        assert_eq!(
            p.call(&said("plan it"), &sink)
                .await
                .map(|r| r.text)
                .unwrap(),
            "main 1"
        );
        assert_eq!(
            p.call(&said("The user asks for changes"), &sink)
                .await
                .map(|r| r.text)
                .unwrap(),
            "revise 1"
        );
        assert_eq!(
            p.call(&said("The user approved it"), &sink)
                .await
                .map(|r| r.text)
                .unwrap(),
            "impl 1"
        );
        // Only user messages count: the tool result saying "approved" does not.
        assert_eq!(
            p.call(&said("go on"), &sink).await.map(|r| r.text).unwrap(),
            "main 2"
        );
        let p2 = ScriptedProvider::new("scripted", s(), Path::new("/ws"), Some(dir.path()));
        assert_eq!(
            p2.call(&said("The user approved it"), &sink)
                .await
                .map(|r| r.text)
                .unwrap(),
            "impl 2"
        );
        let e = p2
            .call(&said("The user asks for changes"), &sink)
            .await
            .map(|r| r.text)
            .unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::ScriptExhausted);
        assert!(e.message.contains("branches[1]"), "{e}");
    }

    /// `when_any` and `unless_any` look at what the user wrote, ignoring case and the
    /// reminder block before it; `when` still looks at the whole message. An answer naming
    /// both choices plays neither, and a branch without `when` or `when_any` never plays.
    #[tokio::test]
    async fn a_branch_can_ask_for_one_of_some_words_and_none_of_others() {
        let s = script(
            r#"{"responses":[{"text":"main"}],
                "branches":[{"unless_any":["zzz"],"responses":[{"text":"never"}]},
                            {"when":"[goal]","when_any":["print","as given"],"unless_any":["reject","not"],"responses":[{"text":"print"}]},
                            {"when_any":["REJECT"],"unless_any":["print"],"responses":[{"text":"reject"}]}],
                "when_exhausted":"repeat_last"}"#,
        );
        let p = ScriptedProvider::new("scripted", s, Path::new("/ws"), None);
        let sink = |_: StreamEvent| {};
        let cases = [
            ("[goal] Print them as given.", "print"),
            ("[goal] As given, please", "print"),
            ("Reject them", "reject"),
            ("[goal] rEjEcTeD", "reject"),
            // Both choices named, or a negation: neither branch guesses.
            ("[goal] Don't reject them, print them", "main"),
            ("[goal] Do not print them", "main"),
            // `when` must hold too.
            ("Print them as given.", "main"),
            ("[goal] You decide.", "main"),
            // The words of the reminder block do not count; `when` may be in it.
            (
                "<system_reminder>\n[goal] do not reject\n</system_reminder>\n\nprint them",
                "print",
            ),
        ];
        for (message, played) in cases {
            assert_eq!(
                p.call(&said(message), &sink).await.map(|r| r.text).unwrap(),
                played,
                "{message}"
            );
        }
    }

    #[tokio::test]
    async fn cursor_survives_when_the_session_folder_is_made_after_the_provider() {
        let dir = tempfile::tempdir().unwrap();
        let sd = dir.path().join("later");
        let s = || script(r#"{"responses":[{"text":"first"},{"text":"second"}]}"#);
        let p = ScriptedProvider::new("scripted", s(), Path::new("/ws"), Some(&sd));
        std::fs::create_dir_all(&sd).unwrap();
        let sink = |_: StreamEvent| {};
        assert_eq!(
            p.call(&req(CallPurpose::Main), &sink).await.unwrap().text,
            "first"
        );
        let p2 = ScriptedProvider::new("scripted", s(), Path::new("/ws"), Some(&sd));
        assert_eq!(
            p2.call(&req(CallPurpose::Main), &sink).await.unwrap().text,
            "second"
        );
    }

    #[tokio::test]
    async fn repeat_last_and_typed_errors() {
        let s = script(
            r#"{"responses":[{"error":"rate_limited"},{"text":"x"}],"when_exhausted":"repeat_last"}"#,
        );
        let p = ScriptedProvider::new("scripted", s, Path::new("/ws"), None);
        let sink = |_: StreamEvent| {};
        let e = p.call(&req(CallPurpose::Main), &sink).await.unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::RateLimited);
        for _ in 0..3 {
            assert_eq!(
                p.call(&req(CallPurpose::Main), &sink).await.unwrap().text,
                "x"
            );
        }
    }

    #[test]
    fn malformed_script_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.json");
        std::fs::write(&f, r#"{"responses": [{"txt": "typo"}]}"#).unwrap();
        let e = Script::from_file(&f).unwrap_err();
        assert!(
            e.message.contains("bad.json") && e.message.contains("txt"),
            "{e}"
        );
    }

    #[test]
    fn pieces_keep_char_boundaries() {
        let t = "héllo wörld ünïcode";
        assert_eq!(pieces(t).concat(), t);
        assert!(pieces(t).len() > 1);
    }
}

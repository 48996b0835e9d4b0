//! What Waymark answers a server: who it is and what it supports (`initialize`), the roots
//! (the workspaces of the sessions using the server), and the notifications it acts on:
//! progress of a running call and a changed tool list. A form the server sends during a call
//! (elicitation) goes to the session whose call runs on it. Sampling is declined.
#![allow(deprecated)] // Roots are deprecated by the SDK (SEP-2577) but still what servers ask for.

use rmcp::model::{
    ClientCapabilities, ClientInfo, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ListRootsResult,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, Root, RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// One progress report of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// The longest progress message passed on; a longer one is dropped (the report still goes).
pub const MAX_PROGRESS_MESSAGE: usize = 2048;

/// Where a call's progress reports go.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// What the handler shares with the server's connection owner.
#[derive(Default)]
pub struct Shared {
    /// Running calls' progress sinks, by the token rmcp gave the request.
    progress: Mutex<HashMap<ProgressToken, ProgressSink>>,
    /// Woken when the server says its tool list changed.
    pub tools_changed: Notify,
    /// The workspaces of the sessions using this server, in the order they came.
    roots: Mutex<Vec<std::path::PathBuf>>,
    /// Who answers a form the server sends: the running calls that take one, oldest first.
    askers: Mutex<Vec<Asker>>,
    next_asker: AtomicU64,
    /// Forms waiting on the user: calls do not time out meanwhile, and a second form is
    /// declined until the first is answered.
    asking: AtomicUsize,
}

/// A running call that takes forms: who answers them, and whether one waits on the user.
struct Asker {
    id: u64,
    answer: Elicitor,
    waiting: Arc<std::sync::atomic::AtomicBool>,
}

/// A running call's place among those who answer forms; dropped when the call ends.
pub struct AskerGuard {
    shared: Arc<Shared>,
    id: u64,
    waiting: Arc<std::sync::atomic::AtomicBool>,
}

impl AskerGuard {
    /// Whether a form of this call waits on the user (its clock stops meanwhile).
    pub fn waiting(&self) -> bool {
        self.waiting.load(Ordering::Acquire)
    }
}

impl Drop for AskerGuard {
    fn drop(&mut self) {
        lock(&self.shared.askers).retain(|a| a.id != self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Sends the progress of request `token` to `sink` until [`Shared::unwatch`].
    pub fn watch(&self, token: ProgressToken, sink: ProgressSink) {
        lock(&self.progress).insert(token, sink);
    }

    pub fn unwatch(&self, token: &ProgressToken) {
        lock(&self.progress).remove(token);
    }

    /// Forms the server sends go to `asker` (after any call registered before) until the
    /// guard is dropped.
    pub fn ask_with(self: &Arc<Self>, asker: Elicitor) -> AskerGuard {
        let id = self.next_asker.fetch_add(1, Ordering::Relaxed);
        let waiting = Arc::new(std::sync::atomic::AtomicBool::new(false));
        lock(&self.askers).push(Asker {
            id,
            answer: asker,
            waiting: waiting.clone(),
        });
        AskerGuard {
            shared: self.clone(),
            id,
            waiting,
        }
    }

    /// Adds a session's workspace to the roots; true when it was not one yet.
    pub fn add_root(&self, workspace: &std::path::Path) -> bool {
        let mut roots = lock(&self.roots);
        if roots.iter().any(|r| r == workspace) {
            return false;
        }
        roots.push(workspace.to_path_buf());
        true
    }
}

/// A server's request for input (`elicitation/create` in form mode).
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    pub message: String,
    /// The requested schema: an object of primitive fields, each maybe with a `default`.
    pub schema: serde_json::Value,
}

/// What the user answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    Accept(serde_json::Value),
    Decline,
    Cancel,
}

/// Who answers a server's requests for input.
pub type Elicitor = Arc<
    dyn Fn(Elicitation) -> futures_util::future::BoxFuture<'static, ElicitAnswer> + Send + Sync,
>;

/// The values a form starts with: each field's `default` (SEP-1034), for the fields that
/// have one.
pub fn form_defaults(schema: &serde_json::Value) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
        for (name, field) in props {
            if let Some(d) = field.get("default") {
                out.insert(name.clone(), d.clone());
            }
        }
    }
    serde_json::Value::Object(out)
}

/// The rmcp client handler of one server connection.
#[derive(Clone, Default)]
pub struct Handler {
    pub shared: Arc<Shared>,
    /// Answers every request for input (a client with no sessions: the conformance one).
    pub elicitor: Option<Elicitor>,
    /// Offer forms, answered by the running calls' askers ([`Shared::ask_with`]); a form
    /// with no call to take it is declined.
    pub forms: bool,
}

/// Counts a form as waiting on the user (on the server, and on its call) while it lives.
struct Asking<'a>(&'a AtomicUsize, Option<Arc<std::sync::atomic::AtomicBool>>);

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        if let Some(w) = &self.1 {
            w.store(false, Ordering::Release);
        }
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientInfo {
        let mut capabilities = ClientCapabilities::default();
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(true);
        capabilities.roots = Some(roots);
        if self.elicitor.is_some() || self.forms {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        ClientInfo::new(
            capabilities,
            Implementation::new("waymark", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots = lock(&self.shared.roots)
            .iter()
            .filter_map(|p| url::Url::from_file_path(p).ok())
            .map(|u| Root::new(u.to_string()))
            .collect();
        Ok(ListRootsResult::new(roots))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let decline = Ok(ElicitResult::new(ElicitationAction::Decline));
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return decline;
        };
        // The call running on the server takes the form. With none nobody would see it;
        // with several (sessions sharing the server) it could reach the wrong one: declined.
        let (asker, waiting) = match &self.elicitor {
            Some(e) => (e.clone(), None),
            None => {
                let askers = lock(&self.shared.askers);
                let [only] = askers.as_slice() else {
                    return decline;
                };
                (only.answer.clone(), Some(only.waiting.clone()))
            }
        };
        // One form at a time: a server cannot stack questions on the user.
        if self
            .shared
            .asking
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return decline;
        }
        if let Some(w) = &waiting {
            w.store(true, Ordering::Release);
        }
        let _asking = Asking(&self.shared.asking, waiting);
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let answer = tokio::select! {
            a = asker(Elicitation { message, schema }) => a,
            // The server withdrew its request.
            _ = context.ct.cancelled() => ElicitAnswer::Cancel,
        };
        Ok(match answer {
            ElicitAnswer::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content)
            }
            ElicitAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // A report for no running call (late, or made up) is dropped: nothing is kept.
        let sink = lock(&self.shared.progress)
            .get(&params.progress_token)
            .cloned();
        if let Some(sink) = sink
            && params.progress.is_finite()
        {
            sink(Progress {
                progress: params.progress,
                total: params.total.filter(|t| t.is_finite()),
                // Whole or not at all: a cut could leave part of a secret that redaction
                // (after this) would not recognise. Front ends shorten it for display.
                message: params.message.filter(|m| m.len() <= MAX_PROGRESS_MESSAGE),
            });
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // Many notifications before the next listing make one listing.
        self.shared.tools_changed.notify_one();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // The tools and the prompts are listed again together.
        self.shared.tools_changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_starts_with_each_fields_default() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}
        }});
        assert_eq!(
            form_defaults(&schema),
            serde_json::json!({"name": "John Doe", "age": 30})
        );
        assert_eq!(form_defaults(&serde_json::json!({})), serde_json::json!({}));
    }
}

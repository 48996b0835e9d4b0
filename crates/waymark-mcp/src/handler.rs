//! What Waymark answers a server: who it is and what it supports (`initialize`), the roots
//! (the workspaces of the sessions using the server), and the notifications it acts on:
//! progress of a running call and a changed tool list. Sampling is declined.
#![allow(deprecated)] // Roots are deprecated by the SDK (SEP-2577) but still what servers ask for.

use rmcp::model::{
    ClientCapabilities, ClientInfo, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ListRootsResult,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, Root, RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use std::collections::HashMap;
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
    /// Answers requests for input; without one, none is offered and each is declined.
    pub elicitor: Option<Elicitor>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientInfo {
        let mut capabilities = ClientCapabilities::default();
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(true);
        capabilities.roots = Some(roots);
        if self.elicitor.is_some() {
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
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (
            Some(elicitor),
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            },
        ) = (&self.elicitor, request)
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        Ok(match elicitor(Elicitation { message, schema }).await {
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

//! Tools that work on the session (plan mode's, goals'): the engine runs them with the
//! session's handle. And how a runtime error becomes a tool result.

use crate::SessionApi;
use crate::error::Error;
use futures_util::future::BoxFuture;
use waymark_tools::Tool;

/// A tool an extension offers: offered and guarded like any tool, but it works on the
/// session (plan mode's, goals'), so the engine runs it with the session's handle. The tools
/// below the extension API never see a session.
///
/// A session tool is offered as one (`Extension::session_tools`):
///
/// ```
/// # use std::sync::Arc;
/// # use waymark_extension::{SessionApi, SessionTool};
/// # use waymark_tools::{Effects, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
/// # use futures_util::future::BoxFuture;
/// # struct SetMode;
/// # impl Tool for SetMode {
/// #     fn name(&self) -> &str { "set_mode" }
/// #     fn description(&self) -> &str { "Changes the session's mode." }
/// #     fn schema(&self) -> serde_json::Value { serde_json::json!({"type": "object"}) }
/// #     fn effects(&self) -> Effects { Effects::READS }
/// # }
/// # impl SessionTool for SetMode {
/// #     fn handle_in<'a>(&'a self, _: &'a SessionApi, _: &'a ToolContext, _: serde_json::Value)
/// #         -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
/// #         Box::pin(async { Ok(ToolOutput::text("done")) })
/// #     }
/// # }
/// let offered: Vec<Arc<dyn SessionTool>> = vec![Arc::new(SetMode)];
/// # assert_eq!(offered[0].name(), "set_mode");
/// ```
///
/// It cannot be registered as a plain tool, which runs without the session: that does not
/// compile (a session tool has no `FreeTool::handle`).
///
/// ```compile_fail,E0277
/// # use std::sync::Arc;
/// # use waymark_extension::{SessionApi, SessionTool};
/// # use waymark_tools::{Effects, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
/// # use futures_util::future::BoxFuture;
/// # struct SetMode;
/// # impl Tool for SetMode {
/// #     fn name(&self) -> &str { "set_mode" }
/// #     fn description(&self) -> &str { "Changes the session's mode." }
/// #     fn schema(&self) -> serde_json::Value { serde_json::json!({"type": "object"}) }
/// #     fn effects(&self) -> Effects { Effects::READS }
/// # }
/// # impl SessionTool for SetMode {
/// #     fn handle_in<'a>(&'a self, _: &'a SessionApi, _: &'a ToolContext, _: serde_json::Value)
/// #         -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
/// #         Box::pin(async { Ok(ToolOutput::text("done")) })
/// #     }
/// # }
/// let mut registry = ToolRegistry::default();
/// registry.register(Arc::new(SetMode));
/// ```
pub trait SessionTool: Tool {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a waymark_tools::ToolContext,
        args: serde_json::Value,
    ) -> BoxFuture<'a, std::result::Result<waymark_tools::ToolOutput, waymark_tools::ToolError>>;

    /// Whether a subagent may call it. A session tool acts on the session itself (its
    /// mode, its goal, the user's attention: a question, a form, the end of the turn), which
    /// is the session's agent's alone, so by default a subagent may not. One that only
    /// works for its caller (starting a subagent of its own) says yes; its `terminate` is
    /// not heeded in a subagent's run.
    fn for_subagents(&self) -> bool {
        false
    }

    /// How many calls of it in one reply may run at once (consecutive calls of it, in
    /// order): 1, one after another, unless each call works on its own (a subagent, with a
    /// context of its own) and so may run beside the others.
    fn at_once(&self, _api: &SessionApi) -> usize {
        1
    }
}

/// A runtime error as a tool result: refusals go to the model, the rest ends the turn.
pub fn tool_error(e: Error) -> waymark_tools::ToolError {
    match e {
        Error::Refused { message: m, .. }
        | Error::NeedsConfirmation(m)
        | Error::FeatureOff { message: m, .. } => waymark_tools::ToolError::Model(m),
        other => waymark_tools::ToolError::Fatal(other.to_string()),
    }
}

//! The shell the runtime itself runs a goal's commands in (a wait's check, the goal's
//! checks): the session's shell tool, in a sandbox the caller chooses, with a call context
//! of its own (no turn, no call, no live output), so nothing the model asks for shapes it.

use std::sync::Arc;
use std::time::Duration;
use waymark_extension::SessionApi;
use waymark_tools::{FreeTool, ToolContext};

/// The session's shell tool, if one is loaded.
pub(crate) fn shell_tool(api: &SessionApi) -> Option<Arc<dyn FreeTool>> {
    api.tools().iter().find(|t| t.effects().processes).cloned()
}

/// The context a runtime command runs with: `spec` its sandbox, `limit` its time limit,
/// `output_limit` the bytes of output it keeps, `cancel` what stops it.
pub(crate) fn context(
    api: &SessionApi,
    spec: waymark_sandbox::SandboxSpec,
    limit: Duration,
    output_limit: usize,
    cancel: tokio_util::sync::CancellationToken,
) -> ToolContext {
    ToolContext {
        workspace: api.workspace().to_path_buf(),
        session_dir: api.session_dir().to_path_buf(),
        artifacts: api.artifacts().to_path_buf(),
        cancel,
        output_limit,
        timeouts: waymark_tools::Timeouts {
            default: limit,
            max: limit,
            budget_left: None,
        },
        turn_id: 0,
        call_id: String::new(),
        sandbox: Some(spec),
        protected: api.sandbox().protected(&api.config().sandbox.read_allow),
        live: None,
        redactor: None,
        env: api.tool_env(),
    }
}

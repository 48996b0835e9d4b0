//! Tools whose set changes while a session runs: an MCP server's appear once it is ready,
//! change when it says its list changed, and a tool search loads some on demand. The engine
//! asks a [`ToolSource`] before each model call which of its tools to offer, and looks a
//! called name up in it when no fixed tool has that name.

use crate::SessionTool;
use std::sync::Arc;
use waymark_protocol::InteractionMode;

/// What a source offers the model now.
#[derive(Clone, Default)]
pub struct Offered {
    /// The tools offered, in order.
    pub tools: Vec<Arc<dyn SessionTool>>,
    /// Changes whenever `tools` would: the engine lists the tools again only then.
    pub generation: u64,
}

/// What a source is asked for its tools with.
pub struct OfferContext<'a> {
    pub session_id: &'a str,
    pub mode: InteractionMode,
    /// The model's context window in tokens (a source may offer a search instead of many
    /// tools that would fill too much of it).
    pub context_window: u64,
    pub config: &'a waymark_config::Config,
}

/// A changing set of tools, each run with the session's handle.
pub trait ToolSource: Send + Sync {
    /// The tools to offer now. Called before every model call, so it must be cheap (a lock
    /// and a copy of `Arc`s).
    fn offered(&self, cx: &OfferContext<'_>) -> Offered;
    /// A tool by the name the model called, offered or not: a tool search's match that was
    /// never offered is loaded by calling it. `None` when there is no such tool.
    fn find(&self, session_id: &str, name: &str) -> Option<Arc<dyn SessionTool>>;
    /// Every name this source may answer to, for the message about an unknown tool.
    fn names(&self, session_id: &str) -> Vec<String> {
        let _ = session_id;
        Vec::new()
    }
    /// Called when no tool answers to `name`: waits, within this source's own bound, for
    /// the part of it that would have it to be ready (an MCP server still starting, or
    /// starting again after it exited). True when it waited and the name may now be found.
    fn wait_for<'a>(
        &'a self,
        session_id: &'a str,
        name: &'a str,
    ) -> futures_util::future::BoxFuture<'a, bool> {
        let _ = (session_id, name);
        Box::pin(async { false })
    }
}

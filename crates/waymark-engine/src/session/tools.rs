//! The session's tools by name: the fixed ones and the tool sources' (MCP servers'), and the
//! lists offered to the model.

use std::sync::Arc;

/// A tool found by name: a free one, which needs nothing but its call, or one that works on
/// the session and runs with its handle. The one the guards decide on is the one that runs.
#[derive(Clone)]
pub(crate) enum FoundTool {
    Free(Arc<dyn crate::tools::Tool>),
    Session(Arc<dyn crate::extension::SessionTool>),
}

impl FoundTool {
    /// The tool as the guards see it.
    pub(crate) fn tool(&self) -> Arc<dyn crate::tools::Tool> {
        match self {
            FoundTool::Free(t) => t.clone(),
            FoundTool::Session(t) => t.clone().as_tool(),
        }
    }

    /// What it declares it may do.
    pub(crate) fn effects(&self) -> crate::tools::Effects {
        self.tool().effects()
    }
}

/// The tools offered in one interaction mode, as last listed.
pub(crate) struct ToolList {
    /// The tool sources' generations they were listed at.
    pub generations: Vec<u64>,
    pub specs: Vec<crate::provider::ToolSpec>,
    /// Their size in tokens.
    pub tokens: u64,
}

//! The session's tools by name: the fixed ones and the tool sources' (MCP servers'), and the
//! lists offered to the model.

use std::sync::Arc;

/// A tool found by name, and the session tool it runs as, if it is one.
pub(crate) type FoundTool = (
    Arc<dyn crate::tools::Tool>,
    Option<Arc<dyn crate::extension::SessionTool>>,
);

/// The tools offered in one interaction mode, as last listed.
pub(crate) struct ToolList {
    /// The tool sources' generations they were listed at.
    pub generations: Vec<u64>,
    pub specs: Vec<crate::provider::ToolSpec>,
    /// Their size in tokens.
    pub tokens: u64,
}

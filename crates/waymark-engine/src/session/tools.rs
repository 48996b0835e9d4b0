//! The session's tools by name: the fixed ones and the tool sources' (MCP servers'), and the
//! lists offered to the model.

use std::sync::Arc;

/// A tool found by name: a free one, which needs nothing but its call, or one that works on
/// the session and runs with its handle. The one the guards decide on is the one that runs.
#[derive(Clone)]
pub(crate) enum FoundTool {
    Free(Arc<dyn crate::tools::FreeTool>),
    Session(Arc<dyn crate::extension::SessionTool>),
}

impl FoundTool {
    /// The tool as the guards see it.
    pub(crate) fn tool(&self) -> Arc<dyn crate::tools::Tool> {
        match self {
            FoundTool::Free(t) => t.clone(),
            FoundTool::Session(t) => t.clone(),
        }
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            FoundTool::Free(t) => t.name(),
            FoundTool::Session(t) => t.name(),
        }
    }

    /// What it declares it may do.
    pub(crate) fn effects(&self) -> crate::tools::Effects {
        self.tool().effects()
    }
}

/// The session's own tools, the standard ones and the extensions', in the order they are
/// offered; the free ones are also kept as a registry, which extensions read (the shell a
/// goal's check runs with). Tool sources' tools are not here: they change while the session
/// runs.
pub(crate) struct FixedTools {
    list: Vec<FoundTool>,
    free: crate::tools::ToolRegistry,
}

impl FixedTools {
    /// The standard tools, before the extensions add theirs.
    pub(crate) fn standard() -> Self {
        let free = crate::tools::ToolRegistry::standard();
        let list = free.iter().cloned().map(FoundTool::Free).collect();
        FixedTools { list, free }
    }

    /// Adds a tool whose name no other one has (the caller refuses a second one).
    pub(crate) fn add(&mut self, tool: FoundTool) {
        if let FoundTool::Free(t) = &tool {
            self.free.register(t.clone());
        }
        self.list.push(tool);
    }

    pub(crate) fn get(&self, name: &str) -> Option<&FoundTool> {
        self.list.iter().find(|t| t.name() == name)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &FoundTool> {
        self.list.iter()
    }

    /// The free tools only.
    pub(crate) fn free(&self) -> &crate::tools::ToolRegistry {
        &self.free
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

//! A server's tool as a session tool: offered by its model name, guarded like any tool
//! (external, mutating unless read-only), and run through the hub with the session's Stop,
//! the server's timeout and the goal's time left.

use crate::hub::{ListedTool, McpHub};
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use waymark_extension::source::{Offered, ToolSource};
use waymark_extension::tools::{Tool, ToolContext, ToolError, ToolOutput};
use waymark_extension::{SessionApi, SessionTool};
use waymark_protocol::InteractionMode;

/// One tool of one server.
pub struct McpTool {
    hub: Weak<McpHub>,
    server: String,
    tool: ListedTool,
    timeout: Duration,
}

impl McpTool {
    pub fn server(&self) -> &str {
        &self.server
    }
    pub fn listed(&self) -> &ListedTool {
        &self.tool
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.tool.model_name
    }
    fn description(&self) -> &str {
        &self.tool.description
    }
    fn schema(&self) -> Value {
        self.tool.schema.clone()
    }
    fn is_mutating(&self) -> bool {
        !self.tool.read_only
    }
    fn is_external(&self) -> bool {
        true
    }
}

impl SessionTool for McpTool {
    fn handle_in<'a>(
        &'a self,
        _api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args = match args {
                Value::Object(m) => m,
                Value::Null => Default::default(),
                _ => {
                    return Err(ToolError::Model(format!(
                        "`{}` takes its arguments as a JSON object",
                        self.tool.model_name
                    )));
                }
            };
            let Some(hub) = self.hub.upgrade() else {
                return Err(ToolError::Model(format!(
                    "MCP server `{}`: the runtime is closing",
                    self.server
                )));
            };
            let r = hub
                .call(
                    &self.server,
                    &self.tool.tool_name,
                    args,
                    crate::hub::CallLimits {
                        timeout: self.timeout,
                        deadline: ctx.timeouts.budget_left,
                    },
                    &ctx.cancel,
                    None,
                )
                .await
                .map_err(|e| ToolError::Model(e.to_string()))?;
            if r.is_error {
                Err(ToolError::Model(r.text))
            } else {
                Ok(ToolOutput::text(r.text))
            }
        })
    }

    fn as_tool(self: Arc<Self>) -> Arc<dyn Tool> {
        self
    }
}

/// The hub's tools as a session's tool source, rebuilt only when the hub's generation moves.
pub struct McpSource {
    hub: Weak<McpHub>,
    cache: Mutex<(u64, Arc<Vec<Arc<McpTool>>>)>,
}

impl McpSource {
    pub fn new(hub: &Arc<McpHub>) -> McpSource {
        McpSource {
            hub: Arc::downgrade(hub),
            cache: Mutex::new((u64::MAX, Default::default())),
        }
    }

    fn all(&self) -> (u64, Arc<Vec<Arc<McpTool>>>) {
        let Some(hub) = self.hub.upgrade() else {
            return (0, Default::default());
        };
        let generation = hub.generation();
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.0 != generation {
            let tools = hub
                .tools()
                .into_iter()
                .flat_map(|(server, tools)| {
                    let timeout = Duration::from_millis(server.tool_timeout_ms());
                    let hub = self.hub.clone();
                    tools
                        .iter()
                        .map(move |t| {
                            Arc::new(McpTool {
                                hub: hub.clone(),
                                server: server.name.clone(),
                                tool: t.clone(),
                                timeout,
                            })
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
            *cache = (generation, Arc::new(tools));
        }
        (cache.0, cache.1.clone())
    }
}

impl ToolSource for McpSource {
    fn offered(&self, _session_id: &str, mode: InteractionMode) -> Offered {
        let (generation, all) = self.all();
        // Plan mode offers read-only tools alone (and its guard refuses the others).
        let tools = all
            .iter()
            .filter(|t| mode != InteractionMode::Plan || t.tool.read_only)
            .map(|t| t.clone() as Arc<dyn SessionTool>)
            .collect();
        Offered { tools, generation }
    }

    fn find(&self, _session_id: &str, name: &str) -> Option<Arc<dyn SessionTool>> {
        let (_, all) = self.all();
        all.iter()
            .find(|t| t.tool.model_name == name)
            .map(|t| t.clone() as Arc<dyn SessionTool>)
    }

    fn names(&self, _session_id: &str) -> Vec<String> {
        let (_, all) = self.all();
        all.iter().map(|t| t.tool.model_name.clone()).collect()
    }
}

//! The servers' resources as two read-only tools, offered when a ready server has any:
//! `list_mcp_resources` and `read_mcp_resource`.

use crate::hub::McpHub;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::{Arc, Weak};
use waymark_extension::tools::{Tool, ToolContext, ToolError, ToolOutput};
use waymark_extension::{SessionApi, SessionTool};

pub const LIST: &str = "list_mcp_resources";
pub const READ: &str = "read_mcp_resource";

/// Which of the two tools.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    List,
    Read,
}

pub struct ResourceTool {
    pub(crate) hub: Weak<McpHub>,
    pub(crate) kind: Kind,
}

impl Tool for ResourceTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::List => LIST,
            Kind::Read => READ,
        }
    }
    fn description(&self) -> &str {
        match self.kind {
            Kind::List => {
                "Lists the resources (files, records, documents) the connected MCP servers offer, with their URIs. Give `server` to list one server's."
            }
            Kind::Read => {
                "Reads one resource of an MCP server by its URI (from list_mcp_resources)."
            }
        }
    }
    fn schema(&self) -> Value {
        match self.kind {
            Kind::List => json!({
                "type": "object",
                "properties": {"server": {"type": "string", "description": "Only this server's resources."}}
            }),
            Kind::Read => json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The server that offers it."},
                    "uri": {"type": "string", "description": "The resource's URI."}
                },
                "required": ["server", "uri"]
            }),
        }
    }
    fn is_mutating(&self) -> bool {
        false
    }
    fn is_external(&self) -> bool {
        true
    }
}

impl SessionTool for ResourceTool {
    fn handle_in<'a>(
        &'a self,
        _api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(hub) = self.hub.upgrade() else {
                return Err(ToolError::Model("the runtime is closing".into()));
            };
            let server = args.get("server").and_then(Value::as_str);
            let text = match self.kind {
                Kind::List => hub.list_resources(server, &ctx.cancel).await,
                Kind::Read => {
                    let (Some(server), Some(uri)) =
                        (server, args.get("uri").and_then(Value::as_str))
                    else {
                        return Err(ToolError::Model(format!(
                            "`{READ}` takes `server` and `uri`"
                        )));
                    };
                    hub.read_resource(server, uri, &ctx.cancel).await
                }
            }
            .map_err(|e| ToolError::Model(e.to_string()))?;
            Ok(ToolOutput::text(text))
        })
    }

    fn as_tool(self: Arc<Self>) -> Arc<dyn Tool> {
        self
    }
}

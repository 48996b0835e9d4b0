//! The servers' resources as two read-only tools, offered when a ready server has any:
//! `list_mcp_resources` and `read_mcp_resource`.

use crate::connect::Connection;
use crate::hub::{McpHub, Phase, Server, lock};
use crate::{McpError, seconds};
use futures_util::future::BoxFuture;
use rmcp::model::PaginatedRequestParams;
use rmcp::service::ServiceError;
use serde_json::{Value, json};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use waymark_extension::tools::{Effects, Tool, ToolContext, ToolError, ToolOutput};
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
    fn effects(&self) -> Effects {
        Effects {
            writes: false,
            external: true,
            ..Effects::READS
        }
    }
}

impl SessionTool for ResourceTool {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(hub) = self.hub.upgrade() else {
                return Err(ToolError::Model("the runtime is closing".into()));
            };
            let sid = api.id();
            let server = args.get("server").and_then(Value::as_str);
            let text = match self.kind {
                Kind::List => hub.list_resources(sid, server, &ctx.cancel).await,
                Kind::Read => {
                    let (Some(server), Some(uri)) =
                        (server, args.get("uri").and_then(Value::as_str))
                    else {
                        return Err(ToolError::Model(format!(
                            "`{READ}` takes `server` and `uri`"
                        )));
                    };
                    hub.read_resource(sid, server, uri, &ctx.cancel).await
                }
            }
            .map_err(|e| ToolError::Model(e.to_string()))?;
            Ok(ToolOutput::text(text))
        })
    }
}

/// Whether the resource tools of `session_id` reach `s`: a server of the user's settings, or
/// one the session's own editor brought. A project's server is not (a resource read is a
/// free-form request to it that no permission rule can judge, and the tools run unasked); its
/// tools are the way to it. Another session's editor server is no server of this one.
fn readable(hub: &McpHub, s: &Server, session_id: &str) -> bool {
    s.scope.is_none() && (s.editor.is_none() || hub.serves_server(s, session_id))
}

/// The most resources listed per server.
pub const MAX_RESOURCES: usize = 500;

impl McpHub {
    /// Whether a ready server that serves the session offers resources.
    pub fn has_resources(&self, session_id: &str) -> bool {
        self.list()
            .iter()
            .filter(|s| readable(self, s, session_id))
            .any(|s| {
                let st = lock(&s.state);
                st.phase == Phase::Ready && st.conn.as_ref().is_some_and(|c| c.has_resources())
            })
    }

    /// A ready server's live connection, for a request other than a tool call.
    async fn request_conn(
        &self,
        session_id: &str,
        server: &str,
        cancel: &CancellationToken,
    ) -> Result<(Arc<Server>, Arc<Connection>), McpError> {
        // Another folder's project server is no server of this session's.
        let Some(s) = self
            .server(server)
            .filter(|s| readable(self, s, session_id))
        else {
            let servers = self.list();
            let names: Vec<&str> = servers
                .iter()
                .filter(|s| readable(self, s, session_id))
                .map(|s| s.name.as_str())
                .collect();
            return Err(McpError::new(
                server,
                format!("no such server; the servers are: {}", names.join(", ")),
            ));
        };
        let conn = tokio::select! {
            c = self.ensure(&s) => c?,
            _ = cancel.cancelled() => return Err(McpError::new(server, "stopped")),
        };
        Ok((s, conn))
    }

    /// The resources of `server`, or of every ready server that has any, one a line.
    pub async fn list_resources(
        &self,
        session_id: &str,
        server: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<String, McpError> {
        let names: Vec<String> = match server {
            Some(n) => vec![n.to_string()],
            None => self
                .list()
                .iter()
                .filter(|s| readable(self, s, session_id))
                .filter(|s| {
                    let st = lock(&s.state);
                    st.conn.as_ref().is_some_and(|c| c.has_resources())
                })
                .map(|s| s.name.clone())
                .collect(),
        };
        let mut out = String::new();
        for name in names {
            let (s, conn) = self.request_conn(session_id, &name, cancel).await?;
            let timeout = Duration::from_millis(s.config.tool_timeout_ms);
            let peer = conn.service.peer().clone();
            let listing = async {
                let mut all = Vec::new();
                let mut cursor = None;
                loop {
                    let page = peer
                        .list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                        .await?;
                    all.extend(page.resources);
                    cursor = page.next_cursor;
                    if cursor.is_none() || all.len() >= MAX_RESOURCES {
                        return Ok::<_, ServiceError>(all);
                    }
                }
            };
            let listed = tokio::select! {
                r = tokio::time::timeout(timeout, listing) => r,
                _ = cancel.cancelled() => return Err(McpError::new(&name, "stopped by the user")),
            }
            .map_err(|_| {
                McpError::new(
                    &name,
                    format!("no resource list within {}", seconds(timeout)),
                )
            })?
            .map_err(|e| McpError::new(&name, format!("listing resources failed: {e}")))?;
            for r in listed.iter().take(MAX_RESOURCES) {
                out.push_str(&format!("{name}: {} — {}", r.uri, r.name));
                if let Some(m) = &r.mime_type {
                    out.push_str(&format!(" ({m})"));
                }
                if let Some(d) = &r.description {
                    out.push_str(&format!(": {}", d.lines().next().unwrap_or("")));
                }
                out.push('\n');
            }
        }
        if out.is_empty() {
            return Ok("No MCP server offers resources.".into());
        }
        Ok(out.trim_end().to_string())
    }

    /// Resource `uri` of `server`: text as is, binary content in one line.
    pub async fn read_resource(
        &self,
        session_id: &str,
        server: &str,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<String, McpError> {
        let (s, conn) = self.request_conn(session_id, server, cancel).await?;
        let timeout = Duration::from_millis(s.config.tool_timeout_ms);
        let peer = conn.service.peer().clone();
        let read = peer.read_resource(rmcp::model::ReadResourceRequestParams::new(uri));
        let r = tokio::select! {
            r = tokio::time::timeout(timeout, read) => r,
            _ = cancel.cancelled() => return Err(McpError::new(server, "stopped by the user")),
        }
        .map_err(|_| McpError::new(server, format!("no answer within {}", seconds(timeout))))?
        .map_err(|e| McpError::new(server, format!("reading {uri} failed: {e}")))?;
        let parts: Vec<String> = r
            .contents
            .iter()
            .map(crate::result::resource_text)
            .collect();
        Ok(if parts.is_empty() {
            format!("{uri} is empty")
        } else {
            parts.join("\n")
        })
    }
}

//! MCP servers as tool sources for Waymark sessions, on the official SDK (`rmcp`).
//!
//! - [`connect`]: a stdio server as the leader of its own process group, or a Streamable
//!   HTTP server, offered the newest protocol version that still has an `initialize`
//!   handshake, within its start-up time, every message bounded in size.
//! - [`hub`]: the runtime's servers, one connection each for all its sessions, started in
//!   the background, restarted after they exit, listed again when their tools change.
//! - [`tool`]: their tools as session tools (`mcp__<server>__<tool>`, [`names`]), each call
//!   through the session's guard chain, its result shaped for the model ([`result`]).
//! - [`elicit`]: a form a server sends during a call, asked as a questionnaire.
//! - [`extension`]: the extension that plugs them into sessions.

mod call;
pub mod catalog;
pub mod connect;
pub mod editors;
pub mod elicit;
mod error;
pub mod extension;
pub mod handler;
pub mod hub;
/// Images are checked and fitted where every tool's are (`waymark-tools`, through the extension API).
pub use waymark_extension::tools::image;
pub mod listing;
pub mod names;
pub mod project;
pub mod prompts;
pub mod reap;
pub mod resources;
pub mod result;
pub mod search;
pub mod tool;

pub use connect::install_tls_provider;
pub use error::McpError;
pub(crate) use error::seconds;
pub use extension::McpExtension;
pub use hub::McpHub;

use std::time::Duration;
use waymark_config::mcp::McpTransport;

/// A tool as a server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTool {
    pub name: String,
    pub description: String,
    pub read_only: bool,
}

/// Connects to the server `transport` describes, within `startup`, lists its tools and
/// disconnects (a stdio server is killed with its process group). A stdio server gets its
/// own `env` with this process's `PATH` and `HOME` only.
pub async fn list_tools(
    server: &str,
    transport: &McpTransport,
    startup: Duration,
) -> Result<Vec<ServerTool>, McpError> {
    let mut transport = transport.clone();
    if let McpTransport::Stdio { env, .. } = &mut transport {
        for k in ["PATH", "HOME"] {
            if let Ok(v) = std::env::var(k) {
                env.entry(k.to_string()).or_insert(v);
            }
        }
    }
    let conn = connect::connect(
        server,
        &transport,
        startup,
        handler::Handler::default(),
        false,
    )
    .await?;
    let tools = tokio::time::timeout(startup, catalog::list_raw(server, &conn))
        .await
        .map_err(|_| McpError::new(server, "no tool list in time"))??;
    Ok(tools
        .tools
        .into_iter()
        .map(|t| ServerTool {
            read_only: t
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            description: t.description.map(|d| d.to_string()).unwrap_or_default(),
            name: t.name.to_string(),
        })
        .collect())
}

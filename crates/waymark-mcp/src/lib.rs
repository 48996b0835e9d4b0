//! MCP servers as tool sources for Waymark sessions, on the official SDK (`rmcp`). This part
//! starts a stdio server, offers it the newest protocol version that still has an
//! `initialize` handshake, within the server's start-up time, and lists its tools.

use rmcp::ServiceExt as _;
use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams, ProtocolVersion};
use std::time::Duration;
use waymark_protocol::mcp::McpTransport;

/// Why a server could not be used; names the server.
#[derive(Debug, thiserror::Error)]
#[error("MCP server `{server}`: {message}")]
pub struct McpError {
    pub server: String,
    pub message: String,
}

/// A tool as a server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTool {
    pub name: String,
    pub description: String,
    pub read_only: bool,
}

/// What Waymark says of itself in `initialize`.
fn client_info() -> InitializeRequestParams {
    InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("waymark", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// Starts the stdio server `transport` describes, within `startup`, and lists its tools.
pub async fn list_tools(
    server: &str,
    transport: &McpTransport,
    startup: Duration,
) -> Result<Vec<ServerTool>, McpError> {
    let fail = |message: String| McpError {
        server: server.to_string(),
        message,
    };
    let McpTransport::Stdio {
        command,
        args,
        env,
        cwd,
    } = transport
    else {
        return Err(fail("only stdio servers are started so far".into()));
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    // The server leads a process group of its own, killed whole when it is dropped: nothing
    // it started outlives it. Its stderr is not the app's (a later step logs it).
    let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
    wrapped
        .wrap(process_wrap::tokio::ProcessGroup::leader())
        .wrap(process_wrap::tokio::KillOnDrop);
    let (child, _) = rmcp::transport::TokioChildProcess::builder(wrapped)
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| fail(format!("cannot start `{command}`: {e}")))?;
    let running = tokio::time::timeout(startup, client_info().serve(child))
        .await
        .map_err(|_| {
            fail(format!(
                "no answer to `initialize` within {} s",
                startup.as_secs()
            ))
        })?
        .map_err(|e| fail(format!("`initialize` failed: {e}")))?;
    let tools = tokio::time::timeout(startup, running.list_all_tools())
        .await
        .map_err(|_| fail("no tool list in time".into()))?
        .map_err(|e| fail(format!("listing tools failed: {e}")))?;
    let _ = running.cancel().await;
    Ok(tools
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

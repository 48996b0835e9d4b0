//! The client the official MCP conformance suite drives (`conformance client --command …`):
//! Waymark's own connection code against the suite's server at the URL given last. It
//! starts the connection, lists the tools, calls each with arguments made from its schema,
//! answers requests for input with the form's defaults, and closes. Exit code 0 when every
//! step worked.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use waymark_config::mcp::McpTransport;
use waymark_mcp::McpError;
use waymark_mcp::connect::connect;
use waymark_mcp::handler::{ElicitAnswer, Handler, form_defaults};

/// Arguments a tool's schema asks for: numbers 1, 2, 3…, strings "test", booleans true.
fn arguments(schema: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    let Some(props) = schema.get("properties").and_then(|p| p.as_object()) else {
        return out;
    };
    for (n, (name, field)) in props.iter().enumerate() {
        let v = match field.get("type").and_then(|t| t.as_str()) {
            Some("number" | "integer") => serde_json::json!(n + 1),
            Some("boolean") => serde_json::json!(true),
            Some("string") => serde_json::json!("test"),
            _ => continue,
        };
        out.insert(name.clone(), v);
    }
    out
}

async fn run(url: &str) -> Result<(), McpError> {
    let fail = |m: String| McpError::new("conformance", m);
    let mut handler = Handler::default();
    handler.elicitor = Some(Arc::new(|e: waymark_mcp::handler::Elicitation| {
        Box::pin(async move { ElicitAnswer::Accept(form_defaults(&e.schema)) })
    }));
    let transport = McpTransport::Http {
        url: url.to_string(),
        headers: Default::default(),
    };
    let conn = connect(
        "conformance",
        &transport,
        Duration::from_secs(20),
        handler,
        false,
    )
    .await?;
    let peer = conn.service.peer().clone();
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| fail(format!("tools/list: {e}")))?;
    for t in tools {
        let schema = serde_json::Value::Object(t.input_schema.as_ref().clone());
        let params = rmcp::model::CallToolRequestParams::new(t.name.to_string())
            .with_arguments(arguments(&schema));
        let r = tokio::time::timeout(Duration::from_secs(20), peer.call_tool(params))
            .await
            .map_err(|_| fail(format!("tools/call {}: no answer", t.name)))?
            .map_err(|e| fail(format!("tools/call {}: {e}", t.name)))?;
        println!("{}: {}", t.name, waymark_mcp::result::shape(&r).text);
    }
    let _ = conn.service.cancel().await;
    Ok(())
}

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: waymark-mcp-conformance SERVER_URL");
        return ExitCode::from(2);
    };
    waymark_mcp::install_tls_provider();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(&url)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

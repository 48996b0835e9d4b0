//! What a server offers, as listed: its tools (named for the model, read-only as the user
//! or the server says, left out when disabled or unfit) and its prompts.

use crate::McpError;
use crate::connect::Connection;
use rmcp::model::PaginatedRequestParams;
use waymark_config::mcp::McpServerConfig;
use waymark_protocol::display::cut_at;
use waymark_protocol::mcp_view::{McpPromptArgument, McpPromptView};

/// The most tools one server may list (pages are followed up to this).
pub const MAX_TOOLS: usize = 2000;
/// The most pages of a tool list followed.
pub const MAX_PAGES: usize = 100;
/// The longest tool description kept, in bytes (a longer one is cut).
pub const MAX_DESCRIPTION: usize = 4096;
/// The most bytes of names, descriptions and schemas kept of one server's tools.
pub const MAX_LISTING_BYTES: usize = 8 * 1024 * 1024;

/// One tool of a server, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// The server's name for it.
    pub tool_name: String,
    /// The name the model calls it by (`mcp__<server>__<tool>`).
    pub model_name: String,
    pub description: String,
    /// The input schema, fit for every provider.
    pub schema: serde_json::Value,
    /// The user vouches for it (`read_only_tools`) or the server marks it `readOnlyHint`.
    pub read_only: bool,
}

/// A server's tools: pages followed up to [`MAX_TOOLS`], each tool named for the model,
/// read-only as the user or the server says, and left out when disabled or unfit.
pub(crate) async fn list(
    server: &str,
    config: &McpServerConfig,
    project: bool,
    conn: &Connection,
) -> Result<(Vec<ListedTool>, Vec<(String, String)>), McpError> {
    let Listing {
        tools: mut raw,
        dropped: mut skipped,
    } = list_raw(server, conn).await?;
    let mut tools: Vec<ListedTool> = Vec::new();
    if raw.len() > MAX_TOOLS {
        skipped.push((
            format!("{} more", raw.len() - MAX_TOOLS),
            format!("a server may list at most {MAX_TOOLS} tools"),
        ));
        raw.truncate(MAX_TOOLS);
    }
    for t in raw {
        let name = t.name.to_string();
        if config.disabled_tools.contains(&name) {
            skipped.push((name, "listed in disabled_tools".into()));
            continue;
        }
        let schema = match crate::names::input_schema(&t.input_schema) {
            Ok(s) => s,
            Err(why) => {
                tracing::warn!(server = %server, tool = %name, "MCP tool left out: {why}");
                skipped.push((name, why.to_string()));
                continue;
            }
        };
        let model_name = crate::names::model_name(server, &name);
        if tools.iter().any(|o| o.model_name == model_name) {
            skipped.push((name, "the server lists this name twice".into()));
            continue;
        }
        // A project's server is not believed about its own tools: none is read-only.
        let read_only = config.read_only_tools.contains(&name)
            || (!project
                && t.annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false));
        tools.push(ListedTool {
            model_name,
            description: t.description.map(|d| d.to_string()).unwrap_or_default(),
            schema,
            read_only,
            tool_name: name,
        });
    }
    Ok((tools, skipped))
}

/// What a listing kept: the tools, and those left out as they arrived, with why.
pub(crate) struct Listing {
    pub tools: Vec<rmcp::model::Tool>,
    pub dropped: Vec<(String, String)>,
}

/// The longest tool name kept (a longer one is left out).
const MAX_TOOL_NAME: usize = 256;

/// The tools a server lists, pages followed up to one past [`MAX_TOOLS`], each bounded as it
/// arrives: fields Waymark does not use cleared, the description cut, and a tool whose name
/// or schema is too big left out (kept only as a line saying so).
pub(crate) async fn list_raw(server: &str, conn: &Connection) -> Result<Listing, McpError> {
    let peer = conn.service.peer();
    let mut out = Listing {
        tools: Vec::new(),
        dropped: Vec::new(),
    };
    let mut cursor = None;
    let mut kept = 0usize;
    for _ in 0..MAX_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|e| McpError::new(server, format!("listing its tools failed: {e}")))?;
        for mut t in page.tools {
            t.output_schema = None;
            t.icons = None;
            t.meta = None;
            t.title = None;
            if let Some(a) = t.annotations.as_mut() {
                a.title = None;
            }
            if t.name.len() > MAX_TOOL_NAME {
                let mut end = 60;
                while !t.name.is_char_boundary(end) {
                    end -= 1;
                }
                out.dropped.push((
                    format!("{}…", &t.name[..end]),
                    format!("its name is over {MAX_TOOL_NAME} bytes"),
                ));
                continue;
            }
            if let Some(d) = &t.description
                && d.len() > MAX_DESCRIPTION
            {
                t.description = Some(cut_at(d.to_string(), MAX_DESCRIPTION).into());
            }
            let schema =
                serde_json::to_vec(t.input_schema.as_ref()).map_or(usize::MAX, |v| v.len());
            if schema > crate::names::MAX_SCHEMA_BYTES {
                out.dropped.push((
                    t.name.to_string(),
                    format!(
                        "its input schema is {schema} bytes, over the {} offered",
                        crate::names::MAX_SCHEMA_BYTES
                    ),
                ));
                continue;
            }
            kept = kept.saturating_add(
                t.name.len() + t.description.as_ref().map_or(0, |d| d.len()) + schema,
            );
            out.tools.push(t);
            if out.tools.len() > MAX_TOOLS || kept > MAX_LISTING_BYTES {
                return Ok(out);
            }
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(out);
        }
    }
    Ok(out)
}

/// The most prompts one server may list (more are left out).
pub const MAX_PROMPTS: usize = 500;
/// The most arguments one prompt may declare (more are left out).
const MAX_PROMPT_ARGUMENTS: usize = 32;
/// The longest argument description kept, in bytes (a longer one is cut).
const MAX_ARGUMENT_DESCRIPTION: usize = 512;
/// The most bytes of names and descriptions kept of one server's prompts (the rest are left
/// out).
pub const MAX_PROMPT_LISTING_BYTES: usize = 1024 * 1024;

/// A server's prompts, when it says it has any, each named as the command
/// `/mcp__<server>__<prompt>` (pages followed up to [`MAX_PROMPTS`]). Prompts are an extra:
/// a listing that fails leaves none, with a warning, and the server stays ready.
pub(crate) async fn list_prompts(server: &str, conn: &Connection) -> Vec<McpPromptView> {
    let peer = conn.service.peer();
    if peer
        .peer_info()
        .is_none_or(|i| i.capabilities.prompts.is_none())
    {
        return Vec::new();
    }
    let mut out: Vec<McpPromptView> = Vec::new();
    let mut kept = 0usize;
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let page = match peer
            .list_prompts(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
        {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(server = %server, "listing its prompts failed: {e}");
                return out;
            }
        };
        for p in page.prompts {
            if p.name.len() > MAX_TOOL_NAME || out.len() >= MAX_PROMPTS {
                continue;
            }
            let command = crate::names::model_name(server, &p.name);
            if out.iter().any(|o| o.command == command) {
                continue;
            }
            let arguments = p
                .arguments
                .unwrap_or_default()
                .into_iter()
                .filter(|a| a.name.len() <= MAX_TOOL_NAME)
                .take(MAX_PROMPT_ARGUMENTS)
                .map(|a| McpPromptArgument {
                    name: a.name,
                    description: cut_at(
                        a.description.unwrap_or_default(),
                        MAX_ARGUMENT_DESCRIPTION,
                    ),
                    required: a.required.unwrap_or(false),
                })
                .collect();
            let view = McpPromptView {
                name: p.name,
                command,
                description: cut_at(p.description.unwrap_or_default(), MAX_DESCRIPTION),
                arguments,
            };
            kept += view.name.len()
                + view.command.len()
                + view.description.len()
                + view
                    .arguments
                    .iter()
                    .map(|a| a.name.len() + a.description.len())
                    .sum::<usize>();
            if kept > MAX_PROMPT_LISTING_BYTES {
                tracing::warn!(server = %server, "prompts left out: the listing is over {MAX_PROMPT_LISTING_BYTES} bytes");
                return out;
            }
            out.push(view);
        }
        cursor = page.next_cursor;
        if cursor.is_none() || out.len() >= MAX_PROMPTS {
            break;
        }
    }
    out
}

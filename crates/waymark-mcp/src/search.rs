//! `tool_search`: what the model gets instead of many servers' tools when their schemas would
//! fill too much of its context window. It ranks the tools by the query's words in their names
//! and descriptions; the matches are offered from the next model call on, for the rest of the
//! session.

use crate::hub::{ListedTool, McpHub};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};
use waymark_extension::tools::{Effects, Tool, ToolContext, ToolError, ToolOutput};
use waymark_extension::{SessionApi, SessionTool};

pub const TOOL_SEARCH: &str = "tool_search";

/// The most tools one search loads.
pub const MAX_MATCHES: usize = 8;

pub struct ToolSearch {
    hub: Weak<McpHub>,
    loaded: Arc<Mutex<HashMap<String, BTreeSet<String>>>>,
}

impl ToolSearch {
    pub(crate) fn new(
        hub: Weak<McpHub>,
        loaded: Arc<Mutex<HashMap<String, BTreeSet<String>>>>,
    ) -> ToolSearch {
        ToolSearch { hub, loaded }
    }
}

/// The words of `s`, lower case, split at anything but letters and digits.
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The best matches of `query` among `tools`: a word of the query in a tool's name counts
/// three, in its description one (a word that starts one counts too); ties go by name.
pub fn rank<'t>(query: &str, tools: &'t [ListedTool], max: usize) -> Vec<&'t ListedTool> {
    let q = words(query);
    let mut scored: Vec<(u32, &ListedTool)> = tools
        .iter()
        .map(|t| {
            let name = words(&t.model_name);
            let desc = words(&t.description);
            let hits =
                |ws: &[String], w: &String| ws.iter().any(|x| x == w || x.starts_with(w.as_str()));
            let score = q
                .iter()
                .map(|w| 3 * u32::from(hits(&name, w)) + u32::from(hits(&desc, w)))
                .sum();
            (score, t)
        })
        .filter(|(s, _)| *s > 0)
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.model_name.cmp(&b.1.model_name))
    });
    scored.into_iter().take(max).map(|(_, t)| t).collect()
}

impl Tool for ToolSearch {
    fn name(&self) -> &str {
        TOOL_SEARCH
    }
    fn description(&self) -> &str {
        "Finds tools of the connected MCP servers by what they do. Give a few words (e.g. `create github issue`); the best matches are returned with their descriptions and become callable from your next step on. Search again with other words when nothing fits."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What the tool should do, in a few words."}},
            "required": ["query"]
        })
    }
    fn effects(&self) -> Effects {
        Effects::READS
    }
}

impl SessionTool for ToolSearch {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        _ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(query) = args.get("query").and_then(Value::as_str) else {
                return Err(ToolError::Model(
                    "`tool_search` takes a `query`: a few words saying what the tool should do"
                        .into(),
                ));
            };
            let Some(hub) = self.hub.upgrade() else {
                return Err(ToolError::Model("the runtime is closing".into()));
            };
            let tools = hub_tools(&hub, api.id());
            let found = rank(query, &tools, MAX_MATCHES);
            if found.is_empty() {
                return Ok(ToolOutput::text(format!(
                    "No tool matches `{}` among the {} tools of the MCP servers; try other words.",
                    waymark_protocol::display::escape_line(query),
                    tools.len()
                )));
            }
            {
                let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
                let set = loaded.entry(api.id().to_string()).or_default();
                for t in &found {
                    set.insert(t.model_name.clone());
                }
            }
            let mut out = format!(
                "{} tools found; they can be called from your next step on:\n",
                found.len()
            );
            for t in found {
                out.push_str(&format!(
                    "- {}{}: {}\n",
                    t.model_name,
                    if t.read_only { " (read-only)" } else { "" },
                    t.description.lines().next().unwrap_or("")
                ));
            }
            Ok(ToolOutput::text(out.trim_end().to_string()))
        })
    }
}

/// The tools a server-side search ranks: every ready server's.
fn hub_tools(hub: &McpHub, session_id: &str) -> Vec<ListedTool> {
    hub.tools()
        .into_iter()
        .filter(|(s, _)| hub.serves_server(s, session_id))
        .flat_map(|(_, tools)| tools.as_ref().clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ListedTool {
        ListedTool {
            tool_name: name.into(),
            model_name: format!("mcp__s__{name}"),
            description: description.into(),
            schema: json!({"type": "object"}),
            read_only: true,
        }
    }

    #[test]
    fn names_count_more_than_descriptions_and_nothing_matches_nothing() {
        let tools = vec![
            tool("create_issue", "Opens a new issue in a repository"),
            tool("list_issues", "Lists the issues of a repository"),
            tool("send_mail", "Sends an e-mail about an issue"),
        ];
        let r = rank("create issue", &tools, 8);
        assert_eq!(r[0].tool_name, "create_issue");
        assert_eq!(r.len(), 3, "every tool mentioning issue matches");
        assert_eq!(rank("mail", &tools, 8)[0].tool_name, "send_mail");
        assert!(rank("weather", &tools, 8).is_empty());
        assert!(rank("", &tools, 8).is_empty());
        assert_eq!(rank("issue", &tools, 1).len(), 1);
    }
}

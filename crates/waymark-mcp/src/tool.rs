//! A server's tool as a session tool: offered by its model name, guarded like any tool
//! (external, mutating unless read-only), and run through the hub with the session's Stop,
//! the server's timeout and the goal's time left.

use crate::hub::{ListedTool, McpHub};
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use waymark_extension::source::{OfferContext, Offered, ToolSource};
use waymark_extension::tools::{Effects, Tool, ToolContext, ToolError, ToolOutput};
use waymark_extension::{SessionApi, SessionTool};
use waymark_protocol::InteractionMode;

/// One tool of one server.
pub struct McpTool {
    hub: Weak<McpHub>,
    server: String,
    tool: ListedTool,
    timeout: Duration,
    /// The project whose sessions alone it serves (a `.mcp.json` server).
    scope: Option<std::path::PathBuf>,
    /// Listed from a server an editor brought (it serves the sessions that brought it).
    editor: bool,
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
    fn effects(&self) -> Effects {
        Effects {
            writes: !self.tool.read_only,
            external: true,
            ..Effects::READS
        }
    }
}

impl SessionTool for McpTool {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
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
            // The name may belong to another server by now (its settings changed): only the
            // server this tool was listed from runs it.
            if hub.server(&self.server).is_none_or(|s| {
                s.scope != self.scope
                    || s.editor.is_some() != self.editor
                    || !hub.serves_server(&s, api.id())
            }) {
                return Err(ToolError::Model(format!(
                    "MCP server `{}` changed since this tool was listed; list the tools again",
                    self.server
                )));
            }
            // A form the server sends during the call is asked in this session, and
            // withdrawn when the call ends.
            let done = tokio_util::sync::CancellationToken::new();
            let _done = done.clone().drop_guard();
            let asker = crate::elicit::asker(
                api,
                crate::elicit::CallSite {
                    server: self.server.clone(),
                    tool: self.tool.model_name.clone(),
                    call_id: ctx.call_id.clone(),
                    turn_id: ctx.turn_id,
                    done,
                    asked: Default::default(),
                },
            );
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
                    crate::hub::CallHooks {
                        progress: Some(progress_events(api, ctx)),
                        asker: Some(asker),
                    },
                )
                .await
                .map_err(|e| ToolError::Model(e.to_string()))?;
            if r.is_error {
                Err(ToolError::Model(r.text))
            } else {
                Ok(ToolOutput {
                    images: r.images,
                    ..ToolOutput::text(r.text)
                })
            }
        })
    }
}

/// The shortest gap between two progress events of one call; a report that ends the work
/// always goes out. A server that floods reports costs the front ends nothing more.
const PROGRESS_GAP: Duration = Duration::from_millis(100);

/// Where a call's progress goes: the session's event stream, as `tool.progress`.
fn progress_events(api: &SessionApi, ctx: &ToolContext) -> crate::handler::ProgressSink {
    let api = api.clone();
    let turn_id = ctx.turn_id;
    let call_id = ctx.call_id.clone();
    // When the last report went out, and whether a finishing one has (only one may skip
    // the gap, however many the server sends).
    let last: Mutex<(Option<std::time::Instant>, bool)> = Mutex::new((None, false));
    Arc::new(move |p: crate::handler::Progress| {
        let done = p.total.is_some_and(|t| p.progress >= t);
        {
            let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
            let now = std::time::Instant::now();
            let early = last
                .0
                .is_some_and(|at| now.duration_since(at) < PROGRESS_GAP);
            // Early reports are dropped, except the first that says the work is done.
            let first_done = done && !last.1;
            if early && !first_done {
                return;
            }
            last.1 |= done;
            last.0 = Some(now);
        }
        api.transient(waymark_protocol::EventKind::ToolProgress {
            turn_id,
            call_id: call_id.clone(),
            progress: p.progress,
            total: p.total,
            message: p.message,
        });
    })
}

/// The hub's tools as a session's tool source, rebuilt only when the hub's generation moves.
/// When their schemas would take more than `mcp.tool_search_percent` of the model's context
/// window, the model is offered `tool_search` and the tools it has found (or called) instead.
pub struct McpSource {
    hub: Weak<McpHub>,
    /// The hub's tools as session tools, and the tokens their schemas take.
    cache: Mutex<Cached>,
    /// Per session: the tools a search found or a call named (loaded for the rest of the
    /// session in this process).
    loaded: Arc<Mutex<HashMap<String, BTreeSet<String>>>>,
    search: Arc<crate::search::ToolSearch>,
    resources: [Arc<crate::resources::ResourceTool>; 2],
}

struct Cached {
    generation: u64,
    tools: Arc<Vec<Arc<McpTool>>>,
    tokens: u64,
}

impl McpSource {
    pub fn new(hub: &Arc<McpHub>) -> McpSource {
        let loaded: Arc<Mutex<HashMap<String, BTreeSet<String>>>> = Default::default();
        McpSource {
            hub: Arc::downgrade(hub),
            cache: Mutex::new(Cached {
                generation: u64::MAX,
                tools: Default::default(),
                tokens: 0,
            }),
            search: Arc::new(crate::search::ToolSearch::new(
                Arc::downgrade(hub),
                loaded.clone(),
            )),
            loaded,
            resources: [crate::resources::Kind::List, crate::resources::Kind::Read].map(|kind| {
                Arc::new(crate::resources::ResourceTool {
                    hub: Arc::downgrade(hub),
                    kind,
                })
            }),
        }
    }

    /// The resource tools, when a ready server has resources.
    fn resource_tools(&self, session_id: &str) -> Vec<Arc<dyn SessionTool>> {
        match self.hub.upgrade() {
            Some(hub) if hub.has_resources(session_id) => self
                .resources
                .iter()
                .map(|t| t.clone() as Arc<dyn SessionTool>)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Every ready server's tools, and the tokens their schemas take.
    fn all(&self) -> (u64, Arc<Vec<Arc<McpTool>>>, u64) {
        let Some(hub) = self.hub.upgrade() else {
            return (0, Default::default(), 0);
        };
        let generation = hub.generation();
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.generation != generation {
            let mut seen = std::collections::HashSet::new();
            let tools: Vec<Arc<McpTool>> = hub
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
                                scope: server.scope.clone(),
                                editor: server.editor.is_some(),
                            })
                        })
                        .collect::<Vec<_>>()
                })
                // Two servers' tools never share a name: the first keeps it.
                .filter(|t| {
                    let fresh = seen.insert(t.tool.model_name.clone());
                    if !fresh {
                        tracing::warn!(server = %t.server, tool = %t.tool.model_name, "MCP tool left out: another server's tool has its name");
                    }
                    fresh
                })
                .collect();
            let specs: Vec<_> = tools
                .iter()
                .map(|t| waymark_extension::provider::ToolSpec {
                    name: t.tool.model_name.clone(),
                    description: t.tool.description.clone(),
                    parameters: t.tool.schema.clone(),
                })
                .collect();
            *cache = Cached {
                generation,
                tokens: waymark_extension::provider::tools_tokens(&specs),
                tools: Arc::new(tools),
            };
        }
        (cache.generation, cache.tools.clone(), cache.tokens)
    }

    /// Whether `t`'s server serves the session (a project's server: its sessions alone; an
    /// editor's, the sessions that brought it).
    fn serves(&self, t: &McpTool, session_id: &str) -> bool {
        self.hub
            .upgrade()
            .is_some_and(|h| match h.server(&t.server) {
                Some(s) if s.editor.is_some() || t.editor => {
                    s.editor.is_some() == t.editor && h.serves_server(&s, session_id)
                }
                // An editor's server that is gone serves nobody.
                None if t.editor => false,
                _ => h.serves(t.scope.as_deref(), session_id),
            })
    }

    fn loaded_in(&self, session_id: &str) -> BTreeSet<String> {
        self.loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session_id)
            .cloned()
            .unwrap_or_default()
    }
}

/// Whether tools whose schemas take `tokens` go over `percent` of a `window`.
pub fn over_threshold(tokens: u64, window: u64, percent: u32) -> bool {
    tokens.saturating_mul(100) > window.saturating_mul(u64::from(percent))
}

impl ToolSource for McpSource {
    fn offered(&self, cx: &OfferContext<'_>) -> Offered {
        let (generation, all, tokens) = self.all();
        if all.is_empty() {
            return Offered {
                tools: Vec::new(),
                generation,
            };
        }
        let search = over_threshold(tokens, cx.context_window, cx.config.mcp.tool_search_percent);
        let loaded = if search {
            Some(self.loaded_in(cx.session_id))
        } else {
            None
        };
        // Plan mode offers read-only tools alone (and its guard refuses the others).
        let mut tools: Vec<Arc<dyn SessionTool>> = all
            .iter()
            .filter(|t| self.serves(t, cx.session_id))
            .filter(|t| cx.mode != InteractionMode::Plan || t.tool.read_only)
            .filter(|t| {
                loaded
                    .as_ref()
                    .is_none_or(|l| l.contains(&t.tool.model_name))
            })
            .map(|t| t.clone() as Arc<dyn SessionTool>)
            .collect();
        tools.extend(self.resource_tools(cx.session_id));
        if let Some(l) = &loaded {
            tools.insert(0, self.search.clone());
            // Each search that loads more changes the list.
            return Offered {
                tools,
                generation: generation
                    .wrapping_mul(1 << 20)
                    .wrapping_add(l.len() as u64 + 1),
            };
        }
        Offered {
            tools,
            generation: generation.wrapping_mul(1 << 20),
        }
    }

    fn find(&self, session_id: &str, name: &str) -> Option<Arc<dyn SessionTool>> {
        if name == crate::search::TOOL_SEARCH {
            return Some(self.search.clone());
        }
        if name == crate::resources::LIST || name == crate::resources::READ {
            return self
                .resource_tools(session_id)
                .into_iter()
                .find(|t| t.name() == name);
        }
        let (_, all, _) = self.all();
        let t = all
            .iter()
            .find(|t| t.tool.model_name == name && self.serves(t, session_id))?;
        // Calling a tool that was not loaded loads it.
        self.loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(session_id.to_string())
            .or_default()
            .insert(name.to_string());
        Some(t.clone() as Arc<dyn SessionTool>)
    }

    fn wait_for<'a>(
        &'a self,
        session_id: &'a str,
        name: &'a str,
    ) -> futures_util::future::BoxFuture<'a, bool> {
        Box::pin(async move {
            let Some(hub) = self.hub.upgrade() else {
                return false;
            };
            let servers: Vec<_> = hub
                .serving(session_id)
                .into_iter()
                .filter(|s| !s.live() && crate::names::may_be_of(&s.name, name))
                .collect();
            if servers.is_empty() {
                return false;
            }
            // Each within its own `startup_timeout_ms`.
            hub.wait_ready(&servers, Duration::MAX).await;
            true
        })
    }

    fn names(&self, session_id: &str) -> Vec<String> {
        let (_, all, _) = self.all();
        all.iter()
            .filter(|t| self.serves(t, session_id))
            .map(|t| t.tool.model_name.clone())
            .collect()
    }
}

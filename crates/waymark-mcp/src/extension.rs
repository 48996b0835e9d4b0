//! MCP servers plugged into every session of a runtime: their tools as a tool source, and the
//! servers started in the background when a session opens.

use crate::hub::McpHub;
use crate::tool::McpSource;
use std::sync::Arc;
use waymark_extension::commands::{CommandContext, CommandSpec, SlashCommand};
use waymark_extension::source::ToolSource;
use waymark_extension::store::Tx;
use waymark_extension::{Extension, Result, SessionApi};
use waymark_protocol::{Answer, QuestionnaireKind};

pub struct McpExtension {
    hub: Arc<McpHub>,
    source: Arc<McpSource>,
    /// The sessions whose first model request has waited for the servers (in this process).
    waited: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl McpExtension {
    pub fn new(hub: Arc<McpHub>) -> McpExtension {
        let source = Arc::new(McpSource::new(&hub));
        McpExtension {
            hub,
            source,
            waited: Default::default(),
        }
    }

    pub fn hub(&self) -> &Arc<McpHub> {
        &self.hub
    }
}

/// `/mcp`: the servers, their state and their tools.
struct McpCommand {
    hub: Arc<McpHub>,
}

impl SlashCommand for McpCommand {
    fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: "mcp",
            usage: "/mcp",
            summary: "list the MCP servers, their state and their tools",
            details: "",
        }
    }

    fn run(&self, cx: &mut CommandContext<'_, '_>, _args: &str) -> Result<String> {
        Ok(crate::listing::describe(
            &self.hub.status_for(cx.session_id),
        ))
    }
}

impl Extension for McpExtension {
    fn name(&self) -> &'static str {
        "mcp"
    }

    fn commands(&self) -> Vec<Arc<dyn SlashCommand>> {
        vec![Arc::new(McpCommand {
            hub: self.hub.clone(),
        })]
    }

    fn tool_sources(&self) -> Vec<Arc<dyn ToolSource>> {
        vec![self.source.clone()]
    }

    fn migrations(&self) -> &'static [&'static str] {
        &[include_str!("../migrations/0001_project_approvals.sql")]
    }

    fn answers(&self) -> &'static [QuestionnaireKind] {
        &[
            QuestionnaireKind::Elicitation,
            QuestionnaireKind::ProjectServers,
        ]
    }

    fn on_answer(
        &self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        questionnaire: &waymark_extension::store::QuestionnaireRow,
        answer: &Answer,
    ) -> Result<()> {
        if questionnaire.kind() == QuestionnaireKind::ProjectServers {
            return crate::project::on_answer(&self.hub, tx, api, questionnaire, answer);
        }
        // The call waiting on the form reads the answer once this commits.
        api.state::<crate::elicit::FormWaits>()
            .wake(&questionnaire.id);
        Ok(())
    }

    fn expand<'a>(
        &'a self,
        api: &'a SessionApi,
        name: &'a str,
        args: &'a str,
    ) -> Option<futures_util::future::BoxFuture<'a, Result<String>>> {
        if !name.starts_with("mcp__") {
            return None;
        }
        // The server's words (names, errors) on one line, whatever path they came by.
        let refused = move |m: String| {
            waymark_extension::Error::refused(format!(
                "/{name}: {}",
                waymark_protocol::display::escape_line(&m)
            ))
        };
        Some(Box::pin(async move {
            // One budget for all of it: starting the server, finding the prompt, getting it.
            tokio::time::timeout(crate::prompts::PROMPT_WAIT, async {
                let Some((server, prompt)) = self.hub.find_prompt(api.id(), name).await else {
                    return Err(refused(
                        "no ready MCP server of this session has that prompt (`/mcp` lists them)"
                            .into(),
                    ));
                };
                let args =
                    crate::prompts::arguments(&prompt, args).map_err(|e| refused(e.to_string()))?;
                let result = self
                    .hub
                    .get_prompt(&server, &prompt.name, args)
                    .await
                    .map_err(|e| refused(e.to_string()))?;
                crate::prompts::message(&result).map_err(|e| refused(e.to_string()))
            })
            .await
            .unwrap_or_else(|_| {
                Err(refused(format!(
                    "no answer within {} (the longest a prompt is waited for)",
                    crate::seconds(crate::prompts::PROMPT_WAIT)
                )))
            })
        }))
    }

    fn before_turn<'a>(
        &'a self,
        api: &'a SessionApi,
        turn_id: i64,
        _cancel: &'a tokio_util::sync::CancellationToken,
    ) -> futures_util::future::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let first = crate::hub::lock(&self.waited).insert(api.id().to_string());
            if !first {
                return Ok(());
            }
            // The session's first request offers the tools the user configured: it waits for
            // the servers within a bound, and names those that are not ready by then.
            let servers: Vec<_> = self
                .hub
                .serving(api.id())
                .into_iter()
                .filter(|s| !s.live())
                .collect();
            if servers.is_empty() {
                return Ok(());
            }
            let bound = std::time::Duration::from_millis(api.config().mcp.first_request_wait_ms);
            let late = self.hub.wait_ready(&servers, bound).await;
            if !late.is_empty() {
                let text = crate::listing::still_starting(&late);
                api.write(|tx| {
                    Ok(tx.emit(
                        api.id(),
                        waymark_protocol::EventKind::SessionNotice {
                            turn_id: Some(turn_id),
                            text,
                        },
                    )?)
                })?;
            }
            Ok(())
        })
    }

    fn on_turn_closed(
        &self,
        tx: &mut Tx<'_>,
        turn: &waymark_extension::store::TurnRow,
        _recovered: bool,
    ) -> Result<()> {
        crate::elicit::withdraw_open(tx, &turn.session_id, turn.id)
    }

    fn on_open(&self, tx: &mut Tx<'_>, session_id: &str, _crashed: bool) -> Result<()> {
        // The session's workspace is a root of every server; the servers start (once per
        // runtime) without the session waiting for them.
        if let Some(s) = waymark_extension::store::sessions::get(tx.conn(), session_id)? {
            let workspace = std::path::Path::new(&s.workspace);
            self.hub.add_root(workspace);
            self.hub.open_session(session_id, workspace);
            // A project's own servers start only once approved.
            crate::project::on_open(&self.hub, tx, session_id, workspace)?;
        }
        self.hub.start();
        Ok(())
    }
}

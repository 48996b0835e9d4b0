//! The completion check (G-18, G-19): a read-only reviewer on the same model route. The
//! subagent may read, list, search and run sandboxed read-only commands; the evaluator is
//! one call without tools. Both must end with a `VERDICT:` line.

use super::prompts::verifier_brief;
use super::settlement::{Mode, Verdict, parse_verdict};
use crate::provider::{CallPurpose, ModelMessage, ModelRequest, StreamEvent, ToolSpec};
use crate::session::SessionCore;
use crate::store::goals::GoalRow;
use crate::store::{HistoryItem, ToolCallRecord};
use crate::tools::{ToolContext, ToolError, truncate_head};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Model calls the subagent may make before it must answer.
const MAX_STEPS: usize = 8;
const READ_ONLY: &[&str] = &["read_file", "list_dir", "glob", "grep"];

/// A short account of recent work on the goal, for the reviewer.
fn evidence(core: &SessionCore) -> String {
    core.with_history(recent_work)
        .unwrap_or_else(|e| format!("(the session history could not be read: {e})"))
}

fn recent_work(items: &[(Option<i64>, HistoryItem)]) -> String {
    let mut lines = Vec::new();
    for (_, item) in items.iter().rev().take(40) {
        match item {
            HistoryItem::Assistant {
                text, tool_calls, ..
            } => {
                for c in tool_calls {
                    lines.push(format!(
                        "called {} {}",
                        c.name,
                        truncate_head(&c.arguments.to_string(), 160, "")
                    ));
                }
                if !text.trim().is_empty() {
                    lines.push(format!("said: {}", truncate_head(text.trim(), 300, "")));
                }
            }
            HistoryItem::ToolResult {
                name,
                status,
                content,
                ..
            } => {
                lines.push(format!(
                    "{name} → {}: {}",
                    status.as_str(),
                    truncate_head(content.lines().next().unwrap_or(""), 160, "")
                ));
            }
            HistoryItem::User { .. } => {}
        }
    }
    lines.reverse();
    lines.join("\n")
}

/// Runs the check; returns the verdict and the tokens it spent (they count toward the goal).
pub(crate) async fn verify(
    core: &SessionCore,
    g: &GoalRow,
    claim: &str,
    mode: Mode,
) -> (Verdict, u64) {
    core.sandbox.probe_async().await;
    let sandbox = core
        .sandbox
        .spec(Vec::new(), core.config().plan.shell_network);
    let mut tools: Vec<ToolSpec> = Vec::new();
    if mode == Mode::Subagent {
        for t in core
            .tools
            .iter()
            .filter(|t| READ_ONLY.contains(&t.name()) || (t.is_shell() && sandbox.is_some()))
        {
            tools.push(ToolSpec {
                name: t.name().into(),
                description: t.description().into(),
                parameters: t.schema(),
            });
        }
    }
    let ctx = ToolContext {
        workspace: core.workspace.clone(),
        session_dir: core.session_dir.clone(),
        artifacts: core.artifacts.clone(),
        cancel: CancellationToken::new(),
        output_limit: core.config().turn.tool_output_limit as usize,
        bash_timeout: Duration::from_millis(core.config().turn.bash_timeout_ms),
        turn_id: 0,
        sandbox: sandbox.clone(),
        env: core.tool_env(),
        core: None,
    };
    let mut messages = vec![ModelMessage::User {
        text: verifier_brief(g, &evidence(core), claim),
    }];
    let mut tokens = 0u64;
    let steps = if mode == Mode::Subagent { MAX_STEPS } else { 1 };
    for step in 0..steps {
        let last = step + 1 == steps;
        let request = ModelRequest {
            system: "You review whether a coding goal is achieved. You cannot change anything."
                .into(),
            messages: messages.clone(),
            tools: if last { Vec::new() } else { tools.clone() },
            max_output_tokens: 4096,
            purpose: CallPurpose::Verifier,
        };
        let sink = |_: StreamEvent| {};
        let reply = match core.provider.call(&request, &sink).await {
            Ok(r) => r,
            Err(e) => {
                return (
                    Verdict::Error(format!("the verifier's model call failed: {e}")),
                    tokens,
                );
            }
        };
        tokens += reply.usage.total();
        if reply.tool_calls.is_empty() {
            return (parse_verdict(&reply.text), tokens);
        }
        messages.push(ModelMessage::Assistant {
            text: reply.text.clone(),
            reasoning: None,
            tool_calls: reply.tool_calls.clone(),
        });
        for call in &reply.tool_calls {
            let content = run_read_only(core, &ctx, call).await;
            let (content, is_error) = match content {
                Ok(c) => (c, false),
                Err(ToolError::Model(m) | ToolError::Fatal(m)) => (m, true),
            };
            messages.push(ModelMessage::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error,
            });
        }
    }
    (
        Verdict::Error("the verifier did not reach a verdict".into()),
        tokens,
    )
}

async fn run_read_only(
    core: &SessionCore,
    ctx: &ToolContext,
    call: &ToolCallRecord,
) -> Result<String, ToolError> {
    let allowed =
        READ_ONLY.contains(&call.name.as_str()) || (call.name == "bash" && ctx.sandbox.is_some());
    let Some(tool) = core.tools.get(&call.name).filter(|_| allowed) else {
        return Err(ToolError::Model(format!(
            "`{}` is not available to the reviewer (read-only tools only)",
            call.name
        )));
    };
    let out = tool.handle(ctx, call.arguments.clone()).await?;
    Ok(truncate_head(&out.content, ctx.output_limit, ""))
}

//! The `task` tool: hands a self-contained piece of work to a subagent and returns its
//! final message. The subagent runs on the engine's agent loop in the same workspace, with a
//! context of its own, held to the session's mode, grants and guards (never more), its calls
//! logged under the parent call; its tokens and cost are the turn's, so a goal's budget
//! counts them; Stop ends it. It is not offered `task` itself (one level deep).

use crate::definitions::{AgentDef, Tools, builtin, custom};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use waymark_extension::agent::{AgentEnd, AgentRole, AgentSpec, ParentCall};
use waymark_extension::provider::{CallPurpose, ModelMessage};
use waymark_extension::{SessionApi, SessionTool, tool_error};
use waymark_tools::{Effects, Tool, ToolContext, ToolError, ToolOutput, parse_args, truncate_head};

pub const NAME: &str = "task";

/// The most of a subagent's final message the parent reads.
pub const MAX_RESULT: usize = 16 * 1024;
/// The most model calls one subagent makes.
const MAX_STEPS: u32 = 50;

pub struct Task;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    description: String,
    prompt: String,
    /// Which agent (Claude Code calls it `subagent_type`); `general` when none is named.
    #[serde(default, alias = "subagent_type")]
    agent: Option<String>,
}

impl Tool for Task {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Hand a self-contained task to a subagent with a fresh context; it returns its final report. `agent`: `explore` (read-only investigation), `general` (your tools), or a custom agent (an unknown name lists them). Give it everything it needs in `prompt`: it does not see this conversation."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A few words on the task."},
                "prompt": {"type": "string", "description": "The whole task, with the context it needs."},
                "agent": {"type": "string", "description": "explore, general, or a custom agent's name."}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }

    fn effects(&self) -> Effects {
        // What the subagent does is judged call by call, as its parent's calls are.
        Effects::READS
    }
}

impl SessionTool for Task {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(NAME, args)?;
            let wanted = args.agent.as_deref().unwrap_or("general");
            let agents = agents(api);
            let Some(def) = agents.iter().find(|a| a.name == wanted) else {
                let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
                return Err(ToolError::Model(format!(
                    "there is no agent `{}`; the agents are {}",
                    wanted.chars().take(64).collect::<String>(),
                    names.join(", ")
                )));
            };
            let route = match model_of(api, def) {
                None => api.route(),
                Some(spec) => api.route_for(&spec).map_err(tool_error)?,
            };
            let filter = def.tools.clone();
            let end = api
                .run_agent(AgentSpec {
                    role: AgentRole::Subagent,
                    turn_id: ctx.turn_id,
                    system: system(def, api),
                    brief: vec![ModelMessage::user(args.prompt.clone())],
                    tools: Arc::new(move |t: &dyn Tool| match &filter {
                        Tools::ReadOnly => t.effects() == Effects::READS,
                        Tools::Parent => true,
                        Tools::Named(names) => names.iter().any(|n| n == t.name()),
                    }),
                    max_steps: MAX_STEPS,
                    answer_last: true,
                    route,
                    purpose: CallPurpose::Main,
                    max_output_tokens: 8192,
                    cancel: ctx.cancel.clone(),
                    when_asked: "This call needs the user's decision in a way a subagent cannot ask for (a hook or policy asked), so it is refused. Report what you would need instead.".into(),
                    asks_user: true,
                    meter: None,
                    parent: Some(ParentCall {
                        call_id: ctx.call_id.clone(),
                        agent: def.name.clone(),
                    }),
                })
                .await
                .map_err(tool_error)?;
            let head = format!("[task:{}] {}", def.name, one_line(&args.description));
            match end {
                AgentEnd::Answered(text) => Ok(ToolOutput::text(format!(
                    "{head}\n{}",
                    truncate_head(&text, MAX_RESULT, "The subagent's report is cut here.")
                ))),
                AgentEnd::Stopped => Err(ToolError::Model(format!("{head}: stopped by the user"))),
                AgentEnd::StepCapped => Err(ToolError::Model(format!(
                    "{head}: the subagent made {MAX_STEPS} model calls without a final report"
                ))),
                AgentEnd::Refused(e) => Err(ToolError::Model(format!(
                    "{head}: its model call was refused: {}",
                    e.message
                ))),
                AgentEnd::Failed(why) => Err(ToolError::Model(format!("{head}: it failed: {why}"))),
            }
        })
    }

    /// A subagent is not offered `task`: one level deep.
    fn for_subagents(&self) -> bool {
        false
    }

    /// Children run side by side, up to `extensions.subagents.max_parallel` (default 4).
    fn at_once(&self, api: &SessionApi) -> usize {
        api.config()
            .extensions
            .get(crate::EXTENSION)
            .and_then(|s| s.get("max_parallel"))
            .and_then(Value::as_u64)
            // Checked when the settings load; held to the same range here whatever came in.
            .map_or(crate::DEFAULT_MAX_PARALLEL, |n| n.clamp(1, 16) as usize)
    }
}

/// The agents this session may hand work to: the built-in ones, then the custom ones.
pub fn agents(api: &SessionApi) -> Vec<AgentDef> {
    let env = api.tool_env();
    let home = env
        .plain
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| std::path::PathBuf::from(v));
    let mut all = builtin();
    let (found, _) = custom(api.workspace(), home.as_deref());
    for def in found {
        if !all.iter().any(|a| a.name == def.name) {
            all.push(def);
        }
    }
    all
}

/// The model spec an agent's `model` names: a Waymark spec (`provider:model`) as it is, a
/// name the settings map (`extensions.subagents.models`), or the parent's model.
fn model_of(api: &SessionApi, def: &AgentDef) -> Option<String> {
    let name = def.model.as_deref()?;
    let config = api.config();
    let mapped = config
        .extensions
        .get(crate::EXTENSION)
        .and_then(|s| s.get("models"))
        .and_then(|m| m.get(name))
        .and_then(Value::as_str)
        .map(str::to_string);
    mapped.or_else(|| name.contains(':').then(|| name.to_string()))
}

fn system(def: &AgentDef, api: &SessionApi) -> String {
    format!(
        "{}\n\nYou are a subagent working in {} for another agent, which reads only your final message: make it a complete report. You cannot ask the user anything.",
        def.prompt,
        api.workspace().display()
    )
}

fn one_line(s: &str) -> String {
    waymark_protocol::display::escape_line(&s.chars().take(120).collect::<String>())
}

//! The model's goal tools (G-11 … G-13): `create_goal`, `get_goal`, `update_goal`.

use super::commands::{BudgetArgs, apply_budgets, create};
use super::enabled::check_enabled;
use super::lifecycle::continue_goal;
use super::prompts::Nudge;
use super::settlement::{Proposal, ProposedStatus};
use super::snapshot;
use crate::db::GoalTurnWrites;
use crate::db::{Budgets, current_goal};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use waymark_config::Config;
use waymark_extension::error::{Error, Result};
use waymark_extension::{SessionApi, SessionTool, tool_error};
use waymark_protocol::InteractionMode;
use waymark_protocol::{
    Approval, EventKind, GoalActor, GoalApprovalQuestion, MessageSource, PermissionMode, Question,
    TypedAnswer,
};
use waymark_store as store;
use waymark_tools::{Tool, ToolContext, ToolError, ToolOutput, parse_args};

pub(crate) struct CreateGoal;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateArgs {
    objective: String,
    #[serde(default)]
    criteria: Option<String>,
    #[serde(default)]
    token_budget: Option<u64>,
    #[serde(default)]
    turn_budget: Option<u64>,
    #[serde(default)]
    time_budget_seconds: Option<u64>,
}

impl Tool for CreateGoal {
    fn name(&self) -> &'static str {
        "create_goal"
    }
    fn description(&self) -> &'static str {
        "Propose a persistent goal for this session — only when the user explicitly asked for one. The user must approve it (unless the session runs in auto mode); your turn ends while they decide."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "objective": {"type": "string"}, "criteria": {"type": "string"},
            "token_budget": {"type": "integer", "minimum": 1}, "turn_budget": {"type": "integer", "minimum": 1},
            "time_budget_seconds": {"type": "integer", "minimum": 1}
        }, "required": ["objective"]})
    }
    fn effects(&self) -> waymark_tools::Effects {
        waymark_tools::Effects::READS
    }
    fn offered(&self, _mode: InteractionMode, config: &Config) -> bool {
        config.beta.thread_goal
    }
}

impl SessionTool for CreateGoal {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, std::result::Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: CreateArgs = parse_args(self.name(), args)?;
            let api = api.clone();
            check_enabled(&api).map_err(tool_error)?;
            if a.objective.trim().is_empty() {
                return Err(ToolError::Model("the objective is empty".into()));
            }
            let time_ms = a
                .time_budget_seconds
                .map(super::budget::seconds_to_ms)
                .transpose()
                .map_err(|e| ToolError::Model(e.to_string()))?;
            // A cost budget is the user's to set, not the model's.
            let budgets = Budgets {
                tokens: a.token_budget,
                turns: a.turn_budget,
                time_ms,
                cost: None,
            };
            super::commands::check_budgets(&budgets).map_err(tool_error)?;
            let sid = api.id().to_string();
            let qid = api.new_id("q");
            let created = api
                .write(|tx| {
                    if let Some(g) = current_goal(tx.conn(), &sid)?
                        && !g.status.is_terminal()
                    {
                        return Err(Error::refused(format!("a goal is already set ({}); the user can replace it with /goal replace", g.status.as_str())));
                    }
                    let session = store::sessions::get(tx.conn(), &sid)?.ok_or_else(|| Error::SessionNotFound(sid.clone()))?;
                    if session.permission_mode == PermissionMode::Auto {
                        let mut g = create(tx, &api, &a.objective, a.criteria.as_deref(), budgets, GoalActor::Model)?;
                        continue_goal(tx, &mut g, Nudge::Plain)?;
                        return Ok(true);
                    }
                    let question = Question::GoalApproval(GoalApprovalQuestion {
                        objective: a.objective.clone(),
                        criteria: a.criteria.clone(),
                        token_budget: budgets.tokens,
                        turn_budget: budgets.turns,
                        time_budget_seconds: a.time_budget_seconds,
                    });
                    tx.open_questionnaire(&qid, &sid, Some(ctx.turn_id), &question)?;
                    tx.emit(&sid, EventKind::QuestionnaireOpened { id: qid.clone(), question: Box::new(question) })?;
                    Ok(false)
                })
                .map_err(tool_error)?;
            super::lifecycle::push_snapshot(&api);
            Ok(ToolOutput {
                content: if created {
                    "The goal is set (auto mode: no approval). Its first continuation follows."
                        .into()
                } else {
                    "The goal was proposed to the user; it exists only once they approve. Stop here.".into()
                },
                terminate: true,
                images: Vec::new(),
            })
        })
    }
}

/// Answers to a goal-approval questionnaire.
pub(crate) fn on_answer(
    tx: &mut waymark_store::Tx<'_>,
    api: &SessionApi,
    q: &waymark_store::QuestionnaireRow,
    answer: &waymark_protocol::Answer,
) -> Result<()> {
    let typed = q.question.accepts(answer)?;
    let (Question::GoalApproval(p), TypedAnswer::GoalApproval(Approval::Approve)) =
        (&q.question, typed)
    else {
        return Ok(());
    };
    let budgets = Budgets {
        tokens: p.token_budget,
        turns: p.turn_budget,
        time_ms: p
            .time_budget_seconds
            .map(super::budget::seconds_to_ms)
            .transpose()
            .map_err(|e| Error::refused(e.to_string()))?,
        cost: None,
    };
    let mut g = create(
        tx,
        api,
        &p.objective,
        p.criteria.as_deref(),
        budgets,
        GoalActor::User,
    )?;
    continue_goal(tx, &mut g, Nudge::Plain)
}

pub(crate) struct GetGoal;

impl Tool for GetGoal {
    fn name(&self) -> &'static str {
        "get_goal"
    }
    fn description(&self) -> &'static str {
        "Read the session's goal: objective, criteria, status and the budget report."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn effects(&self) -> waymark_tools::Effects {
        waymark_tools::Effects::READS
    }
    fn offered(&self, _mode: InteractionMode, config: &Config) -> bool {
        config.beta.thread_goal
    }
}

impl SessionTool for GetGoal {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        _ctx: &'a ToolContext,
        _args: Value,
    ) -> BoxFuture<'a, std::result::Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let api = api.clone();
            check_enabled(&api).map_err(tool_error)?;
            let g = api
                .read(|c| current_goal(c, api.id()))
                .map_err(tool_error)?;
            Ok(ToolOutput::text(match g {
                None => "No goal is set.".to_string(),
                Some(g) => serde_json::to_string_pretty(&snapshot(&g)).unwrap_or_default(),
            }))
        })
    }
}

pub(crate) struct UpdateGoal;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateArgs {
    mode: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    token_budget: Option<u64>,
}

impl Tool for UpdateGoal {
    fn name(&self) -> &'static str {
        "update_goal"
    }
    fn description(&self) -> &'static str {
        "mode \"status\": propose that the goal is \"complete\" (with the evidence in `message`) or \"blocked\" (saying what you need); this ends your turn and the runtime decides. mode \"token_budget\": change the token budget, only in a turn the user started."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["status", "token_budget"]},
            "status": {"type": "string", "enum": ["complete", "blocked"]},
            "message": {"type": "string"},
            "token_budget": {"type": "integer", "minimum": 1}
        }, "required": ["mode"]})
    }
    fn effects(&self) -> waymark_tools::Effects {
        waymark_tools::Effects::READS
    }
    fn offered(&self, _mode: InteractionMode, config: &Config) -> bool {
        config.beta.thread_goal
    }
}

impl SessionTool for UpdateGoal {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, std::result::Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: UpdateArgs = parse_args(self.name(), args)?;
            let api = api.clone();
            check_enabled(&api).map_err(tool_error)?;
            let sid = api.id().to_string();
            let turn_id = ctx.turn_id;
            match a.mode.as_str() {
                "status" => {
                    let status = match a.status.as_deref() {
                        Some("complete") => ProposedStatus::Complete,
                        Some("blocked") => ProposedStatus::Blocked,
                        _ => {
                            return Err(ToolError::Model(
                                "mode \"status\" needs status \"complete\" or \"blocked\"".into(),
                            ));
                        }
                    };
                    let proposal = Proposal {
                        status,
                        message: a.message.unwrap_or_default(),
                    };
                    let json = serde_json::to_string(&proposal)
                        .map_err(|e| ToolError::Fatal(e.to_string()))?;
                    api.write(|tx| {
                        if current_goal(tx.conn(), &sid)?.is_none() {
                            return Err(Error::refused("no goal is set".into()));
                        }
                        tx.set_turn_proposal(turn_id, &json)
                    })
                    .map_err(tool_error)?;
                    super::turn_goal::forget_turn_goal(&api);
                    Ok(ToolOutput {
                        content: "Proposal recorded; the runtime settles it when this turn ends. Stop here.".into(),
                        terminate: true,
                        images: Vec::new(),
                    })
                }
                "token_budget" => {
                    let Some(budget) = a.token_budget else {
                        return Err(ToolError::Model(
                            "mode \"token_budget\" needs token_budget".into(),
                        ));
                    };
                    api.write(|tx| {
                        let t = store::turns::get(tx.conn(), turn_id)?.ok_or_else(|| Error::Corrupt("turn vanished".into()))?;
                        let source = store::messages::get(tx.conn(), t.message_id)?.map(|m| m.source);
                        if source != Some(MessageSource::User) {
                            return Err(Error::refused("the token budget can only change in a turn the user started, not in a continuation".into()));
                        }
                        let Some(mut g) = current_goal(tx.conn(), &sid)? else {
                            return Err(Error::refused("no goal is set".into()));
                        };
                        apply_budgets(tx, &mut g, &BudgetArgs { tokens: Some(Some(budget)), ..Default::default() }, GoalActor::Model)
                    })
                    .map_err(tool_error)?;
                    super::lifecycle::push_snapshot(&api);
                    Ok(ToolOutput::text(format!(
                        "The token budget is now {budget}."
                    )))
                }
                other => Err(ToolError::Model(format!(
                    "unknown mode `{other}`; use \"status\" or \"token_budget\""
                ))),
            }
        })
    }
}

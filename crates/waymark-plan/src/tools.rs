//! `EnterPlanMode` (PM-7, PM-8) and `ExitPlanMode` (PM-10, PM-15 … PM-17, PM-20). Both end the
//! turn: the user decides what happens next.

use crate::db::PlanWrites;
use waymark_protocol::{PlanModeReason, PlanStatus, RevisionAuthor};

use super::answer::{implementation_message, queue_first};
use super::document::{SNAPSHOT_LIMIT, check_plan_text, snapshot_of};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use waymark_config::Config;
use waymark_extension::error::{Error, Result};
use waymark_extension::{SessionApi, SessionTool, tool_error};
use waymark_protocol::{
    EventKind, InteractionMode, PermissionMode, PlanApprovalQuestion, PlanEntryQuestion, Question,
};
use waymark_store as store;
use waymark_tools::{Tool, ToolContext, ToolError, ToolOutput, parse_args};

pub(crate) struct EnterPlanMode;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnterArgs {
    #[serde(default)]
    reason: Option<String>,
}

impl Tool for EnterPlanMode {
    fn name(&self) -> &'static str {
        "EnterPlanMode"
    }
    fn description(&self) -> &'static str {
        "Ask the user to switch this session to plan mode: investigate read-only, write a plan for approval, and change nothing until it is approved. Use it for a software task whose implementation should be agreed first, or when the user asks for a plan. Ends your turn; the user confirms or declines."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"reason": {"type": "string", "description": "Why planning first helps here"}}})
    }
    fn effects(&self) -> waymark_tools::Effects {
        waymark_tools::Effects::READS
    }
    fn offered(&self, mode: InteractionMode, config: &Config) -> bool {
        // Only in default mode and behind its own flag (PM-7); the kill switch too (PM-9).
        mode == InteractionMode::Default
            && config.beta.desktop_plan_mode_agent_entry
            && config.beta.desktop_plan_mode
    }
}

impl SessionTool for EnterPlanMode {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: EnterArgs = parse_args(self.name(), args)?;
            let api = api.clone();
            if !api.config().beta.desktop_plan_mode_agent_entry
                || !api.config().beta.desktop_plan_mode
            {
                return Err(ToolError::Model(
                    "EnterPlanMode is not available in this session".into(),
                ));
            }
            let qid = api.new_id("q");
            let sid = api.id().to_string();
            api.write(|tx| {
                let session = store::sessions::get(tx.conn(), &sid)?.ok_or_else(|| Error::SessionNotFound(sid.clone()))?;
                if session.interaction_mode == InteractionMode::Plan {
                    return Err(Error::refused("the session is already in plan mode; keep planning and call ExitPlanMode when the plan is written".into()));
                }
                let question = Question::PlanEntry(PlanEntryQuestion { reason: a.reason });
                tx.open_questionnaire(&qid, &sid, Some(ctx.turn_id), &question)?;
                Ok(tx.emit(&sid, EventKind::QuestionnaireOpened { id: qid.clone(), question: Box::new(question) })?)
            })
            .map_err(tool_error)?;
            Ok(ToolOutput {
                content: "Asked the user whether to switch to plan mode. Stop here; the answer comes as the next message.".into(),
                terminate: true,
                images: Vec::new(),
            })
        })
    }
}

pub(crate) struct ExitPlanMode;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExitArgs {
    #[serde(default)]
    options: Option<Vec<String>>,
}

impl Tool for ExitPlanMode {
    fn name(&self) -> &'static str {
        "ExitPlanMode"
    }
    fn description(&self) -> &'static str {
        "Submit the plan for the user's review once it is written to the plan file (it must start with a non-empty `## Summary`). Takes no plan text: the file is read and frozen. `options` may list up to 3 short labels of alternative approaches the plan describes, for the user to choose from. Ends your turn."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"options": {"type": "array", "items": {"type": "string"}, "maxItems": 3}}})
    }
    fn effects(&self) -> waymark_tools::Effects {
        waymark_tools::Effects::READS
    }
    fn offered(&self, mode: InteractionMode, _config: &Config) -> bool {
        mode == InteractionMode::Plan
    }
}

impl SessionTool for ExitPlanMode {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: ExitArgs = parse_args(self.name(), args)?;
            let options = a.options.unwrap_or_default();
            if options.len() > 3 {
                return Err(ToolError::Model("offer at most 3 options".into()));
            }
            if options
                .iter()
                .any(|o| o.trim().is_empty() || o.chars().count() > 200)
            {
                return Err(ToolError::Model(
                    "each option is a short, non-empty label (at most 200 characters)".into(),
                ));
            }
            let api = api.clone();
            let path = super::plan_path(api.artifacts());
            // A regular file only, and no more than the snapshot keeps (plus a little, to
            // know it was cut): a FIFO or a huge file cannot stall or swamp the turn.
            let read = match super::read_plan_file(&path, SNAPSHOT_LIMIT + 4) {
                Ok(Some(r)) => r,
                Ok(None) => {
                    return Err(ToolError::Model(format!(
                        "there is no plan file at {}: write the plan there first, starting with `## Summary`",
                        path.display()
                    )));
                }
                Err(e) => return Err(ToolError::Model(e.to_string())),
            };
            let text = check_plan_text(&read.bytes)
                .map_err(|m| ToolError::Model(format!("{m} (plan file: {})", path.display())))?;
            let (content, truncated) = snapshot_of(text, read.total);
            let sid = api.id().to_string();
            let qid = api.new_id("q");
            let auto = api.write(|tx| {
                let session = store::sessions::get(tx.conn(), &sid)?.ok_or_else(|| Error::SessionNotFound(sid.clone()))?;
                if session.interaction_mode != InteractionMode::Plan {
                    return Err(Error::refused("ExitPlanMode works only in plan mode".into()));
                }
                if store::messages::queued_count(tx.conn(), &sid)? > 0 {
                    return Err(Error::refused(
                        "messages are waiting in the queue: the user added something; end your turn and read it before submitting the plan".into(),
                    ));
                }
                let (plan, rev) = super::freeze_revision(tx, &sid, &content, RevisionAuthor::Model, truncated)?;
                if session.permission_mode == PermissionMode::Auto {
                    // PM-20: no review in auto mode; the frozen snapshot goes straight to work.
                    let text = implementation_message(&content, None);
                    queue_first(tx, &sid, &text, &format!("plan-auto:{}:v{}", plan.id, rev.version))?;
                    super::leave(tx, &api, PlanStatus::Approved, PlanModeReason::Auto)?;
                    return Ok(true);
                }
                let question = Question::PlanApproval(PlanApprovalQuestion {
                    plan_id: plan.id.clone(),
                    version: rev.version,
                    key: rev.key.clone(),
                    sha256: rev.sha256.clone(),
                    bytes: rev.bytes,
                    truncated,
                    path: path.display().to_string(),
                    options,
                    budget: super::review::budget(&content),
                    steps: super::review::steps(&content),
                    checks: super::review::checks(&content),
                });
                tx.open_questionnaire(&qid, &sid, Some(ctx.turn_id), &question)?;
                tx.set_plan_status(&plan.id, PlanStatus::AwaitingApproval)?;
                tx.emit(&sid, EventKind::QuestionnaireOpened { id: qid.clone(), question: Box::new(question) })?;
                Ok(false)
            })
            .map_err(tool_error)?;
            let content = if auto {
                "The plan was frozen and plan mode ended WITHOUT review: the session runs in auto permission mode, so the user did not review this plan. Its implementation arrives as the next message.".to_string()
            } else {
                "The plan was frozen and is waiting for the user's review. Stop here; the user's decision comes as the next message.".to_string()
            };
            Ok(ToolOutput {
                content,
                terminate: true,
                images: Vec::new(),
            })
        })
    }
}

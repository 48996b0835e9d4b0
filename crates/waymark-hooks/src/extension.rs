//! The hooks extension: each session event fires its hooks at the point the engine offers
//! for it. `PreToolUse` is a call policy (it may refuse the call or have the user asked, and
//! a hook that times out or crashes refuses it; its "allow" only passes the call on to plan
//! mode, the permission mode, the guards and the budget, which still decide); `PostToolUse`
//! adds what its hooks say to the result the model reads; `UserPromptSubmit` may refuse a
//! message or add context to it; `SessionStart`, `PreCompact` and `Stop` run where the session
//! opens, compacts and settles a turn; Waymark's own events (`PlanSubmitted`, `PlanDecided`,
//! `GoalStatusChanged`) and `Notification` follow the session's event stream.

use crate::fire::{Firing, fire, hooks_for};
use crate::outcome::Said;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use waymark_extension::commands::{CommandContext, CommandSpec, SlashCommand};
use waymark_extension::policy::{CallPolicy, PolicyCall, Verdict};
use waymark_extension::store::{ToolCallRecord, Tx};
use waymark_extension::{Extension, PromptCheck, ResultSeen, SessionApi};
use waymark_protocol::{Event, EventKind, GoalStatus, Question, QuestionnaireKind};

/// Hooks for every session.
#[derive(Default)]
pub struct HooksExtension {
    /// Each open session's event listener, ended when the session closes.
    listeners: Arc<Mutex<HashMap<String, CancellationToken>>>,
}

impl Extension for HooksExtension {
    fn name(&self) -> &'static str {
        "hooks"
    }

    fn call_policies(&self) -> Vec<Arc<dyn CallPolicy>> {
        vec![Arc::new(PreToolUse)]
    }

    fn commands(&self) -> Vec<Arc<dyn SlashCommand>> {
        vec![Arc::new(ListHooks)]
    }

    fn migrations(&self) -> &'static [&'static str] {
        &[include_str!(
            "../migrations/0001_project_hook_decisions.sql"
        )]
    }

    fn answers(&self) -> &'static [QuestionnaireKind] {
        &[QuestionnaireKind::ProjectHooks]
    }

    fn on_answer(
        &self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        questionnaire: &waymark_extension::store::QuestionnaireRow,
        answer: &waymark_protocol::Answer,
    ) -> waymark_extension::Result<()> {
        crate::project::on_answer(tx, api, questionnaire, answer)
    }

    fn after_open<'a>(
        &'a self,
        api: &'a SessionApi,
    ) -> BoxFuture<'a, waymark_extension::Result<()>> {
        Box::pin(async move {
            // Before anything fires: the project's hooks, if approved, or the question.
            crate::project::on_open(api)?;
            let gathered = crate::fire::gathered(api);
            for why in &gathered.skipped {
                api.transient(EventKind::SessionNotice {
                    turn_id: None,
                    text: format!("A hook is not used: {why}"),
                });
            }
            let stop = CancellationToken::new();
            if let Some(old) = lock(&self.listeners).insert(api.id().to_string(), stop.clone()) {
                old.cancel();
            }
            tokio::spawn(listen(api.clone(), api.subscribe(), stop.clone()));
            let fields = Map::from_iter([("source".to_string(), json!("startup"))]);
            fire(api, firing("SessionStart", None, None, fields), &stop).await;
            Ok(())
        })
    }

    fn on_close(
        &self,
        _tx: &mut Tx<'_>,
        session_id: &str,
        _waiting: bool,
    ) -> waymark_extension::Result<()> {
        if let Some(stop) = lock(&self.listeners).remove(session_id) {
            stop.cancel();
        }
        Ok(())
    }

    fn check_prompt<'a>(
        &'a self,
        api: &'a SessionApi,
        text: &'a str,
    ) -> BoxFuture<'a, waymark_extension::Result<PromptCheck>> {
        Box::pin(async move {
            let fields = Map::from_iter([("prompt".to_string(), json!(text))]);
            let mut f = firing("UserPromptSubmit", None, None, fields);
            f.plain_stdout_is_context = true;
            Ok(match fire(api, f, &CancellationToken::new()).await {
                Said::Block(why) => {
                    PromptCheck::Refuse(format!("A hook refused the message: {why}"))
                }
                Said::Proceed { context: Some(c) } => PromptCheck::AddContext(c),
                _ => PromptCheck::Pass,
            })
        })
    }

    fn review_result<'a>(
        &'a self,
        api: &'a SessionApi,
        turn_id: i64,
        call: &'a ToolCallRecord,
        result: &'a ResultSeen<'a>,
    ) -> BoxFuture<'a, waymark_extension::Result<Option<String>>> {
        Box::pin(async move {
            if hooks_for(api, "PostToolUse", Some(&call.name)).is_empty() {
                return Ok(None);
            }
            let status = serde_json::to_value(result.status).unwrap_or(Value::Null);
            let mut response = json!({
                "content": result.content,
                "status": status,
                "success": result.status == waymark_protocol::ToolStatus::Ok,
            });
            if call.name == "bash" {
                response["stdout"] = json!(result.content);
            }
            let fields = tool_fields(api, call, Some(response));
            let f = firing("PostToolUse", Some(turn_id), Some(&call.name), fields);
            Ok(match fire(api, f, &CancellationToken::new()).await {
                Said::Block(why) => Some(format!("A PostToolUse hook says: {why}")),
                Said::Proceed { context: Some(c) } => Some(c),
                _ => None,
            })
        })
    }

    fn before_compaction<'a>(
        &'a self,
        api: &'a SessionApi,
        reason: waymark_protocol::CompactReason,
    ) -> BoxFuture<'a, waymark_extension::Result<Option<String>>> {
        Box::pin(async move {
            let trigger = match serde_json::to_value(reason) {
                Ok(Value::String(s)) if s == "manual" => "manual",
                _ => "auto",
            };
            let fields = Map::from_iter([
                ("trigger".to_string(), json!(trigger)),
                ("custom_instructions".to_string(), json!("")),
            ]);
            fire(
                api,
                firing("PreCompact", None, None, fields),
                &CancellationToken::new(),
            )
            .await;
            Ok(None)
        })
    }

    fn settle<'a>(
        &'a self,
        api: &'a SessionApi,
        turn_id: i64,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, waymark_extension::Result<()>> {
        Box::pin(async move {
            let fields = Map::from_iter([("stop_hook_active".to_string(), json!(false))]);
            fire(api, firing("Stop", Some(turn_id), None, fields), cancel).await;
            Ok(())
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn firing<'a>(
    event: &'static str,
    turn_id: Option<i64>,
    tool: Option<&'a str>,
    fields: Map<String, Value>,
) -> Firing<'a> {
    Firing {
        event,
        turn_id,
        tool,
        fields,
        fail_closed: false,
        plain_stdout_is_context: false,
    }
}

/// A tool event's fields: the tool under Claude Code's name and fields, and Waymark's.
fn tool_fields(
    api: &SessionApi,
    call: &ToolCallRecord,
    response: Option<Value>,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "tool_name".into(),
        json!(crate::names::hook_name(&call.name)),
    );
    m.insert(
        "tool_input".into(),
        crate::names::hook_input(&call.name, &call.arguments, api.workspace()),
    );
    m.insert("tool_use_id".into(), json!(call.id));
    m.insert("waymark_tool_name".into(), json!(call.name));
    if let Some(r) = response {
        m.insert("tool_response".into(), r);
    }
    m
}

/// `PreToolUse`: the hooks review each call before the guard chain decides it.
struct PreToolUse;

impl CallPolicy for PreToolUse {
    fn name(&self) -> &'static str {
        "hook"
    }

    fn review<'a>(
        &'a self,
        api: &'a SessionApi,
        call: &'a PolicyCall<'a>,
    ) -> BoxFuture<'a, waymark_extension::Result<Verdict>> {
        Box::pin(async move {
            // Most calls have no hook: nothing is built for them.
            let none = hooks_for(api, "PreToolUse", Some(&call.call.name)).is_empty();
            // Read after the hooks: finding the approved files changed suspends calls.
            if crate::project::suspended(api) {
                return Ok(Verdict::Deny(crate::project::SUSPENDED.into()));
            }
            if none {
                return Ok(Verdict::Pass);
            }
            let fields = tool_fields(api, call.call, None);
            let mut f = firing(
                "PreToolUse",
                Some(call.turn_id),
                Some(&call.call.name),
                fields,
            );
            f.fail_closed = true;
            Ok(match fire(api, f, call.cancel).await {
                Said::Block(why) => Verdict::Deny(why),
                Said::Ask(why) => Verdict::Ask(why),
                // A hook's "allow" passes the call on; it never decides it.
                _ => Verdict::Pass,
            })
        })
    }
}

/// Follows the session's events for the hooks set on Waymark's own events and on
/// `Notification`; each fires in the background (they fail open and decide nothing).
async fn listen(
    api: SessionApi,
    mut events: tokio::sync::broadcast::Receiver<Event>,
    stop: CancellationToken,
) {
    use tokio::sync::broadcast::error::RecvError;
    let mut statuses: HashMap<String, GoalStatus> = HashMap::new();
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => {
                // The session closed: its `SessionEnd` hooks run (on their own timeouts).
                let fields = Map::from_iter([("reason".to_string(), json!("other"))]);
                fire(&api, firing("SessionEnd", None, None, fields), &CancellationToken::new()).await;
                return;
            }
            e = events.recv() => match e {
                Ok(e) => e,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            },
        };
        let Some((name, fields)) = waymark_event(&event, &mut statuses) else {
            continue;
        };
        let api = api.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            fire(&api, firing(name, None, None, fields), &stop).await;
        });
    }
}

/// The hook event a session event is, with its fields.
fn waymark_event(
    event: &Event,
    statuses: &mut HashMap<String, GoalStatus>,
) -> Option<(&'static str, Map<String, Value>)> {
    if event.transient {
        return None;
    }
    match &event.kind {
        EventKind::GoalCreate { goal } => {
            statuses.insert(goal.goal_id.clone(), goal.status);
            None
        }
        EventKind::GoalUpdate {
            goal_id,
            status,
            reason,
            ..
        } => {
            let before = statuses.insert(goal_id.clone(), *status);
            if before == Some(*status) {
                return None;
            }
            Some((
                "GoalStatusChanged",
                Map::from_iter([(
                    "goal".to_string(),
                    json!({"id": goal_id, "status": status, "previous_status": before, "reason": reason}),
                )]),
            ))
        }
        EventKind::PlanRevision {
            plan_id,
            version,
            author,
            ..
        } => Some((
            "PlanSubmitted",
            Map::from_iter([(
                "plan".to_string(),
                json!({"id": plan_id, "version": version, "author": author}),
            )]),
        )),
        EventKind::QuestionnaireAnswered { kind, answer, .. }
            if *kind == QuestionnaireKind::PlanApproval =>
        {
            Some((
                "PlanDecided",
                Map::from_iter([("plan".to_string(), json!({"decision": answer}))]),
            ))
        }
        EventKind::QuestionnaireOpened { question, .. } => {
            let message = match question.as_ref() {
                Question::Permission(p) => format!("Waymark needs your permission: {}", p.summary),
                Question::PlanApproval(_) => "A plan waits for your review".to_string(),
                _ => "Waymark is waiting for your answer".to_string(),
            };
            Some((
                "Notification",
                Map::from_iter([("message".to_string(), json!(message))]),
            ))
        }
        _ => None,
    }
}

/// `/hooks`: the hooks in force, each with its event, matcher, command and where it is set.
struct ListHooks;

impl SlashCommand for ListHooks {
    fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: "hooks",
            usage: "/hooks",
            summary: "List the hooks in force and where each is set",
            details: "Hooks come from the `hooks` section of your settings, from ~/.claude/settings.json while hooks.import_claude is on (the default), and from the project's .waymark/settings.json and .claude/settings.json (and their .local.json) once you approve them.",
        }
    }

    fn run(
        &self,
        cx: &mut CommandContext<'_, '_>,
        _args: &str,
    ) -> waymark_extension::Result<String> {
        let Some(api) = cx.api else {
            return Ok("No session to list hooks for.".into());
        };
        let g = crate::fire::gathered_as_approved(api);
        let waiting = match (
            api.state::<crate::project::Approved>().get(),
            crate::project::read(api.workspace()),
        ) {
            (None, Some(p)) => Some(format!(
                "The project's settings ({}) set {} hook(s) that do not run: they are not approved in this session.{}",
                p.files.join(", "),
                p.hooks.len(),
                p.skipped
                    .iter()
                    .map(|why| format!(
                        "\nnot used: {}",
                        waymark_protocol::display::escape_line(why)
                    ))
                    .collect::<String>()
            )),
            _ => None,
        };
        if g.hooks.is_empty() && g.skipped.is_empty() && waiting.is_none() {
            return Ok("No hooks are set. Add them under `hooks` in your settings, in Claude Code's shape, or in ~/.claude/settings.json.".into());
        }
        let mut out = String::new();
        for h in &g.hooks {
            let matcher = if h.command.matcher.is_empty() {
                "*"
            } else {
                &h.command.matcher
            };
            out.push_str(&format!(
                "{} [{}] {} (timeout {} s; from {})\n",
                h.event,
                waymark_protocol::display::escape_line(matcher),
                waymark_protocol::display::escape_line(&h.command.command),
                h.command.timeout_s,
                h.source
            ));
        }
        for why in &g.skipped {
            out.push_str(&format!(
                "not used: {}\n",
                waymark_protocol::display::escape_line(why)
            ));
        }
        if let Some(w) = waiting {
            out.push_str(&w);
        }
        Ok(out.trim_end().to_string())
    }
}

//! A subagent an extension runs on the engine's agent loop (`SessionApi::run_agent`, issue
//! 40 step 5) is held to its parent's policy: the same mode, grants and plan rules, never
//! more. Built as a hostile model would use it: a `delegate` tool whose subagent tries to
//! write where its parent may not, to get what its parent would have to ask for, and to
//! nest itself without end.

use super::harness::{Harness, results, run, user};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use waymark_config::Config;
use waymark_protocol::{CallActor, EventKind, PermissionMode, ToolStatus};
use waymark_runtime::extension::agent::{AgentEnd, AgentRole, AgentSpec};
use waymark_runtime::extension::{Extension, SessionApi, SessionTool};
use waymark_runtime::provider::{CallPurpose, ModelMessage};
use waymark_runtime::tools::{Effects, FreeTool, Tool, ToolContext, ToolError, ToolOutput};
use waymark_runtime::{SessionHandle, SessionSpec};

/// Hands a task to a subagent with every tool of the session (this one too) and returns
/// how it ended.
struct Delegate;

impl Tool for Delegate {
    fn name(&self) -> &str {
        "delegate"
    }
    fn description(&self) -> &str {
        "Hand a task to a subagent."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"task": {"type": "string"}}})
    }
    fn effects(&self) -> Effects {
        // What the subagent does is judged call by call.
        Effects::READS
    }
}

impl SessionTool for Delegate {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let task = args["task"].as_str().unwrap_or("").to_string();
            let end = api
                .run_agent(AgentSpec {
                    role: AgentRole::Subagent,
                    turn_id: ctx.turn_id,
                    system: "You do the task you are given.".into(),
                    brief: vec![ModelMessage::user(task)],
                    tools: Arc::new(|_: &dyn Tool| true),
                    max_steps: 8,
                    answer_last: false,
                    route: api.route(),
                    purpose: CallPurpose::Main,
                    max_output_tokens: 1024,
                    cancel: ctx.cancel.clone(),
                    when_asked: "the subagent cannot ask the user".into(),
                    asks_user: false,
                    meter: None,
                    parent: None,
                })
                .await
                .map_err(waymark_runtime::extension::tool_error)?;
            Ok(ToolOutput::text(match end {
                AgentEnd::Answered(text) => format!("answered: {text}"),
                other => format!("ended: {other:?}"),
            }))
        })
    }
    fn for_subagents(&self) -> bool {
        // It only starts a subagent of the caller's own.
        true
    }
}

/// Stops the turn from inside a call, as the user's Stop would while it runs.
struct PullThePlug;

impl Tool for PullThePlug {
    fn name(&self) -> &str {
        "pull_the_plug"
    }
    fn description(&self) -> &str {
        "Stop everything."
    }
    fn schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn effects(&self) -> Effects {
        Effects::READS
    }
}

impl FreeTool for PullThePlug {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        _: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        ctx.cancel.cancel();
        Box::pin(async { Ok(ToolOutput::text("stopped")) })
    }
}

struct Subagents;

impl Extension for Subagents {
    fn name(&self) -> &'static str {
        "subagents"
    }
    fn session_tools(&self) -> Vec<Arc<dyn SessionTool>> {
        vec![Arc::new(Delegate)]
    }
    fn tools(&self) -> Vec<Arc<dyn FreeTool>> {
        vec![Arc::new(PullThePlug)]
    }
}

/// A session in `mode` with the `delegate` tool, whose model plays `responses` (the
/// parent's and its subagents' calls share the list, in the order they are made).
fn session(h: &Harness, mode: PermissionMode, responses: Value) -> SessionHandle {
    session_with(h, Config::default(), mode, responses)
}

/// [`session`] under `config`.
fn session_with(
    h: &Harness,
    config: Config,
    mode: PermissionMode,
    responses: Value,
) -> SessionHandle {
    let mut opts = h.runtime.options().clone();
    opts.config = config;
    opts.extensions.push(Arc::new(Subagents));
    let runtime = waymark_runtime::Runtime::open(opts).unwrap();
    runtime
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(h.script(json!({ "responses": responses }))),
            permission_mode: Some(mode),
            hold: false,
        })
        .unwrap()
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"name": name, "arguments": arguments}]})
}

/// Each tool result's actor, name, status and content, in order.
fn by_actor(events: &[waymark_protocol::Event]) -> Vec<(CallActor, String, ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                actor,
                name,
                status,
                content,
                ..
            } => Some((*actor, name.clone(), *status, content.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_subagent_call_in_plan_mode_cannot_write_outside_the_plan_file() {
    let h = Harness::new(Config::default());
    // In `auto`, where its parent's writes would run, but in plan mode.
    let s = session(
        &h,
        PermissionMode::Auto,
        json!([
            call("delegate", json!({"task": "change the code"})),
            call("write", json!({"path": "src/evil.rs", "content": "fn main() {}"})),
            call("bash", json!({"command": "echo hi > outside.txt"})),
            call("write", json!({"path": "${session_dir}/artifacts/plan.md", "content": "# the subagent's plan"})),
            {"text": "the subagent is done"},
            {"text": "done"}
        ]),
    );
    s.submit(user("/plan on")).await.unwrap();
    let ev = run(&s, user("plan it")).await;
    let r = by_actor(&ev);
    assert_eq!(r.len(), 4, "{r:#?}");
    let sub = CallActor::Subagent(1);
    // Its write outside the plan file is refused by plan mode, as its parent's would be.
    assert_eq!(
        (r[0].0, r[0].1.as_str(), r[0].2),
        (sub, "write", ToolStatus::Denied),
        "{r:#?}"
    );
    assert!(r[0].3.contains("Plan mode"), "{r:#?}");
    assert!(!h.ws.join("src/evil.rs").exists());
    // Its shell is confined as its parent's is: nothing reaches the workspace.
    assert_eq!((r[1].0, r[1].1.as_str()), (sub, "bash"), "{r:#?}");
    assert!(!h.ws.join("outside.txt").exists(), "{r:#?}");
    // The plan file is what plan mode lets it write, as it lets its parent.
    assert_eq!(
        (r[2].0, r[2].1.as_str(), r[2].2),
        (sub, "write", ToolStatus::Ok),
        "{r:#?}"
    );
    let plan = h.session_dir(s.id()).join("artifacts/plan.md");
    assert_eq!(
        std::fs::read_to_string(plan).unwrap(),
        "# the subagent's plan"
    );
    // The parent is told how its subagent ended.
    assert_eq!(r[3].0, CallActor::Main);
    assert_eq!(r[3].3, "answered: the subagent is done", "{r:#?}");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_subagent_gets_no_more_than_its_parent_and_cannot_ask() {
    let h = Harness::new(Config::default());
    // In `ask`, its parent's write would be asked about; nobody answers a subagent.
    let s = session(
        &h,
        PermissionMode::Ask,
        json!([
            call("delegate", json!({"task": "write the file"})),
            call("write", json!({"path": "notes.txt", "content": "written behind the user's back"})),
            call("read_file", json!({"path": "notes.txt"})),
            {"text": "could not"},
            {"text": "done"}
        ]),
    );
    let r = by_actor(&run(&s, user("go")).await);
    assert_eq!(r.len(), 3, "{r:#?}");
    assert_eq!(
        (r[0].1.as_str(), r[0].2),
        ("write", ToolStatus::Denied),
        "{r:#?}"
    );
    assert_eq!(r[0].3, "the subagent cannot ask the user");
    assert!(!h.ws.join("notes.txt").exists());
    // What its parent may do without asking, it may do too.
    assert_eq!(
        (r[1].0, r[1].1.as_str()),
        (CallActor::Subagent(1), "read_file"),
        "{r:#?}"
    );
    assert_eq!(r[2].3, "answered: could not", "{r:#?}");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_subagent_that_delegates_to_itself_is_stopped_three_deep() {
    let h = Harness::new(Config::default());
    let again = || call("delegate", json!({"task": "do it yourself, again"}));
    let s = session(
        &h,
        PermissionMode::Auto,
        json!([
            again(),
            again(),
            again(),
            again(),
            {"text": "third"},
            {"text": "second"},
            {"text": "first"},
            {"text": "done"}
        ]),
    );
    let ev = run(&s, user("go")).await;
    let r = by_actor(&ev);
    let actors: Vec<CallActor> = r.iter().map(|r| r.0).collect();
    assert_eq!(
        actors,
        vec![
            CallActor::Subagent(3),
            CallActor::Subagent(2),
            CallActor::Subagent(1),
            CallActor::Main
        ],
        "{r:#?}"
    );
    // The fourth level is refused, and the model is told why.
    assert_eq!(r[0].2, ToolStatus::Error, "{r:#?}");
    assert!(r[0].3.contains("nest at most 3 deep"), "{r:#?}");
    assert_eq!(r[3].3, "answered: first", "{r:#?}");
    // Each run's calls have ids of their own.
    let ids: Vec<&str> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(results(&ev).iter().all(|r| r.0 == "delegate"));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_subagents_write_is_checkpointed_first_like_its_parents() {
    let h = Harness::new(Config::default());
    std::fs::write(h.ws.join("notes.txt"), "the user's notes\n").unwrap();
    let s = session(
        &h,
        PermissionMode::Auto,
        json!([
            call("delegate", json!({"task": "rewrite the notes"})),
            call("write", json!({"path": "draft.txt", "content": "a draft\n"})),
            call("write", json!({"path": "notes.txt", "content": "overwritten\n"})),
            {"text": "rewritten"},
            {"text": "done"}
        ]),
    );
    let ev = run(&s, user("go")).await;
    let write_id = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall {
                call_id,
                name,
                actor: CallActor::Subagent(1),
                ..
            } if name == "write" => Some(call_id.clone()),
            _ => None,
        })
        .next_back()
        .expect("the subagent's writes");
    assert_eq!(
        std::fs::read_to_string(h.ws.join("notes.txt")).unwrap(),
        "overwritten\n"
    );
    // Its second write changes the workspace its first one changed: the checkpoint taken
    // before it holds the draft and the user's notes, so a rewind brings them back.
    let before = h
        .runtime
        .checkpoints(s.id())
        .unwrap()
        .into_iter()
        .find(|c| c.call_id.as_deref() == Some(write_id.as_str()));
    assert!(
        before.is_some(),
        "no checkpoint before the subagent's write: {:#?}",
        h.runtime.checkpoints(s.id()).unwrap()
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_subagent_cannot_act_on_the_session_itself() {
    let h = Harness::new(Config::default());
    // Plan mode's entry and exit ask the user and change the session's mode: not a
    // subagent's to call, even in `auto`.
    let s = session(
        &h,
        PermissionMode::Auto,
        json!([
            call("delegate", json!({"task": "plan it"})),
            call("EnterPlanMode", json!({})),
            call("ExitPlanMode", json!({})),
            {"text": "could not"},
            {"text": "done"}
        ]),
    );
    let ev = run(&s, user("go")).await;
    let r = by_actor(&ev);
    assert_eq!(r.len(), 3, "{r:#?}");
    for denied in &r[..2] {
        assert_eq!(denied.2, ToolStatus::Denied, "{r:#?}");
        assert!(denied.3.contains("acts on the session itself"), "{r:#?}");
    }
    assert!(
        !ev.iter()
            .any(|e| matches!(e.kind, EventKind::QuestionnaireOpened { .. })),
        "a subagent asked the user"
    );
    let mode = h.runtime.snapshot(s.id()).unwrap().summary.interaction_mode;
    assert_eq!(mode, waymark_protocol::InteractionMode::Default);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn stop_during_a_subagents_call_runs_none_of_its_next_calls() {
    let h = Harness::new(Config::default());
    let s = session(
        &h,
        PermissionMode::Auto,
        json!([
            call("delegate", json!({"task": "work"})),
            {"tool_calls": [
                {"name": "pull_the_plug", "arguments": {}},
                {"name": "write", "arguments": {"path": "after-stop.txt", "content": "x"}}
            ]},
            {"text": "never asked"},
            {"text": "never asked either"}
        ]),
    );
    let ev = run(&s, user("go")).await;
    assert!(
        !h.ws.join("after-stop.txt").exists(),
        "{:#?}",
        by_actor(&ev)
    );
    assert_eq!(
        super::harness::finished(&ev),
        vec![(waymark_protocol::TurnEndReason::Aborted, None)]
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_subagents_tokens_are_the_turns_and_its_goals_budget_stops_it() {
    let mut config = Config::default();
    config.goal.verification = Some(waymark_config::Verification::None);
    let h = Harness::new(config.clone());
    let s = session_with(
        &h,
        config,
        PermissionMode::Auto,
        json!([
            {"usage": {"input_tokens": 10, "output_tokens": 10},
             "tool_calls": [{"name": "delegate", "arguments": {"task": "all of it"}}]},
            {"text": "big step", "usage": {"input_tokens": 900, "output_tokens": 200},
             "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
            {"text": "Summary: the subagent used the budget.", "usage": {"input_tokens": 50, "output_tokens": 20}},
            {"text": "not reached"}
        ]),
    );
    let ev = run(&s, user("/goal big job budget=1K")).await;
    let r = by_actor(&ev);
    // Over budget after its first call: its tool is refused, and it makes no second call.
    assert_eq!(r[0].0, CallActor::Subagent(1), "{r:#?}");
    assert_eq!(r[0].2, ToolStatus::Denied, "{r:#?}");
    assert!(r[0].3.contains("Tools are disabled"), "{r:#?}");
    assert_eq!(r[1].1, "delegate", "{r:#?}");
    assert!(r[1].3.contains("budget_spent"), "{r:#?}");
    // Its tokens counted toward the goal, which is stopped by its budget.
    let g = h.runtime.goal(s.id()).unwrap().expect("a goal");
    assert_eq!(
        g.status,
        waymark_protocol::GoalStatus::BudgetLimited,
        "{g:#?}"
    );
    assert!(g.budget.tokens.used >= 1100, "{g:#?}");
    s.shutdown().await.unwrap();
}

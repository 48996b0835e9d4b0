//! Plan mode end to end in-process with the scripted model: one or more tests per spec
//! requirement, named after its id.

#![allow(unused_imports)] // the shared imports serve the submodules

mod beyond;
mod entry;
mod guard;
mod review;
mod sandbox;

use super::harness::{Harness, collect, finished, questionnaire, results, run, user, waiting_on};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use waymark_config::Config;
use waymark_protocol::{
    Answer, EventKind, Intent, InteractionMode, MessageSource, Op, PermissionMode, Position,
    QuestionnaireKind, ToolStatus, TurnEndReason,
};
use waymark_runtime::provider::ModelMessage;
use waymark_runtime::{SessionHandle, SessionSpec};

pub(super) const PLAN: &str = "${session_dir}/artifacts/plan.md";

pub(super) const GOOD_PLAN: &str =
    "## Summary\nRename the greeting.\n\n## Approach\nEdit src/greet.txt.\n";

pub(super) fn plan_entry(text: &str) -> Op {
    Op::Submit {
        text: text.into(),
        source: MessageSource::User,
        position: Position::Tail,
        idempotency_key: None,
        intent: Some(Intent::PlanEntry),
        images: Vec::new(),
    }
}

pub(super) fn system(text: &str) -> Op {
    Op::Submit {
        text: text.into(),
        source: MessageSource::System,
        position: Position::Tail,
        idempotency_key: None,
        intent: None,
        images: Vec::new(),
    }
}

/// Approve the plan as an ordinary task (no option, not as a goal).
pub(super) fn approve() -> Answer {
    Answer::Approve {
        option: None,
        as_goal: None,
        handed_to: None,
    }
}

pub(super) fn answer(qid: &str, answer: Answer) -> Op {
    Op::Answer {
        questionnaire_id: qid.into(),
        answer,
    }
}

pub(super) fn session_dir(h: &Harness, s: &SessionHandle) -> PathBuf {
    h.session_dir(s.id())
}

pub(super) fn plan_file(h: &Harness, s: &SessionHandle) -> PathBuf {
    session_dir(h, s).join("artifacts/plan.md")
}

pub(super) fn mode(h: &Harness, s: &SessionHandle) -> InteractionMode {
    h.runtime.snapshot(s.id()).unwrap().summary.interaction_mode
}

pub(super) fn messages(h: &Harness, s: &SessionHandle) -> Vec<waymark_protocol::MessageInfo> {
    h.runtime.snapshot(s.id()).unwrap().messages
}

/// A script that writes `plan` to the plan file and submits it.
pub(super) fn write_and_exit(plan: &str) -> Value {
    json!({"text": "Writing the plan.", "tool_calls": [
        {"name": "write", "arguments": {"path": PLAN, "content": plan}},
        {"name": "ExitPlanMode", "arguments": {}}
    ]})
}

pub(super) fn with_plan_script(rest: Vec<Value>) -> Value {
    let mut responses = vec![write_and_exit(GOOD_PLAN)];
    responses.extend(rest);
    json!({ "responses": responses })
}

/// Enters plan mode with a prompt, lets the script write and submit the plan; returns the
/// approval questionnaire.
pub(super) async fn to_approval(h: &Harness, s: &SessionHandle) -> String {
    let ev = run(s, plan_entry("plan the rename")).await;
    assert_eq!(
        finished(&ev),
        vec![(TurnEndReason::Terminated, None)],
        "{ev:#?}"
    );
    let q = waiting_on(&ev);
    assert_eq!(kind_of(h, s, &q), QuestionnaireKind::PlanApproval);
    q
}

pub(super) fn kind_of(h: &Harness, s: &SessionHandle, q: &str) -> QuestionnaireKind {
    questionnaire(h, s, q).kind
}

pub(super) async fn offered_tools(config: Config, enter_plan: bool) -> (Vec<String>, String) {
    let (h, rec) = Harness::recording(
        config,
        json!({"responses": [{"text": "ok"}, {"text": "ok"}]}),
    );
    let s = h.recorded_session(PermissionMode::AutoEdit);
    run(
        &s,
        if enter_plan {
            plan_entry("x")
        } else {
            user("x")
        },
    )
    .await;
    let req = rec.requests.lock().unwrap()[0].clone();
    s.shutdown().await.unwrap();
    (
        req.tools.iter().map(|t| t.name.clone()).collect(),
        req.system,
    )
}

pub(super) fn first_user_text(req: &waymark_runtime::provider::ModelRequest) -> String {
    req.messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ModelMessage::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap()
}

/// Hashes every file under `root` except `skip`.
pub(super) fn tree_hash(root: &Path, skip: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            // The plan file may change; the scripted model keeps its position beside it, and
            // the runtime its checkpoints of the workspace (no tool writes there).
            if p == skip
                || p.file_name()
                    .is_some_and(|n| n == "scripted-model.cursor.json")
                || p == waymark_runtime::checkpoint::store_dir(root)
            {
                continue;
            }
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_symlink() {
                out.push((
                    p.clone(),
                    format!("link:{}", std::fs::read_link(&p).unwrap().display()),
                ));
            } else {
                out.push((
                    p.clone(),
                    waymark_runtime::plan::db::sha256_hex(&std::fs::read(&p).unwrap()),
                ));
            }
        }
    }
    out.sort();
    out
}

pub(super) fn bash(cmd: &str) -> Value {
    json!({"name": "bash", "arguments": {"command": cmd}})
}

pub(super) async fn outcome(
    reply: Answer,
) -> (Harness, SessionHandle, Vec<waymark_protocol::Event>) {
    let h = Harness::new(Config::default());
    let s = h.session(
        with_plan_script(vec![
            json!({"text": "next turn"}),
            json!({"text": "and another"}),
        ]),
        PermissionMode::AutoEdit,
    );
    let q = to_approval(&h, &s).await;
    let ev = run(&s, answer(&q, reply)).await;
    (h, s, ev)
}

pub(super) fn implementation_messages(h: &Harness, s: &SessionHandle) -> usize {
    messages(h, s)
        .iter()
        .filter(|m| m.text.starts_with("Implement the plan below"))
        .count()
}

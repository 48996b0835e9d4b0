//! The async policy stage (issue 40): an extension's policies see a call before the guard
//! chain, and may refuse it, have the user asked, or rewrite its input. A rewrite is stored,
//! with its new digest, before anything runs, so a session reopened after it runs the
//! rewritten call; a policy only narrows (its question holds in `auto`, the user's "deny"
//! included).

use super::harness::{Harness, results, run};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use waymark_config::Config;
use waymark_protocol::{Answer, EventKind, Op, PermissionMode, Question, ToolStatus};
use waymark_runtime::extension::policy::{CallPolicy, PolicyCall, Verdict};
use waymark_runtime::extension::{Extension, SessionApi};
use waymark_runtime::{Result, Runtime, SessionHandle, SessionSpec};

/// Moves a write of `a.txt` under `safe/`.
struct Redirect;

impl CallPolicy for Redirect {
    fn name(&self) -> &'static str {
        "redirect"
    }
    fn review<'a>(
        &'a self,
        _api: &'a SessionApi,
        call: &'a PolicyCall<'a>,
    ) -> BoxFuture<'a, Result<Verdict>> {
        Box::pin(async move {
            let mut args = call.call.arguments.clone();
            Ok(if call.call.name == "write" && args["path"] == "a.txt" {
                args["path"] = json!("safe/a.txt");
                Verdict::Rewrite(args)
            } else {
                Verdict::Pass
            })
        })
    }
}

/// Asks about every write; refuses the shell.
struct Confirm;

impl CallPolicy for Confirm {
    fn name(&self) -> &'static str {
        "confirm"
    }
    fn review<'a>(
        &'a self,
        _api: &'a SessionApi,
        call: &'a PolicyCall<'a>,
    ) -> BoxFuture<'a, Result<Verdict>> {
        Box::pin(async move {
            Ok(match call.call.name.as_str() {
                "write" => Verdict::Ask("writes are confirmed here".into()),
                "bash" => Verdict::Deny("no shell in this project".into()),
                _ => Verdict::Pass,
            })
        })
    }
}

struct Rails;

impl Extension for Rails {
    fn name(&self) -> &'static str {
        "rails"
    }
    fn call_policies(&self) -> Vec<Arc<dyn CallPolicy>> {
        vec![Arc::new(Redirect), Arc::new(Confirm)]
    }
}

/// A runtime with the policies, and an `auto` session whose model makes `call` once.
fn session(h: &Harness, call: Value) -> (Runtime, SessionHandle) {
    let mut opts = h.runtime.options().clone();
    opts.extensions = vec![Arc::new(Rails)];
    let runtime = Runtime::open(opts).unwrap();
    let s = runtime
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(h.script(json!({"responses": [
                {"tool_calls": [call]},
                {"text": "done"}
            ]}))),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    (runtime, s)
}

fn sha256_of(name: &str, arguments: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0]);
    h.update(arguments.to_string().as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The permission question opened, with its id.
fn asked(events: &[waymark_protocol::Event]) -> (String, waymark_protocol::PermissionQuestion) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::QuestionnaireOpened { id, question } => match question.as_ref() {
                Question::Permission(q) => Some((id.clone(), q.clone())),
                _ => None,
            },
            _ => None,
        })
        .expect("a permission question")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_call_is_stored_before_it_runs_and_a_reopened_session_runs_it() {
    let h = Harness::new(Config::default());
    let call = json!({"name": "write", "arguments": {"path": "a.txt", "content": "x\n"}});
    let (runtime, s) = session(&h, call);
    let events = run(&s, waymark_test_support::harness::user("write it")).await;
    // Asked in `auto` (the policy said so), about the rewritten input, bound to its digest.
    let (qid, q) = asked(&events);
    let rewritten = json!({"path": "safe/a.txt", "content": "x\n"});
    assert_eq!(q.arguments, rewritten);
    assert_eq!(q.call_sha256, sha256_of("write", &rewritten));
    assert!(
        q.summary.contains("writes are confirmed here"),
        "{}",
        q.summary
    );
    // Stored before anything ran: the history holds the rewritten input.
    let id = s.id().to_string();
    let stored = runtime
        .store()
        .read(|c| Ok::<_, waymark_runtime::Error>(waymark_runtime::store::turns::history(c, &id)?))
        .unwrap();
    let args: Vec<Value> = stored
        .iter()
        .filter_map(|(_, item)| match item {
            waymark_runtime::store::HistoryItem::Assistant { tool_calls, .. } => Some(
                tool_calls
                    .iter()
                    .map(|c| c.arguments.clone())
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(args, vec![rewritten.clone()]);
    assert!(!h.ws.join("a.txt").exists() && !h.ws.join("safe").exists());

    // The process goes away while the question waits; a new one answers it.
    s.shutdown().await.unwrap();
    drop(runtime);
    let mut opts = h.runtime.options().clone();
    opts.extensions = vec![Arc::new(Rails)];
    let runtime = Runtime::open(opts).unwrap();
    let s = runtime.open_session(&id, SessionSpec::default()).unwrap();
    let events = run(
        &s,
        Op::Answer {
            questionnaire_id: qid,
            answer: Answer::AllowOnce,
        },
    )
    .await;
    let r = results(&events);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(h.ws.join("safe/a.txt")).unwrap(),
        "x\n"
    );
    assert!(!h.ws.join("a.txt").exists(), "the original input ran");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_refuses_a_call_and_the_users_deny_holds_in_auto() {
    let h = Harness::new(Config::default());
    let (_rt, s) = session(
        &h,
        json!({"name": "bash", "arguments": {"command": "touch ran"}}),
    );
    let r = results(&run(&s, waymark_test_support::harness::user("run it")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("no shell in this project"), "{r:?}");
    assert!(!h.ws.join("ran").exists());
    s.shutdown().await.unwrap();

    let (_rt, s) = session(
        &h,
        json!({"name": "write", "arguments": {"path": "b.txt", "content": "x\n"}}),
    );
    let (qid, _) = asked(&run(&s, waymark_test_support::harness::user("write b")).await);
    let r = results(
        &run(
            &s,
            Op::Answer {
                questionnaire_id: qid,
                answer: Answer::Deny { message: None },
            },
        )
        .await,
    );
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(!h.ws.join("b.txt").exists(), "a denied write ran in auto");
    s.shutdown().await.unwrap();
}

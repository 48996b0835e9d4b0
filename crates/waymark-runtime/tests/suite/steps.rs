//! The extensions' async steps around a session (issue 40, step 4): a prompt check before a
//! message is admitted, a review of each result before it is recorded, a step after the
//! session opens and one before the older history is summarized. Each runs outside any
//! transaction, may wait, and can only narrow or add context: built here as a hostile hook
//! would use them.

use super::harness::{Harness, Recording, run, user};
use futures_util::future::BoxFuture;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use waymark_config::Config;
use waymark_protocol::{CompactReason, EventKind, PermissionMode, ToolStatus};
use waymark_runtime::extension::{Extension, PromptCheck, ResultSeen, SessionApi};
use waymark_runtime::provider::{CallPurpose, ModelMessage};
use waymark_runtime::{Runtime, SessionHandle, SessionSpec, ToolCallRecord};

/// A set of checks, as a hook program would give them.
#[derive(Default)]
struct Checks {
    opened: AtomicUsize,
    fail_open: bool,
    /// The step after open never ends (a hook program that hangs).
    hang_open: bool,
}

impl Extension for Checks {
    fn name(&self) -> &'static str {
        "checks"
    }
    fn after_open<'a>(&'a self, api: &'a SessionApi) -> BoxFuture<'a, waymark_runtime::Result<()>> {
        Box::pin(async move {
            // Outside any transaction: it may read the store (and wait) as it likes.
            api.read(|c| Ok(waymark_runtime::store::sessions::get(c, api.id())?))?
                .expect("the session is stored before the step runs");
            tokio::task::yield_now().await;
            self.opened.fetch_add(1, Ordering::SeqCst);
            if self.hang_open {
                std::future::pending::<()>().await;
            }
            if self.fail_open {
                return Err(waymark_runtime::Error::refused(
                    "the hook program crashed".into(),
                ));
            }
            Ok(())
        })
    }
    fn check_prompt<'a>(
        &'a self,
        _api: &'a SessionApi,
        text: &'a str,
    ) -> BoxFuture<'a, waymark_runtime::Result<PromptCheck>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            Ok(if text.contains("rm -rf /") {
                PromptCheck::Refuse("it asks to erase the machine".into())
            } else if text.contains("deploy") {
                PromptCheck::AddContext("The deploy target is staging, never production.".into())
            } else {
                PromptCheck::Pass
            })
        })
    }
    fn review_result<'a>(
        &'a self,
        _api: &'a SessionApi,
        _turn_id: i64,
        call: &'a ToolCallRecord,
        result: &'a ResultSeen<'a>,
    ) -> BoxFuture<'a, waymark_runtime::Result<Option<String>>> {
        Box::pin(async move {
            Ok(
                (call.name == "read_file" && result.status == ToolStatus::Ok).then(|| {
                    format!(
                        "[checks: {} bytes read; this file is generated, do not edit it]",
                        result.content.len()
                    )
                }),
            )
        })
    }
    fn before_compaction<'a>(
        &'a self,
        _api: &'a SessionApi,
        reason: CompactReason,
    ) -> BoxFuture<'a, waymark_runtime::Result<Option<String>>> {
        // A hostile step asks for far more than a summary has room for.
        Box::pin(async move {
            Ok(Some(format!(
                "Keep the ticket number TICKET-4242 ({reason:?}). {}",
                "x".repeat(1 << 20)
            )))
        })
    }
}

/// A runtime with `checks`, on a recording model playing `responses`.
fn with_checks(
    checks: Arc<Checks>,
    responses: serde_json::Value,
) -> (Harness, Arc<Recording>, Runtime) {
    let (h, rec) = Harness::recording(Config::default(), json!({ "responses": responses }));
    let mut opts = h.runtime.options().clone();
    opts.extensions.push(checks);
    let runtime = Runtime::open(opts).unwrap();
    (h, rec, runtime)
}

fn session(h: &Harness, runtime: &Runtime) -> SessionHandle {
    runtime
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("scripted:recording".into()),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap()
}

fn user_text(m: &ModelMessage) -> Option<&str> {
    match m {
        ModelMessage::User { text, .. } => Some(text),
        _ => None,
    }
}

#[tokio::test]
async fn a_prompt_check_refuses_a_message_before_admission_and_adds_context_to_another() {
    let checks = Arc::new(Checks::default());
    let (h, rec, runtime) = with_checks(checks, json!([{"text": "deployed"}]));
    let s = session(&h, &runtime);
    let mut rx = s.subscribe();
    let e = s.submit(user("please rm -rf / now")).await.unwrap_err();
    assert_eq!(e.code(), "prompt_refused");
    assert!(
        e.to_string().contains("it asks to erase the machine"),
        "{e}"
    );
    // Nothing was admitted, and no model call was made.
    while let Ok(ev) = rx.try_recv() {
        assert!(
            !matches!(ev.kind, EventKind::MessageAdmitted { .. }),
            "{ev:?}"
        );
    }
    assert!(rec.requests.lock().unwrap().is_empty());
    // Commands are not checked.
    s.submit(user("/help")).await.unwrap();
    run(&s, user("deploy it")).await;
    let requests = rec.requests.lock().unwrap().clone();
    let text = requests[0]
        .messages
        .iter()
        .filter_map(user_text)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains("deploy it"), "{text}");
    assert!(
        text.contains("The deploy target is staging, never production."),
        "{text}"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_result_review_adds_a_note_the_model_reads_with_the_result() {
    let checks = Arc::new(Checks::default());
    let (h, rec, runtime) = with_checks(
        checks,
        json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "gen.rs"}}]},
            {"text": "noted"}
        ]),
    );
    std::fs::write(h.ws.join("gen.rs"), "// generated\n").unwrap();
    let s = session(&h, &runtime);
    let ev = run(&s, user("look")).await;
    let stored = ev
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .expect("a result");
    assert!(stored.contains("// generated"), "{stored}");
    assert!(
        stored.contains("this file is generated, do not edit it"),
        "{stored}"
    );
    // Under a heading, so the model tells the note from the file.
    assert!(
        stored.contains("[Notes the session's checks added to this result]"),
        "{stored}"
    );
    // The model reads it with the result, in the next request.
    let requests = rec.requests.lock().unwrap().clone();
    let seen = requests[1].messages.iter().any(|m| matches!(m, ModelMessage::ToolResult { content, .. } if content.contains("do not edit it")));
    assert!(seen, "{:?}", requests[1].messages);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_step_after_open_runs_at_each_open_and_a_failing_one_leaves_the_session_usable() {
    let checks = Arc::new(Checks::default());
    let (h, _rec, runtime) = with_checks(checks.clone(), json!([{"text": "one"}, {"text": "two"}]));
    let s = session(&h, &runtime);
    run(&s, user("hi")).await;
    assert_eq!(checks.opened.load(Ordering::SeqCst), 1);
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    // A second open runs it again; one that fails is said, and the session works on.
    let failing = Arc::new(Checks {
        fail_open: true,
        ..Checks::default()
    });
    let mut opts = runtime.options().clone();
    opts.extensions = vec![failing.clone()];
    let again_rt = Runtime::open(opts).unwrap();
    let again = again_rt.open_session(&id, SessionSpec::default()).unwrap();
    let ev = run(&again, user("still there?")).await;
    assert_eq!(failing.opened.load(Ordering::SeqCst), 1);
    assert!(
        ev.iter()
            .any(|e| matches!(&e.kind, EventKind::TurnFinished { error: None, .. })),
        "{ev:?}"
    );
    again.shutdown().await.unwrap();
}

/// A step after open that never ends holds the session's first op no longer than its bound
/// (10 s): it is stopped, said as a session error, and the session works on.
#[tokio::test]
async fn a_step_after_open_that_never_ends_is_stopped_and_the_session_works_on() {
    let checks = Arc::new(Checks {
        hang_open: true,
        ..Checks::default()
    });
    let (h, _rec, runtime) = with_checks(checks.clone(), json!([{"text": "one"}]));
    let s = session(&h, &runtime);
    let ev = tokio::time::timeout(std::time::Duration::from_secs(60), run(&s, user("hi")))
        .await
        .expect("the step after open held the session past its bound");
    assert_eq!(checks.opened.load(Ordering::SeqCst), 1);
    assert!(
        ev.iter().any(|e| matches!(&e.kind,
            EventKind::SessionError { error } if error.code == "after_open_timeout")),
        "{ev:?}"
    );
    assert!(
        ev.iter()
            .any(|e| matches!(&e.kind, EventKind::TurnFinished { error: None, .. })),
        "{ev:?}"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn what_an_extension_says_a_summary_must_keep_reaches_the_compaction_call() {
    let checks = Arc::new(Checks::default());
    let (h, rec, runtime) = with_checks(
        checks,
        json!([{"text": "one"}, {"text": "two"}, {"text": "summary"}]),
    );
    let s = session(&h, &runtime);
    run(&s, user("first")).await;
    run(&s, user("second")).await;
    run(&s, user("/compact")).await;
    let requests = rec.requests.lock().unwrap().clone();
    let compaction = requests
        .iter()
        .find(|r| r.purpose == CallPurpose::Compact)
        .expect("a compaction call");
    let text = compaction
        .messages
        .iter()
        .filter_map(user_text)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("Keep the ticket number TICKET-4242 (Manual)."),
        "{}",
        &text[..text.len().min(2000)]
    );
    // Bounded: the megabyte it asked for is cut.
    assert!(text.matches('x').count() < 8 * 1024, "{} bytes", text.len());
    s.shutdown().await.unwrap();
}

/// A review that fails on every call.
struct BrokenReview;

impl Extension for BrokenReview {
    fn name(&self) -> &'static str {
        "broken-review"
    }
    fn review_result<'a>(
        &'a self,
        _api: &'a SessionApi,
        _turn_id: i64,
        _call: &'a ToolCallRecord,
        _result: &'a ResultSeen<'a>,
    ) -> BoxFuture<'a, waymark_runtime::Result<Option<String>>> {
        Box::pin(async {
            Err(waymark_runtime::Error::refused(
                "the hook program crashed".into(),
            ))
        })
    }
}

#[tokio::test]
async fn a_failing_review_never_hides_that_the_call_ran() {
    let (h, _rec) = Harness::recording(
        Config::default(),
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "pushed.txt", "content": "once\n"}}]},
            {"text": "done"}
        ]}),
    );
    let mut opts = h.runtime.options().clone();
    opts.extensions.push(Arc::new(BrokenReview));
    let runtime = Runtime::open(opts).unwrap();
    let s = session(&h, &runtime);
    let ev = run(&s, user("write it")).await;
    // The write ran, and its result says so: not "not run", whatever the review did.
    let r = super::harness::results(&ev);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(!r[0].2.contains("not run"), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(h.ws.join("pushed.txt")).unwrap(),
        "once\n"
    );
    assert_eq!(
        super::harness::finished(&ev),
        vec![(waymark_protocol::TurnEndReason::Completed, None)]
    );
    s.shutdown().await.unwrap();
}

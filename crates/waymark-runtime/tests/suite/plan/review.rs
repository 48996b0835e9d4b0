//! Review tests.

#![allow(unused_imports)]

use super::*;

use super::super::harness::{
    Harness, collect, finished, questionnaire, results, run, user, waiting_on,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use waymark_config::Config;
use waymark_protocol::{
    Answer, EventKind, Intent, InteractionMode, MessageSource, Op, PermissionMode, Position,
    QuestionnaireKind, ToolStatus, TurnEndReason,
};
use waymark_runtime::provider::ModelMessage;
use waymark_runtime::{SessionHandle, SessionSpec};

#[tokio::test]
async fn pm_15_exit_without_a_summary_is_an_error_the_model_can_fix() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "ExitPlanMode", "arguments": {}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": PLAN, "content": "# Plan\nno summary heading\n"}}, {"name": "ExitPlanMode", "arguments": {}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": PLAN, "content": "## Summary\n\n## Steps\n"}}, {"name": "ExitPlanMode", "arguments": {}}]},
            {"tool_calls": [{"name": "ExitPlanMode", "arguments": {"options": ["a", "b", "c", "d"]}}]},
            write_and_exit(GOOD_PLAN)
        ]}),
        PermissionMode::AutoEdit,
    );
    let ev = run(&s, plan_entry("plan")).await;
    let r = results(&ev);
    let errors: Vec<&String> = r
        .iter()
        .filter(|x| x.0 == "ExitPlanMode" && x.1 == ToolStatus::Error)
        .map(|x| &x.2)
        .collect();
    assert_eq!(errors.len(), 4, "{r:#?}");
    assert!(errors[0].contains("empty"));
    assert!(errors[1].contains("must begin with a `## Summary`"));
    assert!(errors[2].contains("section is empty"));
    assert!(errors[3].contains("at most 3 options"));
    assert_eq!(
        kind_of(&h, &s, &waiting_on(&ev)),
        QuestionnaireKind::PlanApproval
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_15_exit_is_refused_outside_plan_mode_and_with_a_queued_message() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"text": "writing", "delay_ms": 300, "tool_calls": [{"name": "write", "arguments": {"path": PLAN, "content": GOOD_PLAN}}, {"name": "ExitPlanMode", "arguments": {}}]},
            {"text": "saw it"}
        ]}),
        PermissionMode::AutoEdit,
    );
    let mut rx = s.subscribe();
    s.submit(plan_entry("plan")).await.unwrap();
    // The user adds a message while the model is still writing.
    s.submit(system("one more thing")).await.unwrap();
    let ev = collect(&mut rx).await;
    let r = results(&ev);
    let exit = r.iter().find(|x| x.0 == "ExitPlanMode").unwrap();
    assert_eq!(exit.1, ToolStatus::Error);
    assert!(
        exit.2.contains("messages are waiting in the queue"),
        "{exit:?}"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_16_revisions_are_blobs_with_an_event_carrying_the_hash_not_the_body() {
    let h = Harness::new(Config::default());
    let s = h.session(with_plan_script(vec![]), PermissionMode::AutoEdit);
    let mut rx = s.subscribe();
    s.submit(plan_entry("plan")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    let ev = collect(&mut rx).await;
    let rev = ev
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PlanRevision {
                plan_id,
                version,
                key,
                sha256,
                bytes,
                ..
            } => Some((
                plan_id.clone(),
                *version,
                key.clone(),
                sha256.clone(),
                *bytes,
            )),
            _ => None,
        })
        .unwrap();
    assert_eq!(rev.1, 1);
    assert_eq!(rev.2, format!("plan/{}/v1.md", rev.0));
    assert_eq!(
        rev.3,
        waymark_runtime::plan::db::sha256_hex(GOOD_PLAN.as_bytes())
    );
    assert_eq!(rev.4, GOOD_PLAN.len() as u64);
    let text = h.runtime.plan_revision_text(s.id(), None, 1).unwrap();
    assert_eq!(text, GOOD_PLAN);
    let log = serde_json::to_string(&h.runtime.events(s.id(), 0, 1000).unwrap()).unwrap();
    assert!(
        !log.contains("Rename the greeting\\n\\n## Approach"),
        "no event carries the plan body"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_17_approve_inserts_the_implementation_at_the_head_and_leaves_plan_mode() {
    let (h, s, ev) = outcome(approve()).await;
    assert_eq!(mode(&h, &s), InteractionMode::Default);
    assert_eq!(implementation_messages(&h, &s), 1);
    let m = messages(&h, &s)
        .into_iter()
        .find(|m| m.text.starts_with("Implement"))
        .unwrap();
    assert_eq!(m.source, MessageSource::Questionnaire);
    assert!(ev.iter().any(|e| matches!(
        &e.kind,
        EventKind::MessageAdmitted {
            position: Position::Head,
            ..
        }
    )));
    s.shutdown().await.unwrap();
}

/// While a review is pending, the runtime says whether the plan file still holds what was
/// submitted: a file changed behind the reviewer's back is flagged (approving implements
/// the submitted revision, not the file).
#[tokio::test]
async fn pm_16_a_plan_file_changed_after_submission_is_flagged_during_review() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [write_and_exit(GOOD_PLAN)]}),
        PermissionMode::AutoEdit,
    );
    assert_eq!(h.runtime.plan_under_review(s.id()).unwrap(), None);
    run(&s, plan_entry("plan")).await;
    let review = h.runtime.plan_under_review(s.id()).unwrap().unwrap();
    assert_eq!((review.version, review.file_changed), (1, false));
    std::fs::write(plan_file(&h, &s), "## Summary\nSomething else entirely.\n").unwrap();
    let review = h.runtime.plan_under_review(s.id()).unwrap().unwrap();
    assert_eq!((review.version, review.file_changed), (1, true));
    std::fs::remove_file(plan_file(&h, &s)).unwrap();
    assert!(
        h.runtime
            .plan_under_review(s.id())
            .unwrap()
            .unwrap()
            .file_changed
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_17_defer_stays_in_plan_mode_and_changes_nothing() {
    let (h, s, ev) = outcome(Answer::Defer).await;
    assert_eq!(mode(&h, &s), InteractionMode::Plan);
    assert_eq!(implementation_messages(&h, &s), 0);
    assert!(
        !ev.iter()
            .any(|e| matches!(e.kind, EventKind::TurnStarted { .. }))
    );
    assert!(matches!(ev.last().unwrap().kind, EventKind::SessionIdle {}));
    s.shutdown().await.unwrap();
}

/// "Review again" after "Not now" opens the same revision's review at once, with no model
/// turn; approving it then implements the frozen plan. It is refused with nothing put off
/// and while a review already waits.
#[tokio::test]
async fn pm_17_review_again_after_not_now_asks_at_once_without_a_model_turn() {
    let h = Harness::new(Config::default());
    let s = h.session(
        with_plan_script(vec![json!({"text": "implementing"})]),
        PermissionMode::AutoEdit,
    );
    let refused = s.submit(Op::ReviewPlanAgain).await.unwrap_err().to_string();
    assert!(refused.contains("not planning"), "{refused}");
    let q1 = to_approval(&h, &s).await;
    let again = s.submit(Op::ReviewPlanAgain).await.unwrap_err().to_string();
    assert!(again.contains("waits for an answer"), "{again}");
    run(&s, answer(&q1, Answer::Defer)).await;
    let ev = run(&s, Op::ReviewPlanAgain).await;
    assert!(
        !ev.iter()
            .any(|e| matches!(e.kind, EventKind::TurnStarted { .. })),
        "no model turn: {ev:#?}"
    );
    let q2 = waiting_on(&ev);
    assert_ne!(q2, q1);
    let (first, second) = (questionnaire(&h, &s, &q1), questionnaire(&h, &s, &q2));
    assert_eq!(second.payload["version"], first.payload["version"]);
    assert_eq!(second.payload["sha256"], first.payload["sha256"]);
    let ev = run(&s, answer(&q2, approve())).await;
    assert_eq!(implementation_messages(&h, &s), 1);
    assert_eq!(mode(&h, &s), InteractionMode::Default);
    assert!(
        ev.iter()
            .any(|e| matches!(e.kind, EventKind::TurnStarted { .. })),
        "the approved plan is implemented"
    );
    // Once answered, there is nothing put off to review again.
    let late = s.submit(Op::ReviewPlanAgain).await.unwrap_err().to_string();
    assert!(late.contains("not planning"), "{late}");
    s.shutdown().await.unwrap();
}

/// "Review again" after the user's own edit reviews that edit (PM-23), not the revision
/// put off; and it never opens while a message waits to start a turn.
#[tokio::test]
async fn pm_17_review_again_reviews_the_users_own_edit_and_waits_for_queued_work() {
    let h = Harness::new(Config::default());
    let s = h.session(
        // The reply to the later message is slow, so its turn is still to come or running
        // when Review again is asked for.
        with_plan_script(vec![json!({"text": "noted", "delay_ms": 3000})]),
        PermissionMode::AutoEdit,
    );
    let q1 = to_approval(&h, &s).await;
    run(&s, answer(&q1, Answer::Defer)).await;
    s.submit(Op::EditPlan {
        text: "## Summary\nThe user's own plan.\n\n## Steps\n1. Only this\n".into(),
    })
    .await
    .unwrap();
    let q2 = waiting_on(&run(&s, Op::ReviewPlanAgain).await);
    let second = questionnaire(&h, &s, &q2);
    assert_eq!(second.payload["version"], 2, "{:?}", second.payload);
    assert_eq!(second.payload["steps"], json!(["Only this"]));
    // Put off again, then a message of the user's waits in the queue: no review opens
    // under the turn it is about to start.
    run(&s, answer(&q2, Answer::Defer)).await;
    s.submit(user("one more thing")).await.unwrap();
    let busy = s.submit(Op::ReviewPlanAgain).await.unwrap_err().to_string();
    assert!(busy.contains("still working"), "{busy}");
    s.shutdown().await.unwrap();
}

/// After "Not now", the plan submitted again unchanged is the same revision (the comments
/// drafted on it still apply); a changed one is the next.
#[tokio::test]
async fn pm_17_a_plan_submitted_again_unchanged_after_not_now_is_the_same_revision() {
    let h = Harness::new(Config::default());
    let exit = json!({"tool_calls": [{"name": "ExitPlanMode", "arguments": {}}]});
    let s = h.session(
        json!({"responses": [write_and_exit(GOOD_PLAN), exit, write_and_exit("## Summary\nChanged.\n")]}),
        PermissionMode::AutoEdit,
    );
    let version = |h: &Harness, q: &str| questionnaire(h, &s, q).payload["version"].as_u64();
    let q1 = waiting_on(&run(&s, plan_entry("plan the rename")).await);
    assert_eq!(version(&h, &q1), Some(1));
    run(&s, answer(&q1, Answer::Defer)).await;
    let q2 = waiting_on(&run(&s, user("submit it again")).await);
    assert_eq!(version(&h, &q2), Some(1), "unchanged: the same revision");
    run(&s, answer(&q2, Answer::Defer)).await;
    let q3 = waiting_on(&run(&s, user("change it")).await);
    assert_eq!(version(&h, &q3), Some(2));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_17_revise_continues_in_plan_mode_with_the_feedback() {
    let (h, s, ev) = outcome(Answer::Revise {
        text: "cover the docs too".into(),
        comments: Vec::new(),
    })
    .await;
    assert_eq!(mode(&h, &s), InteractionMode::Plan);
    let msg = messages(&h, &s).into_iter().last().unwrap();
    assert!(msg.text.contains("cover the docs too") && msg.source == MessageSource::Questionnaire);
    assert!(
        ev.iter()
            .any(|e| matches!(e.kind, EventKind::TurnStarted { .. })),
        "a continuation turn runs"
    );
    assert_eq!(implementation_messages(&h, &s), 0);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_17_reject_and_withdraw_leave_plan_mode_without_implementing() {
    for reply in [Answer::Reject, Answer::Withdraw] {
        let (h, s, _) = outcome(reply).await;
        assert_eq!(mode(&h, &s), InteractionMode::Default);
        assert_eq!(implementation_messages(&h, &s), 0);
        s.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn pm_17_options_are_offered_and_the_choice_reaches_the_implementation() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": PLAN, "content": GOOD_PLAN}}, {"name": "ExitPlanMode", "arguments": {"options": ["Small patch", "Full rewrite"]}}]},
            {"text": "done"}
        ]}),
        PermissionMode::AutoEdit,
    );
    let ev = run(&s, plan_entry("plan")).await;
    let q = waiting_on(&ev);
    let e = s
        .submit(answer(
            &q,
            Answer::Approve {
                option: Some(3),
                as_goal: None,
                handed_to: None,
            },
        ))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("1..2"), "{e}");
    run(
        &s,
        answer(
            &q,
            Answer::Approve {
                option: Some(2),
                as_goal: None,
                handed_to: None,
            },
        ),
    )
    .await;
    let m = messages(&h, &s)
        .into_iter()
        .find(|m| m.text.starts_with("Implement"))
        .unwrap();
    assert!(m.text.contains("The user chose option 2: Full rewrite"));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_18_fifty_concurrent_approvals_give_one_implementation_message() {
    let h = Harness::new(Config::default());
    let s = h.session(
        with_plan_script(vec![json!({"text": "implementing", "delay_ms": 200})]),
        PermissionMode::AutoEdit,
    );
    let q = to_approval(&h, &s).await;
    let s = std::sync::Arc::new(s);
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let s = s.clone();
        let q = q.clone();
        tasks.push(tokio::spawn(async move {
            s.submit(answer(&q, approve())).await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => assert_eq!(e.code(), "questionnaire_closed"),
        }
    }
    assert_eq!(ok, 1);
    assert_eq!(implementation_messages(&h, &s), 1);
}

#[test]
fn pm_18_racing_connections_cannot_admit_two_implementation_messages() {
    // Separate connections to one database file behave like separate processes.
    use waymark_runtime::store::Store;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let store = Store::open(&db).unwrap();
    store
        .write(1, |tx| {
            tx.create_session("s1", "/ws", None, PermissionMode::Ask)?;
            tx.open_questionnaire(
                "q1",
                "s1",
                None,
                &waymark_protocol::Question::PlanEntry(waymark_protocol::PlanEntryQuestion {
                    reason: None,
                }),
            )
        })
        .unwrap();
    let threads: Vec<_> = (0..50)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                let store = Store::open(&db).unwrap();
                store.write(2, |tx| {
                    tx.answer_questionnaire("q1", &approve())?;
                    tx.insert_message(
                        "s1",
                        MessageSource::Questionnaire,
                        "implement",
                        Position::Head,
                        Some("plan-approval:q1"),
                    )
                })
            })
        })
        .collect();
    let wins = threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(|r| r.is_ok())
        .count();
    assert_eq!(wins, 1, "exactly one connection's answer commits");
    let n: i64 = store
        .read(|c| {
            Ok::<_, waymark_runtime::Error>(c.query_row(
                "SELECT COUNT(*) FROM messages WHERE session_id = 's1'",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn pm_19_the_implementation_turn_gets_the_frozen_snapshot_not_later_edits() {
    let (h, rec) = Harness::recording(
        Config::default(),
        with_plan_script(vec![json!({"text": "implementing"})]),
    );
    let s = h.recorded_session(PermissionMode::AutoEdit);
    rec.inner.set_session_dir(&session_dir(&h, &s));
    let q = to_approval(&h, &s).await;
    let plan = plan_file(&h, &s);
    // Edits after the submission and after the approval never reach the implementation.
    std::fs::write(&plan, format!("{GOOD_PLAN}\nEDIT BEFORE APPROVAL\n")).unwrap();
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    let rt = h.reopen(|_| {});
    let held = rt
        .open_session(
            &id,
            SessionSpec {
                hold: true,
                ..SessionSpec::default()
            },
        )
        .unwrap();
    held.submit(answer(&q, approve())).await.unwrap();
    std::fs::write(&plan, format!("{GOOD_PLAN}\nEDIT AFTER APPROVAL\n")).unwrap();
    let mut rx = held.subscribe();
    held.submit(Op::Resume).await.unwrap();
    collect(&mut rx).await;
    let req = rec.requests.lock().unwrap().last().unwrap().clone();
    let sent = first_user_text(&req);
    assert!(!sent.contains("EDIT BEFORE APPROVAL") && !sent.contains("EDIT AFTER APPROVAL"));
    assert!(sent.contains("Approved plan:\n## Summary\nRename the greeting."));
    let sent = sent.replace(&plan.display().to_string(), "<plan file>");
    insta::assert_snapshot!("plan_implementation_message", sent);
    held.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_20_auto_mode_skips_the_review_and_says_so() {
    let h = Harness::new(Config::default());
    let s = h.session(
        with_plan_script(vec![json!({"text": "implementing now"})]),
        PermissionMode::Auto,
    );
    let ev = run(&s, plan_entry("plan")).await;
    let r = results(&ev);
    let exit = r.iter().find(|x| x.0 == "ExitPlanMode").unwrap();
    assert!(exit.2.contains("did not review"), "{exit:?}");
    assert!(
        !ev.iter()
            .any(|e| matches!(e.kind, EventKind::QuestionnaireOpened { .. }))
    );
    assert_eq!(mode(&h, &s), InteractionMode::Default);
    assert!(ev.iter().any(|e| matches!(&e.kind, EventKind::AssistantMessage { text, .. } if text == "implementing now")));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_21_leaving_directly_never_implements_and_withdraws_the_review() {
    let h = Harness::new(Config::default());
    let s = h.session(with_plan_script(vec![]), PermissionMode::AutoEdit);
    let q = to_approval(&h, &s).await;
    s.submit(user("/plan off")).await.unwrap();
    assert_eq!(mode(&h, &s), InteractionMode::Default);
    assert_eq!(implementation_messages(&h, &s), 0);
    let info = questionnaire(&h, &s, &q);
    assert_eq!(info.status, "withdrawn");
    // The plan-exit intent works the same way.
    s.submit(user("/plan on")).await.unwrap();
    s.submit(Op::Submit {
        text: "never mind".into(),
        source: MessageSource::User,
        position: Position::Tail,
        idempotency_key: None,
        intent: Some(Intent::PlanExit),
        images: Vec::new(),
    })
    .await
    .unwrap();
    assert_eq!(mode(&h, &s), InteractionMode::Default);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_23_a_user_edit_before_approval_is_what_gets_implemented() {
    let h = Harness::new(Config::default());
    let s = h.session(
        with_plan_script(vec![json!({"text": "implementing"})]),
        PermissionMode::AutoEdit,
    );
    let q = to_approval(&h, &s).await;
    let edited = "## Summary\nThe user's own version of the plan.\n";
    s.submit(Op::EditPlan {
        text: edited.into(),
    })
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(plan_file(&h, &s)).unwrap(), edited);
    let revs = h.runtime.plan_revisions(s.id()).unwrap();
    let last = revs.last().unwrap();
    assert_eq!((last.version, last.author.as_str()), (2, "user"));
    run(&s, answer(&q, approve())).await;
    let m = messages(&h, &s)
        .into_iter()
        .find(|m| m.text.starts_with("Implement"))
        .unwrap();
    assert!(
        m.text.ends_with(&format!("Approved plan:\n{edited}")),
        "{}",
        m.text
    );
    // Outside plan mode the plan cannot be edited.
    let e = s
        .submit(Op::EditPlan {
            text: "## Summary\nlate".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), "refused");
    s.shutdown().await.unwrap();
}

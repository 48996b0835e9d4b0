//! Forms a server sends during a call (MCP elicitation), asked as questionnaires: against
//! server-everything's `trigger-elicitation-request` and the hostile server's `forms` mode.

use super::super::harness::{Harness, collect, results, user};
use super::*;
use serde_json::json;
use tokio::sync::broadcast::Receiver;
use waymark_protocol::form::FieldKind;
use waymark_protocol::{Answer, ElicitationQuestion, Event, EventKind, Op, Question};

const ELICIT: &str = "mcp__everything__trigger-elicitation-request";

/// Starts a turn that makes `calls` and waits for the form the server sends.
async fn form_asked(
    h: &Harness,
    calls: Vec<Value>,
) -> (SessionHandle, Receiver<Event>, String, ElicitationQuestion) {
    let s = session(h, calls, PermissionMode::Auto).await;
    let mut rx = s.subscribe();
    s.submit(user("go")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    let (id, q) = next_form(&mut rx).await;
    (s, rx, id, q)
}

/// Accepts form `id` with the one field the forms here ask, `name`.
async fn accept_name(s: &SessionHandle, id: String, name: &str) {
    s.submit(Op::Answer {
        questionnaire_id: id,
        answer: Answer::Accept {
            content: json!({ "name": name }),
        },
    })
    .await
    .unwrap();
}

async fn next_form(rx: &mut Receiver<Event>) -> (String, ElicitationQuestion) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ev = tokio::time::timeout_at(deadline.into(), rx.recv())
            .await
            .expect("a form is asked")
            .unwrap();
        if let EventKind::QuestionnaireOpened { id, question } = ev.kind
            && let Question::Elicitation(q) = *question
        {
            return (id, q);
        }
    }
}

/// The form of server-everything arrives with its fields; an answer outside the form is
/// refused naming the field, and the accepted values reach the server.
#[tokio::test]
async fn a_servers_form_is_asked_and_the_answer_goes_back() {
    let h = Harness::new(config(&[("everything", everything())]));
    let (s, mut rx, id, q) = form_asked(&h, vec![call(ELICIT, json!({}))]).await;
    assert_eq!(q.server, "everything");
    assert_eq!(q.tool, ELICIT);
    let field = |n: &str| q.fields.iter().find(|f| f.name == n).unwrap().clone();
    assert!(field("name").required);
    assert_eq!(field("integer").default, Some(json!(42)));
    assert!(matches!(
        field("untitledMultipleSelectEnum").kind,
        FieldKind::Choice { multiple: true, .. }
    ));
    let answer = |content: Value| Op::Answer {
        questionnaire_id: id.clone(),
        answer: Answer::Accept { content },
    };
    let e = s
        .submit(answer(json!({"name": "Ann", "integer": 500})))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("`integer`"), "{e}");
    s.submit(answer(
        json!({"name": "Ann", "check": "true", "integer": "7"}),
    ))
    .await
    .unwrap();
    let r = results(&collect(&mut rx).await);
    assert!(r[0].2.contains("Name: Ann"), "{r:?}");
    assert!(r[0].2.contains("Favorite Integer: 7"), "{r:?}");
    assert!(r[0].2.contains("Agreed to terms: true"), "{r:?}");
    s.shutdown().await.unwrap();
}

/// `waymark answer` from another process goes through the store: the call here reads it.
#[tokio::test]
async fn a_form_answered_through_the_store_reaches_the_waiting_call() {
    let h = Harness::new(config(&[("everything", everything())]));
    let (s, mut rx, id, _) = form_asked(&h, vec![call(ELICIT, json!({}))]).await;
    // What `waymark answer … decline` does in another process.
    h.runtime
        .answer_form(s.id(), &id, &Answer::Decline)
        .unwrap();
    let e = h
        .runtime
        .answer_form(s.id(), &id, &Answer::Cancel)
        .unwrap_err();
    assert!(e.to_string().contains("already answered"), "{e}");
    let r = results(&collect(&mut rx).await);
    assert!(r[0].2.contains("declined"), "{r:?}");
    s.shutdown().await.unwrap();
}

/// The user taking longer than the server's `tool_timeout_ms` to answer does not time the
/// call out: the clock stops while a form waits.
#[tokio::test]
async fn a_form_waiting_on_the_user_stops_the_calls_clock() {
    let mut server = everything();
    server["tool_timeout_ms"] = json!(1000);
    let h = Harness::new(config(&[("everything", server)]));
    let (s, mut rx, id, _) = form_asked(&h, vec![call(ELICIT, json!({}))]).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    accept_name(&s, id, "Slow").await;
    let r = results(&collect(&mut rx).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(r[0].2.contains("Name: Slow"), "{r:?}");
    s.shutdown().await.unwrap();
}

/// Stop while a form waits: the call ends at once and the form is withdrawn, so nobody can
/// answer it afterwards.
#[tokio::test]
async fn stop_withdraws_an_open_form() {
    let h = Harness::new(config(&[("everything", everything())]));
    let (s, _rx, id, _) = form_asked(&h, vec![call(ELICIT, json!({}))]).await;
    let started = Instant::now();
    s.submit(Op::Stop).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let q = h.runtime.questionnaire(s.id(), &id).unwrap().unwrap();
    assert_eq!(q.status, waymark_protocol::QuestionnaireStatus::Withdrawn);
    assert!(
        h.runtime
            .answer_form(s.id(), &id, &Answer::Decline)
            .is_err()
    );
    s.shutdown().await.unwrap();
}

/// A hostile server sends a form when no call runs (nobody would see it: declined without
/// asking) and two at once during a call (the user gets one question at a time: the second
/// is declined).
#[tokio::test]
async fn a_server_cannot_ask_outside_a_call_or_stack_forms() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut server = hostile("forms");
    server["env"] = json!({"HOSTILE_LOG": log.path().display().to_string()});
    let h = Harness::new(config(&[("forms", server)]));
    let s = session(
        &h,
        vec![call("mcp__forms__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    // The stray form is sent at start-up; its answer is in before any call starts.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(log.path())
        .unwrap()
        .contains("form stray")
    {
        assert!(
            Instant::now() < deadline,
            "the stray form was never answered"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut rx = s.subscribe();
    s.submit(user("go")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    let (id, q) = next_form(&mut rx).await;
    assert_eq!(q.message, "Your name?");
    // The other form, sent at the same time, is declined while this one waits.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .any(|l| l.starts_with("form f") && l.contains(" decline"))
    {
        assert!(
            Instant::now() < deadline,
            "the second form was not declined"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    accept_name(&s, id, "Ann").await;
    let r = results(&collect(&mut rx).await);
    // Which of the two came first is the scheduler's choice; one is asked, one declined.
    let text = &r[0].2;
    assert!(
        text == "f1=accept f2=decline" || text == "f1=decline f2=accept",
        "{r:?}"
    );
    let log = std::fs::read_to_string(log.path()).unwrap();
    assert!(log.contains("form stray decline"), "{log}");
    assert!(log.contains(r#"accept {"name": "Ann"}"#), "{log}");
    let forms = h
        .runtime
        .events(s.id(), 0, 10_000)
        .unwrap()
        .into_iter()
        .filter(|e| matches!(&e.kind, EventKind::QuestionnaireOpened { question, .. } if matches!(**question, Question::Elicitation(_))))
        .count();
    assert_eq!(forms, 1, "only one form reached the user");
    s.shutdown().await.unwrap();
}

/// With calls of two sessions running on one server, a form could reach the wrong session:
/// it is declined, and neither session is asked (red-team finding).
#[tokio::test]
async fn a_form_with_two_calls_running_on_its_server_is_declined() {
    let h = Harness::new(config(&[("everything", everything())]));
    let long = session(
        &h,
        vec![call(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 4, "steps": 4}),
        )],
        PermissionMode::Auto,
    )
    .await;
    let mut long_rx = long.subscribe();
    long.submit(user("go")).await.unwrap();
    long.submit(Op::Resume).await.unwrap();
    // The long call is under way once its first progress report is in.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ev = tokio::time::timeout_at(deadline.into(), long_rx.recv())
            .await
            .expect("progress")
            .unwrap();
        if matches!(ev.kind, EventKind::ToolProgress { .. }) {
            break;
        }
    }
    let asker = session(&h, vec![call(ELICIT, json!({}))], PermissionMode::Auto).await;
    let r = results(&super::super::harness::run(&asker, user("ask")).await);
    assert!(r[0].2.contains("declined"), "{r:?}");
    for s in [&long, &asker] {
        let forms = h
            .runtime
            .events(s.id(), 0, 10_000)
            .unwrap()
            .into_iter()
            .filter(|e| matches!(&e.kind, EventKind::QuestionnaireOpened { .. }))
            .count();
        assert_eq!(forms, 0);
    }
    collect(&mut long_rx).await;
    long.shutdown().await.unwrap();
    asker.shutdown().await.unwrap();
}

/// A server that asks form after form during one call reaches the user
/// `MAX_FORMS_PER_CALL` times; the rest are declined without asking.
#[tokio::test]
async fn a_call_asks_at_most_three_forms() {
    let h = Harness::new(config(&[("many", hostile("manyforms"))]));
    let s = session(
        &h,
        vec![call("mcp__many__act", json!({}))],
        PermissionMode::Auto,
    )
    .await;
    let mut rx = s.subscribe();
    s.submit(user("go")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    let mut asked = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    let result = loop {
        let ev = tokio::time::timeout_at(deadline.into(), rx.recv())
            .await
            .expect("the call ends")
            .unwrap();
        match ev.kind {
            EventKind::QuestionnaireOpened { id, question }
                if matches!(*question, Question::Elicitation(_)) =>
            {
                asked += 1;
                accept_name(&s, id, "Ann").await;
            }
            EventKind::ToolResult { content, .. } => break content,
            _ => {}
        }
    };
    assert_eq!(asked, waymark_mcp::elicit::MAX_FORMS_PER_CALL);
    assert_eq!(result, "accept,accept,accept,decline,decline");
    s.shutdown().await.unwrap();
}

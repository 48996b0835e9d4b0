//! Item 9: budgets bound running work. A model cannot outlast the goal's time budget with
//! a long `timeout_ms`, cannot ask for more than the setting allows, and a budget that
//! cannot be checked stops the tools rather than letting them run.

use super::super::harness::{Harness, results, run, user};
use serde_json::json;
use std::time::{Duration, Instant};
use waymark_config::Config;
use waymark_protocol::{EventKind, Op, PermissionMode, ToolStatus};

fn sleeper(seconds: u64, timeout_ms: u64) -> serde_json::Value {
    json!({"text": "Waiting for it.", "tool_calls": [{"name": "bash", "arguments": {
        "command": format!("sleep {seconds}; echo finished"), "timeout_ms": timeout_ms}}]})
}

#[tokio::test]
async fn a_model_timeout_is_capped_by_the_setting() {
    let mut c = Config::default();
    c.turn.bash_timeout_ms = 300;
    c.turn.max_bash_timeout_ms = 1000;
    let h = Harness::new(c);
    let s = h.session(
        json!({"responses": [sleeper(20, 3_600_000), {"text": "ok"}]}),
        PermissionMode::Auto,
    );
    let started = Instant::now();
    let ev = run(&s, user("wait for it")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Error, "{r:?}");
    assert!(
        r[0].2
            .contains("timed out after 1000 ms (capped by the setting turn.max_bash_timeout_ms)"),
        "{r:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_command_cannot_outlast_the_goal_time_budget() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [sleeper(20, 3_600_000), {"text": "summary"}],
               "when_exhausted": "repeat_last"}),
        PermissionMode::Auto,
    );
    let started = Instant::now();
    let ev = run(&s, user("/goal keep waiting time=1s")).await;
    let r = results(&ev);
    let bash = r
        .iter()
        .find(|(n, ..)| n == "bash")
        .expect("the bash call ran");
    assert_eq!(bash.1, ToolStatus::Error, "{r:?}");
    assert!(
        bash.2
            .contains("(capped by the time the session's budget has left)"),
        "{r:?}"
    );
    // The time left (under a second) plus the grace, not the hour the model asked for.
    let ms: u64 = bash
        .2
        .split("timed out after ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((5000..=6000).contains(&ms), "{ms}");
    assert!(started.elapsed() < Duration::from_secs(15));
    s.shutdown().await.unwrap();
}

/// The goal's row is corrupted behind the runtime's back (here by the model itself, with a
/// shell command in auto mode): the budget can no longer be read, so the next tool call is
/// refused instead of running unbudgeted.
#[tokio::test]
async fn the_budget_guard_fails_closed() {
    let h = Harness::new(Config::default());
    let db = h.dir.path().join("data/waymark.db");
    let corrupt = format!(
        "python3 -c \"import sqlite3; c = sqlite3.connect('{}', timeout=10); c.execute('PRAGMA ignore_check_constraints = ON'); c.execute(\\\"UPDATE goals SET status = 'unbounded'\\\"); c.commit()\"",
        db.display()
    );
    std::fs::write(h.ws.join("a.txt"), "x\n").unwrap();
    let s = h.session(
        json!({"responses": [
            {"text": "Freeing myself.", "tool_calls": [
                {"name": "bash", "arguments": {"command": corrupt}},
                {"name": "read_file", "arguments": {"path": "a.txt"}}
            ]},
            {"text": "done"}
        ], "when_exhausted": "repeat_last"}),
        PermissionMode::Auto,
    );
    let mut rx = s.subscribe();
    s.submit(user("/goal do as you like budget=500K"))
        .await
        .unwrap();
    s.submit(Op::Resume).await.unwrap();
    // The session cannot go on with a goal it cannot read: it ends the turn and says why.
    let mut ev = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap()
            .unwrap();
        let end = matches!(
            e.kind,
            EventKind::SessionError { .. } | EventKind::SessionIdle {}
        );
        ev.push(e);
        if end {
            break;
        }
    }
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Ok, "the corruption ran: {r:?}");
    let read = r.iter().find(|(n, ..)| n == "read_file").expect("{r:?}");
    assert_eq!(read.1, ToolStatus::Denied, "{r:?}");
    assert!(read.2.contains("budget could not be checked"), "{r:?}");
    // Closing the session names the corrupt row too, and does not hang.
    let closed = s.shutdown().await;
    assert!(
        closed
            .as_ref()
            .is_err_and(|e| e.to_string().contains("unbounded")),
        "{closed:?}"
    );
}

/// The model cannot lift its own budget: raising the token budget with `update_goal` asks
/// the user (outside `auto`), and a denial leaves the budget as it was.
#[tokio::test]
async fn the_model_cannot_raise_its_own_budget_without_asking() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"text": "More room, please.", "tool_calls": [{"name": "update_goal", "arguments":
                {"mode": "token_budget", "token_budget": 900_000_000}}]},
            {"text": "ok, within budget then"}
        ], "when_exhausted": "repeat_last"}),
        PermissionMode::AutoEdit,
    );
    let ev = run(&s, user("/goal keep going budget=50K")).await;
    let q = super::super::harness::waiting_on(&ev);
    let info = super::super::harness::questionnaire(&h, &s, &q);
    assert!(
        info.payload["summary"]
            .as_str()
            .unwrap()
            .contains("900000000"),
        "{}",
        info.payload
    );
    assert!(info.payload["grants"]["session"].is_null());
    let ev = run(
        &s,
        Op::Answer {
            questionnaire_id: q,
            answer: waymark_protocol::Answer::Deny { message: None },
        },
    )
    .await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(g.budget.tokens.limit, Some(50_000), "{g:?}");
    s.shutdown().await.unwrap();
}

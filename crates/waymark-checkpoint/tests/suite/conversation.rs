//! What a rewind does besides the files: an active goal pauses (its spent budget stays
//! spent), a compaction that summarized rewound turns stops standing in for them, and old
//! checkpoints are pruned with the objects only they held.

use super::harness::{Harness, Recording, run, session_on, user};
use super::{rewind, turn_starts, undo_of};
use serde_json::json;
use waymark_config::{Config, Verification};
use waymark_protocol::checkpoint::RewindScope;
use waymark_protocol::{GoalActor, GoalReason, GoalStatus, Op, PermissionMode};
use waymark_runtime::SessionSpec;

fn goal_config() -> Config {
    let mut c = Config::default();
    c.goal.verification = Some(Verification::None);
    c
}

#[tokio::test]
async fn a_rewind_pauses_an_active_goal_as_the_user_and_keeps_what_it_spent() {
    let h = Harness::new(goal_config());
    let model = h.script(json!({"responses": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "a"}}],
         "usage": {"input_tokens": 900, "output_tokens": 200}},
        {"text": "wrote it", "usage": {"input_tokens": 50, "output_tokens": 10}},
    ]}));
    let spec = |hold| SessionSpec {
        workspace: Some(h.ws.clone()),
        model: Some(model.clone()),
        permission_mode: Some(PermissionMode::Auto),
        hold,
    };
    // A goal whose budget runs out in its first turn: what it spent stays after a rewind.
    let s = h.runtime.create_session(spec(false)).unwrap();
    let sid = s.id().to_string();
    run(&s, user("/goal write a budget=1K")).await;
    let g = h.runtime.goal(&sid).unwrap().unwrap();
    assert_eq!(g.status, GoalStatus::BudgetLimited);
    let spent = g.budget.tokens.used;
    assert!(spent >= 1100, "{g:?}");
    let starts = turn_starts(&h.runtime, &sid);
    rewind(&s, &starts[0].id, RewindScope::Both).await.unwrap();
    assert!(!h.ws.join("a.txt").exists());
    let g = h.runtime.goal(&sid).unwrap().unwrap();
    assert_eq!(
        (g.status, g.budget.tokens.used),
        (GoalStatus::BudgetLimited, spent)
    );
    s.shutdown().await.unwrap();

    // An active goal (set while nothing runs) is paused by the rewind, by the user.
    let s = h.runtime.open_session(&sid, spec(true)).unwrap();
    s.submit(user("/goal replace write b")).await.unwrap();
    assert_eq!(
        h.runtime.goal(&sid).unwrap().unwrap().status,
        GoalStatus::Active
    );
    rewind(&s, &starts[0].id, RewindScope::Files).await.unwrap();
    let g = h.runtime.goal(&sid).unwrap().unwrap();
    assert_eq!(
        (g.status, g.reason, g.actor),
        (
            GoalStatus::Paused,
            GoalReason::UserRequested,
            GoalActor::User
        )
    );
    s.shutdown().await.unwrap();
}

fn last_request(rec: &Recording) -> String {
    format!(
        "{:?}",
        rec.requests.lock().unwrap().last().unwrap().messages
    )
}

#[tokio::test]
async fn a_summary_of_rewound_turns_no_longer_stands_in_for_them() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({
            "responses": [
                {"text": "MARK-A-REPLY"},
                {"text": "MARK-B-REPLY"},
                {"text": "probe one"},
                {"text": "probe two"},
            ],
            "compact": [{"text": "MARK-SUMMARY of the talk so far"}],
        }),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    run(&s, user("MARK-A")).await;
    run(&s, user("MARK-B")).await;
    s.submit(user("/compact")).await.unwrap();
    let starts = turn_starts(&h.runtime, s.id());
    // Turn B leaves: the summary covered it, so the history is sent without it.
    let ev = rewind(&s, &starts[1].id, RewindScope::Conversation)
        .await
        .unwrap();
    run(&s, user("MARK-P1")).await;
    let req = last_request(&rec);
    assert!(!req.contains("MARK-SUMMARY"), "{req}");
    assert!(
        req.contains("MARK-A-REPLY") && !req.contains("MARK-B"),
        "{req}"
    );
    // Undone: turn B is back, and the summary stands in for it again.
    rewind(&s, &undo_of(&ev), RewindScope::Conversation)
        .await
        .unwrap();
    run(&s, user("MARK-P2")).await;
    let req = last_request(&rec);
    assert!(req.contains("MARK-SUMMARY"), "{req}");
    assert!(!req.contains("MARK-P1"), "{req}");
    s.shutdown().await.unwrap();
}

fn objects(dir: &std::path::Path) -> usize {
    super::bytes_under(&dir.join("objects")).len()
}

#[tokio::test]
async fn checkpoints_older_than_keep_days_are_pruned_with_their_objects() {
    let mut config = Config::default();
    config.checkpoints.keep_days = 1;
    let h = Harness::new(config);
    let clock = waymark_runtime::ManualClock::new(1_000_000_000_000);
    let c = clock.clone();
    let rt = h.reopen(move |o| o.clock = c);
    let s = session_on(
        &h,
        &rt,
        &h.ws,
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "old.txt", "content": "only the old checkpoints hold this"}}]},
            {"text": "one"},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "rm old.txt && echo new > new.txt"}}]},
            {"text": "two"},
            {"text": "three"},
        ]}),
        PermissionMode::Auto,
    );
    let sid = s.id().to_string();
    run(&s, user("one")).await;
    run(&s, user("two")).await;
    let store = h.session_dir(&sid).join("checkpoints");
    let (rows, objs) = (rt.checkpoints(&sid).unwrap().len(), objects(&store));
    s.shutdown().await.unwrap();
    clock.advance_ms(2 * 86_400_000);
    // The next turn opened in a new process prunes first.
    let s = rt.open_session(&sid, SessionSpec::default()).unwrap();
    run(&s, user("three")).await;
    let left = rt.checkpoints(&sid).unwrap();
    assert_eq!(left.len(), 1, "only the new turn's: {left:?} (was {rows})");
    assert!(
        objects(&store) < objs,
        "objects only old checkpoints held remain"
    );
    // What is left still rewinds.
    rewind(&s, &left[0].id, RewindScope::Files).await.unwrap();
    assert!(h.ws.join("new.txt").exists() && !h.ws.join("old.txt").exists());
    s.submit(Op::Stop).await.unwrap();
    s.shutdown().await.unwrap();
}

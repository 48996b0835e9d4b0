//! The typed protocol end to end: goal ops (the desktop's path) and `/goal` (the slash
//! command's) take one path; errors carry a code and the settings key; settings applied
//! once reach open sessions; streamed-only events say so.

use super::harness::{Harness, run, user};
use serde_json::json;
use waymark_config::Config;
use waymark_protocol::{
    BudgetChange, EventKind, GoalOp, GoalReason, GoalStatus, Limit, Op, PermissionMode,
};

fn idle_script() -> serde_json::Value {
    json!({"responses": [{"text": "working on it"}], "when_exhausted": "repeat_last"})
}

#[tokio::test]
async fn goal_ops_and_the_slash_command_take_the_same_path() {
    let h = Harness::new(Config::default());
    let s = h.held_session(idle_script(), PermissionMode::Auto);
    let set = |objective: &str| Op::Goal {
        op: GoalOp::Set {
            objective: objective.into(),
            budget: BudgetChange {
                tokens: Some(Limit::To(50_000)),
                ..Default::default()
            },
            replace: false,
            criteria: None,
            checks: Vec::new(),
        },
    };
    let out = s.submit(set("ship the docs")).await.unwrap();
    assert!(
        matches!(out, waymark_runtime::session::OpOutcome::Command { ref output } if output.starts_with("Goal set.")),
        "{out:?}"
    );
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(
        (g.objective.as_str(), g.budget.tokens.limit),
        ("ship the docs", Some(50_000))
    );
    // A second set is refused exactly as `/goal <objective>` is.
    let typed = s.submit(set("another")).await.unwrap_err().to_string();
    let slash = s
        .submit(user("/goal another"))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(typed, slash);
    s.submit(Op::Goal { op: GoalOp::Pause }).await.unwrap();
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(
        (g.status, g.reason),
        (GoalStatus::Paused, GoalReason::UserRequested)
    );
    // An absurd budget sent as a typed op is refused by its range, and nothing changes.
    let e = s
        .submit(Op::Goal {
            op: GoalOp::EditBudget {
                budget: BudgetChange {
                    seconds: Some(Limit::To(u64::MAX)),
                    ..Default::default()
                },
            },
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), "refused", "{e}");
    assert_eq!(
        h.runtime
            .goal(s.id())
            .unwrap()
            .unwrap()
            .budget
            .active_seconds
            .limit,
        None
    );
    let e = s
        .submit(Op::Goal {
            op: GoalOp::EditObjective {
                objective: "   ".into(),
            },
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("needs the new objective"), "{e}");
    s.submit(Op::Goal { op: GoalOp::Clear }).await.unwrap();
    assert!(h.runtime.goal(s.id()).unwrap().is_none());
    s.shutdown().await.unwrap();
}

/// Settings applied through the runtime reach a session that is already open, and a
/// feature turned off says which setting turns it on, in a field rather than in prose.
#[tokio::test]
async fn applied_settings_reach_open_sessions_and_errors_name_the_setting() {
    let h = Harness::new(Config::default());
    let s = h.held_session(idle_script(), PermissionMode::Auto);
    let mut off = Config::default();
    off.beta.thread_goal = false;
    h.runtime.apply_settings(off).unwrap();
    let e = s.submit(user("/goal do it")).await.unwrap_err();
    let info = e.info();
    assert_eq!(
        (info.code.as_str(), info.setting.as_deref()),
        ("feature_off", Some("beta.thread_goal"))
    );
    // Invalid settings are refused with their key, and what is in force stays.
    let mut bad = Config::default();
    bad.turn.max_steps = 0;
    let e = h.runtime.apply_settings(bad).unwrap_err();
    assert_eq!(e.info().setting.as_deref(), Some("turn.max_steps"));
    assert!(!h.runtime.config().beta.thread_goal);
    let e = s.submit(user("/goal do it")).await.unwrap_err();
    assert_eq!(e.code(), "feature_off");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn streamed_only_events_are_marked_and_logged_ones_are_not() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [{"text": "a reply streamed in pieces"}]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("hello")).await;
    assert!(
        ev.iter()
            .any(|e| matches!(e.kind, EventKind::AssistantDelta { .. }))
    );
    for e in &ev {
        assert_eq!(e.transient, e.kind.is_transient(), "{e:?}");
    }
    let logged = h.runtime.events(s.id(), 0, 1000).unwrap();
    assert!(logged.iter().all(|e| !e.transient));
    s.shutdown().await.unwrap();
}

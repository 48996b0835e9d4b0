//! Entry tests.

#![allow(unused_imports)]

use super::*;

use super::super::harness::{Harness, collect, finished, results, run, user, waiting_on};
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
async fn pm_1_pm_2_pm_22_mode_and_pending_approval_survive_a_restart() {
    let h = Harness::new(Config::default());
    let s = h.session(with_plan_script(vec![]), PermissionMode::AutoEdit);
    assert_eq!(mode(&h, &s), InteractionMode::Default);
    let q = to_approval(&h, &s).await;
    assert_eq!(mode(&h, &s), InteractionMode::Plan);
    assert_eq!(
        std::fs::read_to_string(plan_file(&h, &s)).unwrap(),
        GOOD_PLAN
    );
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    let rt = h.reopen(|_| {});
    let again = rt.open_session(&id, SessionSpec::default()).unwrap();
    let snap = rt.snapshot(&id).unwrap();
    assert_eq!(snap.summary.interaction_mode, InteractionMode::Plan);
    assert_eq!(
        snap.summary.pending_questionnaire.as_deref(),
        Some(q.as_str())
    );
    let mut rx = again.subscribe();
    again.submit(Op::Resume).await.unwrap();
    assert_eq!(waiting_on(&collect(&mut rx).await), q);
    again.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_3_an_earlier_plan_is_moved_aside_and_a_fresh_draft_prepared() {
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": []}), PermissionMode::AutoEdit);
    let plan = plan_file(&h, &s);
    std::fs::write(&plan, "old plan").unwrap();
    s.submit(user("/plan on")).await.unwrap();
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "");
    assert_eq!(
        std::fs::read_to_string(plan.with_file_name(".plan.md.plan-entry-backup")).unwrap(),
        "old plan"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_3_a_failed_entry_leaves_the_plan_file_in_place() {
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": []}), PermissionMode::AutoEdit);
    let plan = plan_file(&h, &s);
    std::fs::write(&plan, "keep me").unwrap();
    // The backup name is taken by a non-empty folder: moving the plan aside fails.
    let blocker = plan.with_file_name(".plan.md.plan-entry-backup");
    std::fs::create_dir_all(blocker.join("x")).unwrap();
    let e = s.submit(user("/plan on")).await.unwrap_err();
    assert_eq!(e.code(), "io", "{e}");
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "keep me");
    assert_eq!(
        mode(&h, &s),
        InteractionMode::Default,
        "the mode change was rolled back"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_4_pm_6_the_intent_applies_at_admission_and_is_refused_while_a_questionnaire_waits() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"text": "ok"}
        ]}),
        PermissionMode::Ask,
    );
    let ev = run(&s, user("write a")).await;
    let q = waiting_on(&ev);
    let before = messages(&h, &s).len();
    let e = s.submit(plan_entry("plan instead")).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("cannot start while the permission questionnaire"),
        "{e}"
    );
    assert_eq!(
        messages(&h, &s).len(),
        before,
        "the message was not admitted"
    );
    assert_eq!(mode(&h, &s), InteractionMode::Default);
    run(&s, answer(&q, Answer::AllowOnce)).await;
    // Now the intent switches the mode in the admitting transaction: same timestamp, mode
    // change logged just before the message.
    let mut rx = s.subscribe();
    s.submit(plan_entry("plan now")).await.unwrap();
    let a = rx.recv().await.unwrap();
    let b = rx.recv().await.unwrap();
    assert!(
        matches!(
            a.kind,
            EventKind::PlanModeChanged {
                mode: InteractionMode::Plan,
                ..
            }
        ),
        "{a:?}"
    );
    assert!(matches!(b.kind, EventKind::MessageAdmitted { .. }));
    assert_eq!((a.ts, a.seq + 1), (b.ts, b.seq));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_5_plan_commands() {
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": []}), PermissionMode::AutoEdit);
    let out = |o| match o {
        waymark_runtime::session::OpOutcome::Command { output } => output,
        other => panic!("{other:?}"),
    };
    let st = out(s.submit(user("/plan status")).await.unwrap());
    assert!(st.contains("Plan mode: off"), "{st}");
    let on = out(s.submit(user("/plan on")).await.unwrap());
    assert!(on.contains("Plan mode is on"), "{on}");
    assert_eq!(mode(&h, &s), InteractionMode::Plan);
    assert!(out(s.submit(user("/plan view")).await.unwrap()).contains("is empty"));
    std::fs::write(plan_file(&h, &s), GOOD_PLAN).unwrap();
    assert!(out(s.submit(user("/plan view")).await.unwrap()).contains("Rename the greeting"));
    assert!(out(s.submit(user("/plan status")).await.unwrap()).contains("Plan mode: on"));
    assert!(
        s.submit(user("/plan on"))
            .await
            .unwrap_err()
            .to_string()
            .contains("already in plan mode")
    );
    assert!(
        out(s.submit(user("/plan off")).await.unwrap())
            .contains("Nothing from the plan was implemented")
    );
    assert_eq!(mode(&h, &s), InteractionMode::Default);
    assert_eq!(
        s.submit(user("/plan sideways")).await.unwrap_err().code(),
        "unknown_command"
    );
    assert!(
        messages(&h, &s).is_empty(),
        "commands never reach the model"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_7_pm_10_plan_tools_are_offered_only_where_they_apply() {
    let (tools, system) = offered_tools(Config::default(), false).await;
    assert!(
        !tools.contains(&"EnterPlanMode".to_string())
            && !tools.contains(&"ExitPlanMode".to_string())
    );
    assert!(!system.contains("EnterPlanMode"));
    let mut flagged = Config::default();
    flagged.beta.desktop_plan_mode_agent_entry = true;
    let (tools, system) = offered_tools(flagged.clone(), false).await;
    assert!(
        tools.contains(&"EnterPlanMode".to_string())
            && !tools.contains(&"ExitPlanMode".to_string())
    );
    assert!(
        system.contains("call EnterPlanMode"),
        "the prompt says when to ask for plan mode"
    );
    let (tools, _) = offered_tools(flagged, true).await;
    assert!(
        tools.contains(&"ExitPlanMode".to_string())
            && !tools.contains(&"EnterPlanMode".to_string())
    );
}

#[tokio::test]
async fn pm_8_agent_entry_confirmed_or_declined_then_the_model_continues() {
    let mut config = Config::default();
    config.beta.desktop_plan_mode_agent_entry = true;
    for (reply, expect_mode) in [
        (approve(), InteractionMode::Plan),
        (Answer::Reject, InteractionMode::Default),
    ] {
        let h = Harness::new(config.clone());
        let s = h.session(
            json!({"responses": [
                {"text": "This needs a plan.", "tool_calls": [{"name": "EnterPlanMode", "arguments": {"reason": "touches many files"}}]},
                {"text": "Continuing."}
            ]}),
            PermissionMode::AutoEdit,
        );
        let ev = run(&s, user("refactor everything")).await;
        assert_eq!(finished(&ev), vec![(TurnEndReason::Terminated, None)]);
        let q = waiting_on(&ev);
        assert_eq!(kind_of(&h, &s, &q), QuestionnaireKind::PlanEntry);
        let ev = run(&s, answer(&q, reply)).await;
        assert_eq!(mode(&h, &s), expect_mode);
        // Either way a continuation turn follows.
        assert!(ev.iter().any(
            |e| matches!(&e.kind, EventKind::AssistantMessage { text, .. } if text == "Continuing.")
        ));
        s.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn pm_8_enter_plan_mode_is_refused_in_plan_mode() {
    let mut config = Config::default();
    config.beta.desktop_plan_mode_agent_entry = true;
    let h = Harness::new(config);
    let s = h.session(
        json!({"responses": [{"tool_calls": [{"name": "EnterPlanMode", "arguments": {}}]}, {"text": "ok"}]}),
        PermissionMode::AutoEdit,
    );
    let ev = run(&s, plan_entry("plan")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Error);
    assert!(r[0].2.contains("already in plan mode"), "{r:?}");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_9_the_kill_switch_refuses_new_entries_but_allows_leaving() {
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": []}), PermissionMode::AutoEdit);
    s.submit(user("/plan on")).await.unwrap();
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    let rt = h.reopen(|o| o.config.beta.desktop_plan_mode = false);
    let s = rt.open_session(&id, SessionSpec::default()).unwrap();
    s.submit(user("/plan off")).await.unwrap();
    for op in [user("/plan on"), plan_entry("plan it")] {
        let e = s.submit(op).await.unwrap_err();
        assert!(e.to_string().contains("beta.desktop_plan_mode"), "{e}");
    }
    assert_eq!(
        rt.snapshot(&id).unwrap().summary.interaction_mode,
        InteractionMode::Default
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn settings_changed_on_an_open_session_apply_to_the_next_entry() {
    // The desktop's Settings page: no reopen, the next check uses the new flags.
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": []}), PermissionMode::AutoEdit);
    let mut off = Config::default();
    off.beta.desktop_plan_mode = false;
    h.runtime.apply_settings(off.clone()).unwrap();
    let e = s.submit(user("/plan on")).await.unwrap_err();
    assert!(e.to_string().contains("beta.desktop_plan_mode"), "{e}");
    h.runtime.apply_settings(Config::default()).unwrap();
    s.submit(user("/plan on")).await.unwrap();
    assert_eq!(
        h.runtime.snapshot(s.id()).unwrap().summary.interaction_mode,
        InteractionMode::Plan
    );
    // Invalid settings are refused and change nothing.
    let mut bad = Config::default();
    bad.turn.max_steps = 0;
    let e = h.runtime.apply_settings(bad.clone()).unwrap_err();
    assert!(e.to_string().contains("max_steps"), "{e}");
    assert!(h.runtime.set_config(bad).is_err());
    // The runtime's settings reach sessions opened later.
    h.runtime.set_config(off).unwrap();
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    let s = h.runtime.open_session(&id, SessionSpec::default()).unwrap();
    s.submit(user("/plan off")).await.unwrap();
    let e = s.submit(user("/plan on")).await.unwrap_err();
    assert!(e.to_string().contains("beta.desktop_plan_mode"), "{e}");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_11_pm_12_reminder_text_and_cadence() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [{"text": "noted"}], "when_exhausted": "repeat_last"}),
    );
    let s = h.recorded_session(PermissionMode::AutoEdit);
    run(&s, plan_entry("plan the work")).await; // turn 1: full
    for i in 2..=6 {
        run(&s, system(&format!("continue {i}"))).await; // 2-4 short, 5 full, 6 short
    }
    run(&s, user("also consider the docs")).await; // the user interjects: full
    s.submit(user("/plan off")).await.unwrap();
    run(&s, system("after")).await; // exit reminder
    run(&s, system("later")).await; // nothing
    let reqs = rec.requests.lock().unwrap().clone();
    let kinds: Vec<&str> = reqs
        .iter()
        .map(|r| {
            let t = first_user_text(r);
            if t.contains("PLAN MODE is on") {
                "full"
            } else if t.contains("PLAN MODE is still on") {
                "short"
            } else if t.contains("Plan mode has ended") {
                "exit"
            } else {
                "none"
            }
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "full", "short", "short", "short", "full", "short", "full", "exit", "none"
        ]
    );
    let full = first_user_text(&reqs[0]);
    let plan = plan_file(&h, &s).display().to_string();
    assert!(
        full.contains(&plan),
        "the reminder names the exact plan path"
    );
    // The scratch shell is on by default, and this machine has it.
    assert!(
        full.contains("scratch sandbox"),
        "the shell line matches the sandbox state"
    );
    let redacted = full.replace(&plan, "<plan file>");
    insta::assert_snapshot!("plan_full_reminder", redacted);
    s.shutdown().await.unwrap();
}

/// A beta flag changed in Settings changes the tools an open session offers at its next
/// model call (the tool list is not kept from before the change).
#[tokio::test]
async fn settings_changed_on_an_open_session_change_the_tools_offered() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [{"text": "one"}, {"text": "two"}]}),
    );
    let s = h.recorded_session(PermissionMode::AutoEdit);
    run(&s, user("first")).await;
    let mut off = Config::default();
    off.beta.thread_goal = false;
    h.runtime.apply_settings(off).unwrap();
    run(&s, user("second")).await;
    let names = |i: usize| -> Vec<String> {
        rec.requests.lock().unwrap()[i]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert!(
        names(0).contains(&"create_goal".to_string()),
        "{:?}",
        names(0)
    );
    assert!(
        !names(1).contains(&"create_goal".to_string()),
        "{:?}",
        names(1)
    );
    s.shutdown().await.unwrap();
}

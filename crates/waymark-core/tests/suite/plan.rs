//! Plan mode end to end in-process with the scripted model: one or more tests per spec
//! requirement, named after its id.

use super::harness::{Harness, collect, finished, results, run, user, waiting_on};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use waymark_core::provider::ModelMessage;
use waymark_core::{SessionHandle, SessionSpec};
use waymark_protocol::config::Config;
use waymark_protocol::{
    Answer, EventKind, Intent, InteractionMode, MessageSource, Op, PermissionMode, Position,
    QuestionnaireKind, ToolStatus, TurnEndReason,
};

const PLAN: &str = "${session_dir}/artifacts/plan.md";
const GOOD_PLAN: &str = "## Summary\nRename the greeting.\n\n## Approach\nEdit src/greet.txt.\n";

fn plan_entry(text: &str) -> Op {
    Op::Submit {
        text: text.into(),
        source: MessageSource::User,
        position: Position::Tail,
        idempotency_key: None,
        intent: Some(Intent::PlanEntry),
    }
}

fn system(text: &str) -> Op {
    Op::Submit {
        text: text.into(),
        source: MessageSource::System,
        position: Position::Tail,
        idempotency_key: None,
        intent: None,
    }
}

fn answer(qid: &str, answer: Answer) -> Op {
    Op::Answer {
        questionnaire_id: qid.into(),
        answer,
    }
}

fn session_dir(h: &Harness, s: &SessionHandle) -> PathBuf {
    h.session_dir(s.id())
}

fn plan_file(h: &Harness, s: &SessionHandle) -> PathBuf {
    session_dir(h, s).join("artifacts/plan.md")
}

fn mode(h: &Harness, s: &SessionHandle) -> InteractionMode {
    h.runtime.snapshot(s.id()).unwrap().summary.interaction_mode
}

fn messages(h: &Harness, s: &SessionHandle) -> Vec<waymark_protocol::MessageInfo> {
    h.runtime.snapshot(s.id()).unwrap().messages
}

/// A script that writes `plan` to the plan file and submits it.
fn write_and_exit(plan: &str) -> Value {
    json!({"text": "Writing the plan.", "tool_calls": [
        {"name": "write", "arguments": {"path": PLAN, "content": plan}},
        {"name": "ExitPlanMode", "arguments": {}}
    ]})
}

fn with_plan_script(rest: Vec<Value>) -> Value {
    let mut responses = vec![write_and_exit(GOOD_PLAN)];
    responses.extend(rest);
    json!({ "responses": responses })
}

/// Enters plan mode with a prompt, lets the script write and submit the plan; returns the
/// approval questionnaire.
async fn to_approval(h: &Harness, s: &SessionHandle) -> String {
    let ev = run(s, plan_entry("plan the rename")).await;
    assert_eq!(
        finished(&ev),
        vec![(TurnEndReason::Terminated, None)],
        "{ev:#?}"
    );
    waiting_on(&ev)
        .to_string()
        .tap(|q| assert_eq!(kind_of(h, s, q), QuestionnaireKind::PlanApproval))
}

trait Tap: Sized {
    fn tap(self, f: impl FnOnce(&Self)) -> Self {
        f(&self);
        self
    }
}
impl<T> Tap for T {}

fn kind_of(h: &Harness, s: &SessionHandle, q: &str) -> QuestionnaireKind {
    h.runtime
        .snapshot(s.id())
        .unwrap()
        .questionnaires
        .into_iter()
        .find(|x| x.id == q)
        .unwrap()
        .kind
}

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
        waymark_core::session::OpOutcome::Command { output } => output,
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

async fn offered_tools(config: Config, enter_plan: bool) -> (Vec<String>, String) {
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
        (Answer::Approve { option: None }, InteractionMode::Plan),
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

fn first_user_text(req: &waymark_core::provider::ModelRequest) -> String {
    req.messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ModelMessage::User { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap()
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
    assert!(
        full.contains("read-only sandbox"),
        "the shell line matches the sandbox state"
    );
    let redacted = full.replace(&plan, "<plan file>");
    insta::assert_snapshot!("plan_full_reminder", redacted);
    s.shutdown().await.unwrap();
}

/// Hashes every file under `root` except `skip`.
fn tree_hash(root: &Path, skip: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            // The plan file may change; the scripted model keeps its position beside it.
            if p == skip
                || p.file_name()
                    .is_some_and(|n| n == "scripted-model.cursor.json")
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
                    waymark_core::store::plans::sha256_hex(&std::fs::read(&p).unwrap()),
                ));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn pm_13_guard_battery_only_the_exact_plan_file_is_writable() {
    use std::os::unix::fs::symlink;
    let h = Harness::new(Config::default());
    std::fs::create_dir_all(h.ws.join("src")).unwrap();
    std::fs::create_dir_all(h.ws.join(".git")).unwrap();
    std::fs::write(h.ws.join("src/a.txt"), "alpha\n").unwrap();
    std::fs::write(h.ws.join(".git/config"), "[core]\n").unwrap();
    let outside = h.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    symlink(&outside, h.ws.join("out-link")).unwrap();
    let patch_other = "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-alpha\n+beta\n";
    let patch_plan = format!("--- {PLAN}\n+++ {PLAN}\n@@ -0,0 +1 @@\n+x\n");
    let patch_both = format!("{patch_other}--- /dev/null\n+++ {PLAN}\n@@ -0,0 +1 @@\n+x\n");
    let sd = "${session_dir}";
    let denied: Vec<Value> = vec![
        json!({"name": "write", "arguments": {"path": "src/a.txt", "content": "x"}}),
        json!({"name": "write", "arguments": {"path": "${workspace}/src/a.txt", "content": "x"}}),
        json!({"name": "write", "arguments": {"path": "new.txt", "content": "x"}}),
        json!({"name": "write", "arguments": {"path": "../escape.txt", "content": "x"}}),
        json!({"name": "write", "arguments": {"path": format!("{sd}/artifacts/../artifacts/plan.md"), "content": "x"}}),
        json!({"name": "write", "arguments": {"path": format!("{sd}/artifacts/PLAN.md"), "content": "x"}}),
        json!({"name": "write", "arguments": {"path": format!("{sd}/artifacts/Plan.md"), "content": "x"}}),
        json!({"name": "write", "arguments": {"path": format!("{sd}/artifacts/plan.md.bak"), "content": "x"}}),
        json!({"name": "write", "arguments": {"path": format!("{sd}/artifacts/other.md"), "content": "x"}}),
        json!({"name": "write", "arguments": {"path": format!("{sd}/notes.md"), "content": "x"}}),
        json!({"name": "write", "arguments": {"path": "/etc/waymark-test", "content": "x"}}),
        json!({"name": "write", "arguments": {"path": "out-link/plan.md", "content": "x"}}),
        json!({"name": "write", "arguments": {"path": ".git/config", "content": "x"}}),
        json!({"name": "write", "arguments": {"path": "", "content": "x"}}),
        json!({"name": "edit", "arguments": {"path": "src/a.txt", "old_string": "alpha", "new_string": "beta"}}),
        json!({"name": "edit", "arguments": {"path": format!("{sd}/artifacts/PLAN.md"), "old_string": "a", "new_string": "b"}}),
        json!({"name": "multiedit", "arguments": {"path": PLAN, "edits": [{"old_string": "Summary", "new_string": "S"}]}}),
        json!({"name": "multiedit", "arguments": {"path": "src/a.txt", "edits": [{"old_string": "alpha", "new_string": "b"}]}}),
        json!({"name": "append", "arguments": {"path": PLAN, "content": "more"}}),
        json!({"name": "append", "arguments": {"path": "src/a.txt", "content": "more"}}),
        json!({"name": "apply_patch", "arguments": {"patch": patch_other}}),
        json!({"name": "apply_patch", "arguments": {"patch": patch_plan}}),
        json!({"name": "apply_patch", "arguments": {"patch": patch_both}}),
        json!({"name": "apply_patch", "arguments": {"patch": "--- /dev/null\n+++ b/created.txt\n@@ -0,0 +1 @@\n+x\n"}}),
        json!({"name": "write", "arguments": {"path": "out-link/new.txt", "content": "x"}}),
        json!({"name": "edit", "arguments": {"path": "${workspace}/../outside/x", "old_string": "a", "new_string": "b"}}),
    ];
    let allowed: Vec<Value> = vec![
        json!({"name": "write", "arguments": {"path": PLAN, "content": "## Summary\nfirst\n"}}),
        json!({"name": "edit", "arguments": {"path": PLAN, "old_string": "first", "new_string": "second"}}),
        json!({"name": "write", "arguments": {"path": format!("{sd}//artifacts/./plan.md"), "content": "## Summary\nthird\n"}}),
    ];
    let mut calls = denied.clone();
    calls.extend(allowed.clone());
    let s = h.session(
        json!({"responses": [{"tool_calls": calls}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    s.submit(user("/plan on")).await.unwrap();
    let sd_path = session_dir(&h, &s);
    let plan = plan_file(&h, &s);
    let before = (
        tree_hash(&h.ws, &plan),
        tree_hash(&sd_path, &plan),
        tree_hash(&outside, &plan),
    );
    let ev = run(&s, user("go")).await;
    let r = results(&ev);
    assert_eq!(r.len(), denied.len() + allowed.len());
    for (i, (name, status, content)) in r.iter().enumerate() {
        if i < denied.len() {
            assert_ne!(
                *status,
                ToolStatus::Ok,
                "call {i} ({name}) must be refused: {content}"
            );
            if *status == ToolStatus::Denied {
                assert!(
                    content.contains(&plan.display().to_string()),
                    "a denial names the plan path: {content}"
                );
            }
        } else {
            assert_eq!(
                *status,
                ToolStatus::Ok,
                "call {i} ({name}) targets the plan file: {content}"
            );
        }
    }
    assert!(denied.len() >= 25);
    let after = (
        tree_hash(&h.ws, &plan),
        tree_hash(&sd_path, &plan),
        tree_hash(&outside, &plan),
    );
    assert_eq!(before, after, "nothing but the plan file changed");
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "## Summary\nthird\n"
    );
    assert!(!h.dir.path().join("escape.txt").exists());
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_13_a_symlink_at_the_plan_path_does_not_redirect_the_write() {
    let h = Harness::new(Config::default());
    std::fs::write(h.ws.join("victim.txt"), "safe\n").unwrap();
    let s = h.session(
        json!({"responses": [{"tool_calls": [
            {"name": "write", "arguments": {"path": PLAN, "content": "pwned"}},
            {"name": "edit", "arguments": {"path": PLAN, "old_string": "safe", "new_string": "pwned"}}
        ]}, {"text": "ok"}]}),
        PermissionMode::Auto,
    );
    s.submit(user("/plan on")).await.unwrap();
    let plan = plan_file(&h, &s);
    std::fs::remove_file(&plan).unwrap();
    std::os::unix::fs::symlink(h.ws.join("victim.txt"), &plan).unwrap();
    let ev = run(&s, user("go")).await;
    assert!(
        results(&ev)
            .iter()
            .all(|(_, st, _)| *st == ToolStatus::Denied),
        "{:?}",
        results(&ev)
    );
    assert_eq!(
        std::fs::read_to_string(h.ws.join("victim.txt")).unwrap(),
        "safe\n"
    );
    s.shutdown().await.unwrap();
}

fn bash(cmd: &str) -> Value {
    json!({"name": "bash", "arguments": {"command": cmd}})
}

#[tokio::test]
async fn pm_14_shell_battery_under_landlock() {
    let h = Harness::new(Config::default());
    std::fs::write(h.ws.join("a.txt"), "hello world\n").unwrap();
    std::fs::write(
        h.ws.join("Cargo.toml"),
        "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\n",
    )
    .unwrap();
    std::fs::create_dir_all(h.ws.join("src")).unwrap();
    std::fs::write(h.ws.join("src/lib.rs"), "").unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&h.ws)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["-c", "user.email=t@t", "-c", "user.name=t", "add", "-A"]);
    git(&[
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-qm",
        "init",
    ]);
    let outside_tmp = std::env::temp_dir().join(format!("waymark-pm14-{}", std::process::id()));
    let writes = [
        "touch t1.txt".to_string(),
        "echo x > r1.txt".into(),
        "echo x >> a.txt".into(),
        "rm a.txt".into(),
        "mv a.txt b.txt".into(),
        "mkdir d1".into(),
        "ln -s a.txt l1".into(),
        "python3 -c \"open('p1.txt','w')\"".into(),
        "git -c user.email=t@t -c user.name=t commit --allow-empty -qm sneaky".into(),
        format!("touch {}", outside_tmp.display()),
    ];
    let reads = [
        "cat a.txt",
        "ls",
        "grep -c hello a.txt",
        "git status --short",
        "cargo metadata --format-version 1 --no-deps --offline",
    ];
    let mut calls: Vec<Value> = writes.iter().map(|c| bash(c)).collect();
    calls.extend(reads.iter().map(|c| bash(c)));
    let s = h.session(
        json!({"responses": [{"tool_calls": calls}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    s.submit(user("/plan on")).await.unwrap();
    let plan = plan_file(&h, &s);
    let before = tree_hash(&h.ws, &plan);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&h.ws)
        .output()
        .unwrap()
        .stdout;
    let ev = run(&s, user("investigate")).await;
    let r = results(&ev);
    for (i, (_, status, content)) in r.iter().enumerate().take(writes.len()) {
        assert_eq!(
            *status,
            ToolStatus::Error,
            "`{}` must fail: {content}",
            writes[i]
        );
    }
    for (i, (_, status, content)) in r.iter().enumerate().skip(writes.len()) {
        assert_eq!(
            *status,
            ToolStatus::Ok,
            "`{}` must work: {content}",
            reads[i - writes.len()]
        );
    }
    assert!(r[writes.len()].2.contains("hello world"));
    assert!(r[writes.len() + 4].2.contains("\"name\":\"probe\""));
    assert_eq!(
        tree_hash(&h.ws, &plan),
        before,
        "the workspace is unchanged"
    );
    assert!(!outside_tmp.exists());
    let head_after = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&h.ws)
        .output()
        .unwrap()
        .stdout;
    assert_eq!(head, head_after, "git state did not change");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn pm_14_without_landlock_every_plan_shell_command_asks() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [
            {"tool_calls": [bash("ls"), bash("cat a.txt")]},
            {"text": "ok"}
        ]}),
    );
    let rt = h.reopen(|o| {
        o.env = std::sync::Arc::new(|k: &str| {
            (k == "WAYMARK_SANDBOX").then(|| "unsupported".to_string())
        });
    });
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("scripted:rec".into()),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    std::fs::write(h.ws.join("a.txt"), "hi\n").unwrap();
    let ev = run(&s, plan_entry("look around")).await;
    let q1 = waiting_on(&ev);
    let info = rt
        .snapshot(s.id())
        .unwrap()
        .questionnaires
        .into_iter()
        .find(|q| q.id == q1)
        .unwrap();
    assert_eq!(info.kind, QuestionnaireKind::Permission);
    assert_eq!(info.payload["plan_mode"], true);
    assert!(
        info.payload["prefix"].is_null(),
        "no blanket grant in plan mode"
    );
    // allow_for_session does not stop the next command from asking.
    let ev = run(&s, answer(&q1, Answer::AllowForSession)).await;
    let q2 = waiting_on(&ev);
    assert_ne!(q1, q2);
    let ev = run(&s, answer(&q2, Answer::Deny { message: None })).await;
    let r = results(&ev);
    assert_eq!(r.last().unwrap().1, ToolStatus::Denied);
    let reminder = first_user_text(&rec.requests.lock().unwrap()[0]);
    assert!(
        reminder.contains("the user must approve every shell command"),
        "{reminder}"
    );
    s.shutdown().await.unwrap();
}

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
        waymark_core::store::plans::sha256_hex(GOOD_PLAN.as_bytes())
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

async fn outcome(reply: Answer) -> (Harness, SessionHandle, Vec<waymark_protocol::Event>) {
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

fn implementation_messages(h: &Harness, s: &SessionHandle) -> usize {
    messages(h, s)
        .iter()
        .filter(|m| m.text.starts_with("Implement the plan below"))
        .count()
}

#[tokio::test]
async fn pm_17_approve_inserts_the_implementation_at_the_head_and_leaves_plan_mode() {
    let (h, s, ev) = outcome(Answer::Approve { option: None }).await;
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

#[tokio::test]
async fn pm_17_revise_continues_in_plan_mode_with_the_feedback() {
    let (h, s, ev) = outcome(Answer::Revise {
        text: "cover the docs too".into(),
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
        .submit(answer(&q, Answer::Approve { option: Some(3) }))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("1..2"), "{e}");
    run(&s, answer(&q, Answer::Approve { option: Some(2) })).await;
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
            s.submit(answer(&q, Answer::Approve { option: None })).await
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
    use waymark_core::store::Store;
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
                QuestionnaireKind::PlanApproval,
                &json!({}),
            )
        })
        .unwrap();
    let threads: Vec<_> = (0..50)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                let store = Store::open(&db).unwrap();
                store.write(2, |tx| {
                    tx.answer_questionnaire("q1", &Answer::Approve { option: None })?;
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
            Ok(c.query_row(
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
    held.submit(answer(&q, Answer::Approve { option: None }))
        .await
        .unwrap();
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
    let info = h
        .runtime
        .snapshot(s.id())
        .unwrap()
        .questionnaires
        .into_iter()
        .find(|x| x.id == q)
        .unwrap();
    assert_eq!(info.status, "withdrawn");
    // The plan-exit intent works the same way.
    s.submit(user("/plan on")).await.unwrap();
    s.submit(Op::Submit {
        text: "never mind".into(),
        source: MessageSource::User,
        position: Position::Tail,
        idempotency_key: None,
        intent: Some(Intent::PlanExit),
    })
    .await
    .unwrap();
    assert_eq!(mode(&h, &s), InteractionMode::Default);
    s.shutdown().await.unwrap();
}

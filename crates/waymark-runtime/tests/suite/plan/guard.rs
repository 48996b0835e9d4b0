//! Guard tests.

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

#[tokio::test]
async fn pm_14_shell_battery_under_landlock() {
    let mut c = Config::default();
    // The read-only shell (the scratch shell off, as where the kernel refuses it).
    c.sandbox.scratch_shell = false;
    let h = Harness::new(c);
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
    let (rt, s) = unsandboxed_session(&h, PermissionMode::Auto);
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
    let waymark_protocol::Question::Permission(p) = &info.question else {
        panic!("{info:?}")
    };
    assert_eq!(p.scope.as_deref(), Some("plan"));
    assert!(
        p.grants.prefix.is_none() && p.grants.session.is_none(),
        "no blanket grant in plan mode"
    );
    // Nothing is granted for the session in plan mode without the sandbox: only once.
    let refused = s
        .submit(answer(&q1, Answer::AllowForSession))
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("use one of: allow_once, deny"),
        "{refused}"
    );
    let ev = run(&s, answer(&q1, Answer::AllowOnce)).await;
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

/// A plan-mode question about an unconfined command is asked under plan mode's rules.
/// Leaving plan mode while it waits withdraws it: the call is decided again under the
/// session's own mode, with a question of its own, never run on the old answer.
#[tokio::test]
async fn leaving_plan_mode_withdraws_its_pending_shell_question() {
    let (h, _rec) = Harness::recording(
        Config::default(),
        json!({"responses": [
            {"tool_calls": [bash("touch made.txt")]},
            {"text": "ok"}
        ], "when_exhausted": "repeat_last"}),
    );
    let (rt, s) = unsandboxed_session(&h, PermissionMode::Ask);
    let ev = run(&s, plan_entry("look around")).await;
    let q1 = waiting_on(&ev);
    let asked = |id: &str| {
        rt.questionnaire(s.id(), id)
            .unwrap()
            .unwrap_or_else(|| panic!("no questionnaire {id}"))
    };
    assert!(matches!(
        &asked(&q1).question,
        waymark_protocol::Question::Permission(p) if p.scope.as_deref() == Some("plan")
    ));
    let ev = run(&s, user("/plan off")).await;
    assert_eq!(
        asked(&q1).status,
        waymark_protocol::QuestionnaireStatus::Withdrawn
    );
    let q2 = waiting_on(&ev);
    assert_ne!(q1, q2);
    assert!(matches!(
        &asked(&q2).question,
        waymark_protocol::Question::Permission(p) if p.scope.is_none()
    ));
    assert!(
        !h.ws.join("made.txt").exists(),
        "nothing ran on the old question"
    );
    s.shutdown().await.unwrap();
}

/// Issue 37, item 3, in plan mode: an unconfined command there is asked about, but not when
/// the goal's budget is used up and would refuse it whatever the answer. The refusal comes
/// at once; no question opens that an "Allow" would answer with "denied".
#[tokio::test]
async fn in_plan_mode_a_command_the_budget_refuses_is_never_asked_about() {
    let mut c = Config::default();
    c.goal.verification = Some(waymark_config::Verification::None);
    c.goal.budget.grace_steps = 1;
    let (h, _rec) = Harness::recording(
        c,
        json!({"responses": [
            {"text": "big step", "usage": {"input_tokens": 900, "output_tokens": 200}, "tool_calls": [bash("touch made.txt")]},
            {"text": "Summary: nothing ran.", "usage": {"input_tokens": 50, "output_tokens": 20}}
        ], "when_exhausted": "repeat_last"}),
    );
    let (_rt, s) = unsandboxed_session(&h, PermissionMode::Auto);
    run(&s, user("/plan on")).await;
    let ev = run(&s, user("/goal look around tokens=1K")).await;
    let asked = super::super::harness::permission_asked(&ev);
    assert!(
        asked.is_none(),
        "asked about a command the budget refuses: {asked:?}"
    );
    let r = results(&ev);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("budget"), "{r:?}");
    assert!(!h.ws.join("made.txt").exists());
    s.shutdown().await.unwrap();
}

/// The recorded model's session on a runtime whose shell sandbox is unsupported (every
/// plan-mode shell command then asks).
fn unsandboxed_session(
    h: &Harness,
    mode: PermissionMode,
) -> (waymark_runtime::Runtime, SessionHandle) {
    let rt = h.reopen(|o| {
        o.env = std::sync::Arc::new(|k: &str| {
            (k == "WAYMARK_SANDBOX").then(|| "unsupported".to_string())
        });
    });
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("scripted:rec".into()),
            permission_mode: Some(mode),
            hold: false,
        })
        .unwrap();
    (rt, s)
}

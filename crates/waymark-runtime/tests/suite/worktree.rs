//! Two goals in two worktrees of one project run at the same time in one process without
//! touching each other's files or the checkout, and both show in the session list (G-34);
//! a plan approved as a goal "in a new worktree" is implemented by a new session there (G-36).

use super::harness::{Harness, results, run, user, waiting_on};
use serde_json::json;
use std::path::Path;
use waymark_config::{Config, Verification};
use waymark_protocol::worktree::MergeStyle;
use waymark_protocol::{GoalStatus, Op, PermissionMode};
use waymark_runtime::SessionSpec;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worktree_goals_run_at_once_without_touching_each_other() {
    let mut c = Config::default();
    c.goal.verification = Some(Verification::None);
    let h = Harness::new(c);
    git(&h.ws, &["init", "-q", "-b", "main"]);
    git(&h.ws, &["config", "user.name", "Dev"]);
    git(&h.ws, &["config", "user.email", "dev@example.invalid"]);
    std::fs::write(h.ws.join("shared.txt"), "base\n").unwrap();
    git(&h.ws, &["add", "-A"]);
    git(&h.ws, &["commit", "-qm", "start"]);
    let head = git(&h.ws, &["rev-parse", "HEAD"]);
    let script = |who: &str| {
        json!({"responses": [
            {"delay_ms": 300, "tool_calls": [{"name": "write", "arguments": {"path": format!("{who}.txt"), "content": who}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": format!("echo {who} >> shared.txt")}}]},
            {"text": "done", "tool_calls": [{"name": "update_goal", "arguments":
                {"mode": "status", "status": "complete", "message": "done"}}]},
        ]})
    };
    let start = |who: &str| {
        h.runtime
            .create_session_in_worktree(
                SessionSpec {
                    workspace: Some(h.ws.clone()),
                    model: Some(h.script(script(who))),
                    permission_mode: Some(PermissionMode::Auto),
                    hold: false,
                },
                None,
                &format!("goal for {who}"),
            )
            .unwrap()
    };
    let (a, b) = (start("alpha"), start("beta"));
    let (ea, eb) = tokio::join!(
        run(&a, user("/goal work alpha")),
        run(&b, user("/goal work beta"))
    );
    assert!(!ea.is_empty() && !eb.is_empty());
    // They overlapped: each began before the other ended (one after the other, the second
    // would begin only once the first had ended).
    let span = |e: &[waymark_protocol::Event]| {
        (
            e.iter().map(|x| x.ts).min().unwrap(),
            e.iter().map(|x| x.ts).max().unwrap(),
        )
    };
    let ((a0, a1), (b0, b1)) = (span(&ea), span(&eb));
    assert!(a0 < b1 && b0 < a1, "alpha {a0}..{a1}, beta {b0}..{b1}");
    for (s, mine, theirs) in [(&a, "alpha", "beta"), (&b, "beta", "alpha")] {
        let w = h.runtime.worktree(s.id()).unwrap().expect("a worktree");
        let path = Path::new(&w.path);
        assert_eq!(
            std::fs::read_to_string(path.join(format!("{mine}.txt"))).unwrap(),
            mine
        );
        assert!(
            !path.join(format!("{theirs}.txt")).exists(),
            "{mine} sees {theirs}'s file"
        );
        assert_eq!(
            std::fs::read_to_string(path.join("shared.txt")).unwrap(),
            format!("base\n{mine}\n")
        );
        assert_eq!(
            h.runtime.goal(s.id()).unwrap().unwrap().status,
            GoalStatus::Complete
        );
    }
    // The checkout is as it was.
    assert_eq!(git(&h.ws, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        std::fs::read_to_string(h.ws.join("shared.txt")).unwrap(),
        "base\n"
    );
    assert!(!h.ws.join("alpha.txt").exists() && !h.ws.join("beta.txt").exists());
    // Both show in the list with their branches, under the checkout's own folder as their
    // project (spelt as the checkout is, so the window puts them under one heading).
    let sessions = h.runtime.list_sessions().unwrap();
    for s in sessions.iter().filter(|s| s.worktree.is_some()) {
        assert_eq!(
            s.project.as_deref(),
            Some(h.ws.display().to_string().as_str()),
            "{s:?}"
        );
    }
    let listed: Vec<Option<String>> = sessions.into_iter().map(|s| s.worktree).collect();
    assert_eq!(
        listed
            .iter()
            .flatten()
            .filter(|b| b.starts_with("waymark/for-"))
            .count(),
        2,
        "{listed:?}"
    );
    let (ia, ib) = (a.id().to_string(), b.id().to_string());
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    // A merged worktree is still the session's workspace and still listed; a discarded one
    // is not.
    // The view offers the message a merge would write: the goal's objective.
    let view = h.runtime.worktree(&ia).unwrap().unwrap();
    assert_eq!(view.merge_message, "work alpha");
    // A message the user wrote: refused when empty, else the subject of the merge.
    let empty = h
        .runtime
        .worktree_merge(&ia, None, Some("  \n "), MergeStyle::Squash)
        .unwrap_err();
    assert!(empty.to_string().contains("empty"), "{empty}");
    // Squashed: one commit on `main`, on its old tip alone, saying the message whole.
    let done = h
        .runtime
        .worktree_merge(
            &ia,
            None,
            Some("Alpha, as reviewed\n\nDetails."),
            MergeStyle::Squash,
        )
        .unwrap();
    assert_eq!(done.style, MergeStyle::Squash);
    let log = std::process::Command::new("git")
        .args(["log", "-1", "--format=%P|%B"])
        .current_dir(&h.ws)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    let (parents, body) = log.split_once('|').unwrap();
    assert_eq!(parents.split_whitespace().count(), 1, "{log}");
    assert_eq!(body.trim(), "Alpha, as reviewed\n\nDetails.", "{log}");
    h.runtime.worktree_discard(&ib).unwrap();
    let listed: Vec<(String, Option<String>)> = h
        .runtime
        .list_sessions()
        .unwrap()
        .into_iter()
        .map(|s| (s.id, s.worktree))
        .collect();
    let branch_of = |id: &str| listed.iter().find(|(s, _)| s == id).unwrap().1.clone();
    assert!(branch_of(&ia).is_some(), "{listed:?}");
    assert_eq!(branch_of(&ib), None, "{listed:?}");
}

/// A git repository in the harness's workspace, one commit on `main`.
fn repo(h: &Harness) {
    git(&h.ws, &["init", "-q", "-b", "main"]);
    git(&h.ws, &["config", "user.name", "Dev"]);
    git(&h.ws, &["config", "user.email", "dev@example.invalid"]);
    std::fs::write(h.ws.join("shared.txt"), "base\n").unwrap();
    git(&h.ws, &["add", "-A"]);
    git(&h.ws, &["commit", "-qm", "start"]);
}

const FEATURE_PLAN: &str = "## Summary\nAdd the feature file.\n\n## Steps\n1. Write feature.txt\n";

/// The plan session's script: write the plan and submit it; the implementing session (whose
/// first message is the implementation message) writes the file and completes the goal.
fn plan_then_implement() -> serde_json::Value {
    json!({
        "responses": [super::plan::write_and_exit(FEATURE_PLAN)],
        "branches": [{"when": "Implement the plan below", "responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "feature.txt", "content": "made\n"}}]},
            {"text": "done", "tool_calls": [{"name": "update_goal", "arguments":
                {"mode": "status", "status": "complete", "message": "feature.txt written"}}]},
        ]}],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g_36_a_plan_approved_as_a_goal_in_a_new_worktree_is_implemented_there() {
    let mut c = Config::default();
    c.goal.verification = Some(Verification::None);
    let h = Harness::new(c);
    repo(&h);
    let s = h.session(plan_then_implement(), PermissionMode::AutoEdit);
    let q = waiting_on(&run(&s, super::plan::plan_entry("plan the feature")).await);
    let w = h
        .runtime
        .approve_in_worktree(&s, &q, None, Some(Default::default()), Some("feat"))
        .await
        .unwrap();
    // The plan session recorded the approval, handed over, and left plan mode with nothing
    // queued; the review is closed.
    let snap = h.runtime.snapshot(s.id()).unwrap();
    assert_eq!(
        snap.summary.interaction_mode,
        waymark_protocol::InteractionMode::Default
    );
    assert!(snap.summary.pending_questionnaire.is_none());
    assert!(
        !snap
            .messages
            .iter()
            .any(|m| m.text.starts_with("Implement the plan below")),
        "the plan session queued the implementation itself"
    );
    // The new session works in its worktree on waymark/feat, its goal the plan's.
    let view = h.runtime.worktree(w.id()).unwrap().expect("a worktree");
    assert_eq!(view.branch, "waymark/feat");
    let goal = h.runtime.goal(w.id()).unwrap().expect("a goal");
    assert_eq!(goal.objective, "Add the feature file");
    assert_eq!(goal.status, GoalStatus::Active);
    // Held until resumed; then it implements and completes, in the worktree only.
    let ev = run(&w, Op::Resume).await;
    assert!(!ev.is_empty());
    assert_eq!(
        h.runtime.goal(w.id()).unwrap().unwrap().status,
        GoalStatus::Complete
    );
    let path = Path::new(&view.path);
    assert_eq!(
        std::fs::read_to_string(path.join("feature.txt")).unwrap(),
        "made\n"
    );
    assert!(
        !h.ws.join("feature.txt").exists(),
        "the checkout was touched"
    );
    let listed = h.runtime.list_sessions().unwrap();
    let titles: Vec<_> = listed
        .iter()
        .filter(|x| x.id == s.id() || x.id == w.id())
        .map(|x| x.title.clone())
        .collect();
    assert_eq!(titles[0], titles[1], "named as a pair");
    w.shutdown().await.unwrap();
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g_36_a_failed_hand_over_leaves_the_review_open_and_nothing_behind() {
    let h = Harness::new(Config::default());
    // Not a repository: no worktree can be made.
    let s = h.session(plan_then_implement(), PermissionMode::AutoEdit);
    let q = waiting_on(&run(&s, super::plan::plan_entry("plan the feature")).await);
    let before = h.runtime.list_sessions().unwrap().len();
    let pending = || {
        h.runtime
            .snapshot(s.id())
            .unwrap()
            .summary
            .pending_questionnaire
    };
    let e = h
        .runtime
        .approve_in_worktree(&s, &q, None, None, None)
        .await
        .err()
        .expect("refused outside a repository");
    assert!(e.to_string().contains("not in a git repository"), "{e}");
    assert_eq!(h.runtime.list_sessions().unwrap().len(), before);
    assert_eq!(pending().as_deref(), Some(q.as_str()));
    // In a repository, but an option the plan does not offer: the session made for it goes
    // with its worktree and branch, and the review stays open.
    repo(&h);
    let e = h
        .runtime
        .approve_in_worktree(&s, &q, Some(7), None, Some("nope"))
        .await
        .err()
        .expect("refused: no such option");
    assert!(e.to_string().contains("option"), "{e}");
    assert_eq!(h.runtime.list_sessions().unwrap().len(), before);
    assert!(
        git(&h.ws, &["branch", "--list", "waymark/nope"])
            .trim()
            .is_empty()
    );
    assert_eq!(pending().as_deref(), Some(q.as_str()));
    // A plan session cannot adopt its own plan, and a questionnaire of another kind or of
    // another session is refused.
    let e = s
        .submit(Op::AdoptPlan {
            from_session: s.id().into(),
            questionnaire_id: q.clone(),
            option: None,
            as_goal: None,
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("own plan"), "{e}");
    s.shutdown().await.unwrap();
}

/// In plan mode (its shell sandboxed) a session in a worktree reads its history with git:
/// the project's git folder is in its read set, found from Waymark's own record of the
/// worktree, not from the worktree's `.git` file. It still writes none of it: a commit is
/// refused by the sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_a_worktree_reads_its_history_in_plan_mode_and_writes_none_of_it() {
    let h = Harness::new(Config::default());
    repo(&h);
    let script = json!({"responses": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "git log -1 --format=%s && echo read"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "git commit -q --allow-empty -m sneaky && echo committed"}}]},
        {"text": "Looked."},
    ]});
    let s = h
        .runtime
        .create_session_in_worktree(
            SessionSpec {
                workspace: Some(h.ws.clone()),
                model: Some(h.script(script)),
                permission_mode: Some(PermissionMode::Auto),
                hold: false,
            },
            Some("reader"),
            "read",
        )
        .unwrap();
    let ev = run(&s, super::plan::plan_entry("look at the history")).await;
    let out = results(&ev);
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(
        out[0].2.contains("start\nread"),
        "git could not read the history: {out:?}"
    );
    assert!(
        !out[1].2.contains("committed"),
        "the agent committed: {out:?}"
    );
    assert_eq!(
        git(&h.ws, &["log", "-1", "--format=%s", "waymark/reader"]).trim(),
        "start"
    );
    s.shutdown().await.unwrap();
}

/// The review the app shows writes bidi and invisible characters out, as every other review
/// does: a right-to-left override in a file the agent wrote, or in its name, cannot reorder
/// what the user reads.
#[tokio::test]
async fn a_worktree_diff_shows_bidi_and_invisible_characters_escaped() {
    let h = Harness::new(Config::default());
    repo(&h);
    let s = h
        .runtime
        .create_session_in_worktree(
            SessionSpec {
                workspace: Some(h.ws.clone()),
                model: Some(h.script(json!({"responses": [
                    {"tool_calls": [{"name": "write", "arguments": {"path": "x.rs",
                        "content": "let ok = \"\u{202e}// check it\u{202c}\"; del\u{200b}ete();\n"}}]},
                    {"tool_calls": [{"name": "write", "arguments": {"path": "notes\u{202e}txt.sh",
                        "content": "x\n"}}]},
                    {"text": "done"}
                ]}))),
                permission_mode: Some(PermissionMode::Auto),
                hold: false,
            },
            None,
            "bidi",
        )
        .unwrap();
    run(&s, user("write it")).await;
    let d = h.runtime.worktree_diff(s.id()).unwrap();
    assert!(
        d.diff.contains("\\u{202e}") && d.diff.contains("\\u{200b}"),
        "{}",
        d.diff
    );
    assert!(!d.diff.contains('\u{202e}') && !d.diff.contains('\u{200b}'));
    // The list of changed files too (a file name can reorder what the user reads).
    let w = h.runtime.worktree(s.id()).unwrap().unwrap();
    let names: Vec<&str> = w.changed.iter().map(|c| c.path.as_str()).collect();
    assert!(names.contains(&"notes\\u{202e}txt.sh"), "{names:?}");
    assert!(names.iter().all(|n| !n.contains('\u{202e}')), "{names:?}");
    s.shutdown().await.unwrap();
}

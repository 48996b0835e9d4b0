//! Two goals in two worktrees of one project run at the same time in one process without
//! touching each other's files or the checkout, and both show in the session list (G-34).

use super::harness::{Harness, run, user};
use serde_json::json;
use std::path::Path;
use waymark_protocol::config::{Config, Verification};
use waymark_protocol::{GoalStatus, PermissionMode};
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
    // Both show in the list with their branches.
    let listed: Vec<Option<String>> = h
        .runtime
        .list_sessions()
        .unwrap()
        .into_iter()
        .map(|s| s.worktree)
        .collect();
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
    h.runtime.worktree_merge(&ia, None).unwrap();
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

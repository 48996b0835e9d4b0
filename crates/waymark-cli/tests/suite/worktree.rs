//! Goals in their own git worktree through the binary (G-34), against the real git:
//! `exec --worktree` leaves the main checkout untouched, `.worktreeinclude` files follow,
//! `merge` brings the work in, a conflicting merge changes nothing, `discard` cleans up, and
//! outside a repository it says why.

use super::support::{Env, text};
use serde_json::{Value, json};
use std::path::Path;

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

/// The workspace as a repository with one commit, the user's identity in its settings,
/// `.env` ignored and named by `.worktreeinclude`.
fn project(env: &Env) {
    git(&env.ws, &["init", "-q", "-b", "main"]);
    git(&env.ws, &["config", "user.name", "Dev Eloper"]);
    git(&env.ws, &["config", "user.email", "dev@example.invalid"]);
    std::fs::write(env.ws.join("app.txt"), "version 1\n").unwrap();
    std::fs::write(env.ws.join(".gitignore"), ".env\n").unwrap();
    std::fs::write(env.ws.join(".worktreeinclude"), ".env\n").unwrap();
    git(&env.ws, &["add", "-A"]);
    git(&env.ws, &["commit", "-qm", "start"]);
    std::fs::write(env.ws.join(".env"), "SECRET_URL=local\n").unwrap();
}

fn worktree_of(env: &Env, sid: &str) -> Value {
    let out = env.run(&["worktree", "status", "--session", sid, "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn goal_model(env: &Env, file: &str, content: &str) -> String {
    env.script(
        &format!("{file}.json"),
        json!({"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": format!("test -f .env && printf '{content}' > {file}")}}]},
            {"text": "done", "tool_calls": [{"name": "update_goal", "arguments":
                {"mode": "status", "status": "complete", "message": format!("wrote {file}")}}]},
        ]}),
    )
}

#[test]
fn a_goal_runs_in_its_worktree_and_merges_back() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    project(&env);
    let head = git(&env.ws, &["rev-parse", "HEAD"]);
    let model = goal_model(&env, "feature.txt", "made in the worktree\\n");
    let out = env.exec(
        &model,
        &["--permission", "auto", "/goal add the feature worktree"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("● worktree waymark/add-the-feature-"),
        "{said}"
    );
    assert!(
        said.contains("copied from .worktreeinclude: .env"),
        "{said}"
    );
    let sid = env.only_session();
    let w = worktree_of(&env, &sid);
    let path = Path::new(w["path"].as_str().unwrap()).to_path_buf();
    // The goal's shell found .env and wrote in the worktree; the checkout is untouched.
    assert_eq!(
        std::fs::read_to_string(path.join("feature.txt")).unwrap(),
        "made in the worktree\n"
    );
    assert!(!env.ws.join("feature.txt").exists());
    assert_eq!(git(&env.ws, &["rev-parse", "HEAD"]), head);
    assert_eq!(w["base_branch"], "main");
    assert_eq!(
        w["changed"],
        json!([{"path": "feature.txt", "change": "added"}])
    );
    let out = env.run(&["worktree", "diff", "--session", &sid]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("+made in the worktree"));
    // Merge: one commit of what it held, merged into main with the user's identity.
    let out = env.run(&["worktree", "merge", "--session", &sid]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("merged      into main"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join("feature.txt")).unwrap(),
        "made in the worktree\n"
    );
    let log = git(&env.ws, &["log", "-1", "--format=%an|%s", "HEAD^2"]);
    assert_eq!(log.trim(), "Dev Eloper|add the feature");
    assert_eq!(worktree_of(&env, &sid)["state"], "merged");
    // Discard cleans up the worktree and its branch.
    let out = env.run(&["worktree", "discard", "--session", &sid]);
    assert_eq!(out.status.code(), Some(1), "asks first: {}", text(&out));
    let out = env.run(&["worktree", "discard", "--session", &sid, "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!path.exists());
    assert!(
        git(&env.ws, &["branch", "--list", "waymark/*"])
            .trim()
            .is_empty()
    );
}

#[test]
fn a_conflicting_merge_is_refused_with_nothing_changed() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    project(&env);
    let model = goal_model(&env, "app.txt", "version from the worktree\\n");
    let out = env.exec(
        &model,
        &[
            "--permission",
            "auto",
            "--worktree",
            "clash",
            "/goal change the app",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let sid = env.only_session();
    // Meanwhile the user changed the same file on main.
    std::fs::write(env.ws.join("app.txt"), "version 2 on main\n").unwrap();
    git(&env.ws, &["commit", "-qam", "mine"]);
    let before = (
        git(&env.ws, &["rev-parse", "HEAD"]),
        git(&env.ws, &["rev-parse", "waymark/clash"]),
    );
    // A squash is refused the same way.
    for squash in [&[][..], &["--squash"][..]] {
        let out = env.run(&[&["worktree", "merge", "--session", &sid][..], squash].concat());
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("conflicts in app.txt") && err.contains("Nothing was changed"),
            "{err}"
        );
    }
    assert_eq!(
        (
            git(&env.ws, &["rev-parse", "HEAD"]),
            git(&env.ws, &["rev-parse", "waymark/clash"])
        ),
        before
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join("app.txt")).unwrap(),
        "version 2 on main\n"
    );
}

#[test]
fn outside_a_repository_a_worktree_is_refused_clearly() {
    let env = Env::new();
    let model = env.script("m.json", json!({"responses": [{"text": "hi"}]}));
    let out = env.exec(&model, &["--worktree", "", "hello"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not in a git repository") && err.contains("git init"),
        "{err}"
    );
    let out = env.run(&["sessions", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!([]),
        "no session left half made"
    );
}

/// `answer … approve --as-goal --worktree NAME` (G-36): the plan session records the
/// approval, a new session in a new worktree implements the plan as its goal and runs to
/// the end, and the checkout stays untouched until a merge.
#[test]
fn a_plan_approved_as_a_goal_runs_in_a_new_worktree() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    project(&env);
    let plan = "## Summary\nAdd the feature file.\n\n## Steps\n1. Write feature.txt\n";
    let model = env.script(
        "plan.json",
        json!({
            "responses": [{"text": "Plan written.", "tool_calls": [
                {"name": "write", "arguments": {"path": "${session_dir}/artifacts/plan.md", "content": plan}},
                {"name": "ExitPlanMode", "arguments": {}}
            ]}],
            "branches": [{"when": "Implement the plan below", "responses": [
                {"tool_calls": [{"name": "write", "arguments": {"path": "feature.txt", "content": "made\n"}}]},
                {"text": "done", "tool_calls": [{"name": "update_goal", "arguments":
                    {"mode": "status", "status": "complete", "message": "feature.txt written"}}]},
            ]}],
        }),
    );
    let out = env.exec(
        &model,
        &["--permission", "auto-edit", "--plan", "plan the feature"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let sid = env.only_session();
    let q = super::support::pending_questionnaire(&env, &sid);
    let out = env.run(&[
        "answer",
        "--session",
        &sid,
        &q,
        "approve",
        "--as-goal",
        "--worktree",
        "feat",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("● worktree waymark/feat"), "{said}");
    assert!(
        said.contains(&format!(
            "the plan of session {sid} is implemented in session"
        )),
        "{said}"
    );
    let sessions: Value = serde_json::from_slice(&env.run(&["sessions", "--json"]).stdout).unwrap();
    let made = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["worktree"] == "waymark/feat")
        .expect("the implementing session");
    let wid = made["id"].as_str().unwrap();
    let w = worktree_of(&env, wid);
    let path = Path::new(w["path"].as_str().unwrap()).to_path_buf();
    assert_eq!(
        std::fs::read_to_string(path.join("feature.txt")).unwrap(),
        "made\n"
    );
    assert!(!env.ws.join("feature.txt").exists());
    let g: Value = serde_json::from_slice(
        &env.run(&["goal", "show", "--session", wid, "--json"])
            .stdout,
    )
    .unwrap();
    assert_eq!(g["goal"]["status"], "complete", "{g}");
    assert_eq!(g["goal"]["objective"], "Add the feature file", "{g}");
    // The plan session's review is closed, and it implemented nothing itself.
    let show = env.show(&sid);
    assert!(
        show["questionnaires"]
            .as_array()
            .unwrap()
            .iter()
            .all(|q| q["status"] != "pending"),
        "{show}"
    );
    // --worktree goes with approve only.
    let out = env.run(&["answer", "--session", &sid, &q, "reject", "--worktree"]);
    assert_ne!(out.status.code(), Some(0));
}

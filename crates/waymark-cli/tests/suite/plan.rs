//! Plan mode through the CLI with the scripted model.

use super::support::*;
use serde_json::{Value, json};
use std::process::Stdio;

const PLAN: &str = "${session_dir}/artifacts/plan.md";
const PLAN_V1: &str = "## Summary\nMake the greeting louder.\n\n## Approach\nEdit greet.txt.\n";
const PLAN_V2: &str =
    "## Summary\nMake the greeting louder, docs too.\n\n## Approach\nEdit greet.txt and README.\n";

fn submit(plan: &str) -> Value {
    json!({"text": "Plan written.", "tool_calls": [
        {"name": "write", "arguments": {"path": PLAN, "content": plan}},
        {"name": "ExitPlanMode", "arguments": {}}
    ]})
}

fn implement() -> Value {
    json!({"text": "Implementing.", "tool_calls": [{"name": "write", "arguments": {"path": "greet.txt", "content": "HELLO\n"}}]})
}

fn setup(env: &Env, responses: Vec<Value>) -> String {
    std::fs::write(env.ws.join("greet.txt"), "hello\n").unwrap();
    env.script("s.json", json!({ "responses": responses }))
}

fn mode(env: &Env, sid: &str) -> String {
    env.show(sid)["summary"]["interaction_mode"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn plan_approve_implements_the_frozen_plan() {
    let env = Env::new();
    let model = setup(
        &env,
        vec![
            json!({"tool_calls": [{"name": "ExitPlanMode", "arguments": {}}]}),
            submit(PLAN_V1),
            implement(),
            json!({"text": "Done."}),
        ],
    );
    let out = env.exec(
        &model,
        &["--permission", "auto-edit", "--plan", "make it louder"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("The plan is ready for review") && s.contains("approve [--option N]"),
        "{s}"
    );
    assert!(
        s.contains("(error: the plan file is empty"),
        "ExitPlanMode without a plan is an error the model sees: {s}"
    );
    let sid = env.only_session();
    assert_eq!(mode(&env, &sid), "plan");
    assert_eq!(
        read(env.ws.join("greet.txt")),
        "hello\n",
        "nothing changes before approval"
    );
    let q = pending_questionnaire(&env, &sid);
    let out = env.run(&["answer", "--session", &sid, &q, "approve", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(read(env.ws.join("greet.txt")), "HELLO\n");
    assert_eq!(mode(&env, &sid), "default");
    let ev = json_lines(&out);
    let admitted = ev.iter().find(|e| e["type"] == "message.admitted").unwrap();
    assert_eq!(admitted["source"], "questionnaire");
    assert!(
        admitted["text"]
            .as_str()
            .unwrap()
            .ends_with(&format!("Approved plan:\n{PLAN_V1}"))
    );
    // A second approval is refused and adds nothing.
    let again = env.run(&["answer", "--session", &sid, &q, "approve"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already answered"));
    assert_contiguous(&env.events(&sid));
}

#[test]
fn plan_defer_then_revise_then_reject() {
    let env = Env::new();
    let v3 = format!("{PLAN_V2}\n## Docs\nREADME gets a line.\n");
    let model = setup(&env, vec![submit(PLAN_V1), submit(PLAN_V2), submit(&v3)]);
    let out = env.exec(
        &model,
        &["--permission", "auto-edit", "--plan", "make it louder"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let sid = env.only_session();
    let q1 = pending_questionnaire(&env, &sid);
    let out = env.run(&["answer", "--session", &sid, &q1, "defer"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(mode(&env, &sid), "plan", "not now keeps plan mode");
    // Re-enter review by revising: the continuation gets the feedback, still in plan mode.
    let out = env.exec_session(&sid, &["/plan status"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Plan mode: on"));
    let out = env.run(&[
        "exec",
        "--session",
        &sid,
        "--json",
        "please mention the docs",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let q2 = pending_questionnaire(&env, &sid);
    let out = env.run(&["answer", "--session", &sid, &q2, "revise"]);
    assert_eq!(out.status.code(), Some(1), "revise needs feedback");
    let out = env.run(&[
        "answer",
        "--session",
        &sid,
        &q2,
        "revise",
        "--text",
        "mention the docs",
        "--json",
    ]);
    // The continuation revises the plan and submits it again: back to review.
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let ev = json_lines(&out);
    assert!(ev.iter().any(|e| e["type"] == "message.admitted"
        && e["text"].as_str().unwrap().contains("mention the docs")));
    assert_eq!(mode(&env, &sid), "plan");
    // The revisions, their diff and the rendered plan.
    let revs = env.run(&["plan", "revisions", "--session", &sid, "--json"]);
    let revs: Value = serde_json::from_slice(&revs.stdout).unwrap();
    assert_eq!(revs.as_array().unwrap().len(), 3);
    let diff = env.run(&["plan", "diff", "--session", &sid, "v1", "v2"]);
    let diff = String::from_utf8_lossy(&diff.stdout);
    assert!(
        diff.contains("--- v1")
            && diff.contains("-Make the greeting louder.")
            && diff.contains("+Make the greeting louder, docs too."),
        "{diff}"
    );
    // The same views the desktop's Plan tab gets, as JSON: the plan view and the diff.
    let view = env.run(&["plan", "show", "--session", &sid, "--json"]);
    assert_eq!(view.status.code(), Some(0), "{}", text(&view));
    let view: Value = serde_json::from_slice(&view.stdout).unwrap();
    assert_eq!(view["revisions"].as_array().unwrap().len(), 3);
    assert_eq!(view["review"]["version"], 3, "{view}");
    assert_eq!(view["review"]["file_changed"], false);
    assert!(view["html"].as_str().unwrap().contains("<h2>"), "{view}");
    let rows = env.run(&["plan", "diff", "--session", &sid, "v1", "v2", "--json"]);
    let rows: Value = serde_json::from_slice(&rows.stdout).unwrap();
    assert!(rows["unified"].as_str().unwrap().contains("--- v1"));
    assert!(
        rows["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["kind"] == "removed" || r["kind"] == "changed"),
        "{rows}"
    );
    let html = env.run(&["plan", "render", "--session", &sid]);
    assert!(String::from_utf8_lossy(&html.stdout).contains("<h2>Summary</h2>"));
    let shown = env.run(&["plan", "show", "--session", &sid]);
    assert_eq!(String::from_utf8_lossy(&shown.stdout), v3);
    let q3 = pending_questionnaire(&env, &sid);
    let out = env.run(&["answer", "--session", &sid, &q3, "reject"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(mode(&env, &sid), "default");
    assert_eq!(
        read(env.ws.join("greet.txt")),
        "hello\n",
        "nothing was implemented"
    );
}

#[test]
fn a_plan_edited_by_the_user_is_the_one_implemented() {
    let env = Env::new();
    let model = setup(
        &env,
        vec![
            submit(PLAN_V1),
            json!({"text": "Implementing the user's plan."}),
        ],
    );
    let out = env.exec(&model, &["--permission", "auto-edit", "--plan", "plan"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let sid = env.only_session();
    let mine = env.dir.path().join("mine.md");
    std::fs::write(&mine, PLAN_V2).unwrap();
    let out = env.run(&[
        "plan",
        "edit",
        "--session",
        &sid,
        "--file",
        mine.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let revs: Value = serde_json::from_slice(
        &env.run(&["plan", "revisions", "--session", &sid, "--json"])
            .stdout,
    )
    .unwrap();
    assert_eq!(revs[1]["author"], "user");
    let q = pending_questionnaire(&env, &sid);
    let out = env.run(&["answer", "--session", &sid, &q, "approve", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ev = json_lines(&out);
    let admitted = ev.iter().find(|e| e["type"] == "message.admitted").unwrap();
    assert!(
        admitted["text"]
            .as_str()
            .unwrap()
            .ends_with(&format!("Approved plan:\n{PLAN_V2}"))
    );
}

#[test]
fn two_processes_approving_at_once_yield_one_implementation_message() {
    let env = Env::new();
    let model = setup(
        &env,
        vec![
            submit(PLAN_V1),
            implement(),
            json!({"text": "Done.", "delay_ms": 200}),
        ],
    );
    let out = env.exec(&model, &["--permission", "auto-edit", "--plan", "plan"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let sid = env.only_session();
    let q = pending_questionnaire(&env, &sid);
    let children: Vec<_> = (0..2)
        .map(|_| {
            env.cmd()
                .args(["answer", "--session", &sid, &q, "approve"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<i32> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.code().unwrap())
        .collect();
    assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "{codes:?}");
    // Whoever lost saw the session busy or the questionnaire answered; finish the session.
    let out = env.run(&["exec", "--session", &sid]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let msgs = env.show(&sid)["messages"].as_array().unwrap().clone();
    let implementations = msgs
        .iter()
        .filter(|m| {
            m["text"]
                .as_str()
                .unwrap()
                .starts_with("Implement the plan below")
        })
        .count();
    assert_eq!(implementations, 1);
    assert_eq!(read(env.ws.join("greet.txt")), "HELLO\n");
}

const STEPS_V1: &str = "## Summary\nMake the greeting louder.\n\n## Steps\n1. Uppercase greet.txt\n2. Add an exclamation mark\n\n## Budget\nbudget=30K turns=5\n";
const STEPS_V2: &str = "## Summary\nMake the greeting louder.\n\n## Steps\n1. Uppercase greet.txt with tr\n2. Add an exclamation mark\n\n## Budget\nbudget=30K turns=5\n";

fn pending(env: &Env, sid: &str) -> String {
    pending_questionnaire(env, sid)
}

/// What a `--json` command printed.
fn json_of(env: &Env, args: &[&str]) -> Value {
    let out = env.run(args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

/// `answer … revise --comment`, `plan comments`, `plan list`, `plan read`, then `approve
/// --as-goal --budget` and `plan export` (which asks for --yes in `ask` mode).
#[test]
fn comments_history_approve_as_goal_and_export_from_the_cli() {
    let env = Env::new();
    let claim = json!({"text": "Done.", "tool_calls": [{"name": "update_goal", "arguments": {"mode": "status", "status": "complete", "message": "both steps"}}]});
    let model = setup(
        &env,
        vec![submit(STEPS_V1), submit(STEPS_V2), implement(), claim],
    );
    let model_script = model.trim_start_matches("scripted:").to_string();
    let mut script: Value =
        serde_json::from_str(&std::fs::read_to_string(&model_script).unwrap()).unwrap();
    script["verifier"] = json!([{"text": "STEP 1: MET\nSTEP 2: MET\nVERDICT: PASS"}]);
    std::fs::write(&model_script, script.to_string()).unwrap();

    let out = env.exec(&model, &["--permission", "ask", "--plan", "make it louder"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("Steps (2), as a reviewer would check them:\n    1. Uppercase greet.txt\n    2. Add an exclamation mark\n")
            && shown.contains("The plan's budget: budget=30K turns=5")
            && shown.contains("--as-goal")
            && shown.contains("--comment 12-14"),
        "{shown}"
    );
    let sid = env.only_session();
    let q = pending(&env, &sid);

    // A comment outside the revision is refused before anything is sent.
    let bad = env.run(&[
        "answer",
        "--session",
        &sid,
        &q,
        "revise",
        "--comment",
        "40-41:\"no\"",
    ]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    assert!(text(&bad).contains("past the end"), "{}", text(&bad));
    let malformed = env.run(&[
        "answer",
        "--session",
        &sid,
        &q,
        "revise",
        "--comment",
        "five:\"x\"",
    ]);
    assert_ne!(malformed.status.code(), Some(0));
    assert!(
        text(&malformed).contains("is not a line comment"),
        "{}",
        text(&malformed)
    );

    let out = env.run(&[
        "answer",
        "--session",
        &sid,
        &q,
        "revise",
        "--comment",
        "5:\"Say how: tr or sed?\"",
        "--comment",
        "6-6:\"Keep this one.\"",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let comments = env.run(&["plan", "comments", "--session", &sid]);
    let listed = String::from_utf8_lossy(&comments.stdout);
    assert!(
        listed.contains("v1 lines 5-5  addressed")
            && listed.contains("v1 lines 6-6  unchanged (now lines 6-6)")
            && listed.contains("> 1. Uppercase greet.txt")
            && listed.contains("Say how: tr or sed?"),
        "{listed}"
    );
    let json_comments = json_of(&env, &["plan", "comments", "--session", &sid, "--json"]);
    assert_eq!(json_comments.as_array().unwrap().len(), 2);

    // Approve as a goal with my budget; the goal runs to its verified end.
    let q = pending(&env, &sid);
    let out = env.run(&[
        "answer",
        "--session",
        &sid,
        &q,
        "approve",
        "--as-goal",
        "--budget",
        "budget=20K turns=4",
    ]);
    let said = text(&out);
    let goal = json_of(&env, &["goal", "show", "--session", &sid, "--json"]);
    let g = &goal["goal"];
    assert_eq!(g["budget"]["tokens"]["limit"], 20000, "{said}");
    assert_eq!(g["budget"]["main_turns"]["limit"], 4);
    // Called by the plan's summary line; the revision it implements is in its criteria.
    assert_eq!(g["objective"], "Make the greeting louder", "{g}");
    assert!(
        g["criteria"].as_str().unwrap().contains("revision v2"),
        "{g}"
    );
    assert_eq!(g["steps"].as_array().unwrap().len(), 2);

    let list = env.run(&["plan", "list", "--session", &sid]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains("* plan-")
            && listed.contains("approved")
            && listed.contains("2 revisions")
            && listed.contains("Make the greeting louder"),
        "{listed}"
    );
    let plans = json_of(&env, &["plan", "list", "--session", &sid, "--json"]);
    let plan_id = plans[0]["plan_id"].as_str().unwrap().to_string();
    let v1 = env.run(&[
        "plan",
        "read",
        "--session",
        &sid,
        "--plan",
        &plan_id,
        "--version",
        "1",
    ]);
    assert_eq!(String::from_utf8_lossy(&v1.stdout), STEPS_V1);

    // Export: `ask` mode wants --yes; then the approved revision lands in the workspace.
    let asked = env.run(&[
        "plan",
        "export",
        "--session",
        &sid,
        "--path",
        "docs/plan.md",
    ]);
    assert_ne!(asked.status.code(), Some(0));
    assert!(text(&asked).contains("--yes"), "{}", text(&asked));
    assert!(!env.ws.join("docs/plan.md").exists());
    let out = env.run(&[
        "plan",
        "export",
        "--session",
        &sid,
        "--path",
        "docs/plan.md",
        "--yes",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("docs/plan.md")).unwrap(),
        STEPS_V2
    );
    let outside = env.run(&[
        "plan",
        "export",
        "--session",
        &sid,
        "--path",
        "../escape.md",
        "--yes",
    ]);
    assert_ne!(outside.status.code(), Some(0));
    assert!(!env.dir.path().join("escape.md").exists());
}

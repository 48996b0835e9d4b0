//! Goal scenarios through the CLI with the scripted model, each asserting the final status
//! and reason (`waymark goal show --json`).

use super::support::*;
use serde_json::{Value, json};

fn claim(msg: &str) -> Value {
    json!({"text": format!("claim {msg}"), "tool_calls": [{"name": "update_goal", "arguments": {"mode": "status", "status": "complete", "message": msg}}]})
}

fn step(i: u32) -> Value {
    json!({"text": format!("step {i}"), "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]})
}

fn final_goal(env: &Env, sid: &str) -> (String, String) {
    let out = env.run(&["goal", "show", "--session", sid, "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = &v["goal"];
    (
        g["status"].as_str().unwrap().to_string(),
        g["reason"].as_str().unwrap().to_string(),
    )
}

struct Case {
    name: &'static str,
    settings: Value,
    script: Value,
    prompt: &'static str,
    expect: (&'static str, &'static str),
}

#[test]
fn goal_scenarios_reach_the_expected_status_and_reason() {
    let none = json!({"goal": {"verification": "none"}});
    let sub = json!({"goal": {"verification": "subagent"}});
    let cases = vec![
        Case {
            name: "worker proposal",
            settings: none.clone(),
            script: json!({"responses": [step(1), claim("done")]}),
            prompt: "/goal do it",
            expect: ("complete", "worker_proposal"),
        },
        Case {
            name: "verifier met",
            settings: sub.clone(),
            script: json!({"responses": [claim("done")], "verifier": [{"text": "VERDICT: PASS"}]}),
            prompt: "/goal do it",
            expect: ("complete", "verifier_met"),
        },
        Case {
            name: "fail then pass",
            settings: sub.clone(),
            script: json!({"responses": [claim("one"), step(2), claim("two")], "verifier": [{"text": "- missing docs\nVERDICT: FAIL"}, {"text": "VERDICT: PASS"}]}),
            prompt: "/goal do it",
            expect: ("complete", "verifier_met"),
        },
        Case {
            name: "same gaps five times",
            settings: json!({"goal": {"verification": "subagent", "breaker": {"repeated_reply_limit": 50}}}),
            script: json!({"responses": [claim("x")], "verifier": [{"text": "- gap\nVERDICT: FAIL"}], "when_exhausted": "repeat_last"}),
            prompt: "/goal do it",
            expect: ("paused", "no_progress"),
        },
        Case {
            name: "partial",
            settings: sub.clone(),
            script: json!({"responses": [claim("x")], "verifier": [{"text": "VERDICT: PARTIAL"}]}),
            prompt: "/goal do it",
            expect: ("paused", "verifier_partial"),
        },
        Case {
            name: "malformed verdict",
            settings: sub.clone(),
            script: json!({"responses": [claim("x")], "verifier": [{"text": "seems fine"}]}),
            prompt: "/goal do it",
            expect: ("paused", "verifier_error"),
        },
        Case {
            name: "token budget",
            settings: none.clone(),
            script: json!({"responses": [{"text": "big", "usage": {"input_tokens": 5000, "output_tokens": 100}, "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}, {"text": "summary"}]}),
            prompt: "/goal do it budget=1K",
            expect: ("budget_limited", "tokens"),
        },
        Case {
            name: "turn budget",
            settings: none.clone(),
            script: json!({"responses": [{"text": "a"}, {"text": "b"}, {"text": "summary"}]}),
            prompt: "/goal do it turns=2",
            expect: ("budget_limited", "main_turns"),
        },
        Case {
            name: "time budget",
            settings: none.clone(),
            script: json!({"responses": [{"text": "slow", "delay_ms": 1500}, {"text": "summary"}]}),
            prompt: "/goal do it time=1s",
            expect: ("budget_limited", "active_seconds"),
        },
        Case {
            name: "identical replies",
            settings: none.clone(),
            script: json!({"responses": [step(1), {"text": "same"}], "when_exhausted": "repeat_last"}),
            prompt: "/goal do it",
            expect: ("paused", "no_progress"),
        },
        Case {
            name: "repetition after a claim",
            settings: json!({"goal": {"verification": "subagent", "verifier": {"repeated_not_met_limit": 50}}}),
            script: json!({"responses": [claim("x"), {"text": "it is done"}], "verifier": [{"text": "- no\nVERDICT: FAIL"}], "when_exhausted": "repeat_last"}),
            prompt: "/goal do it",
            expect: ("paused", "no_progress_after_completion_claim"),
        },
        Case {
            name: "rate limited, no automatic resumes",
            settings: json!({"goal": {"verification": "none", "usage_limit": {"auto_resumes": 0}}}),
            script: json!({"responses": [{"error": "rate_limited"}]}),
            prompt: "/goal do it",
            expect: ("usage_limited", "rate_limited"),
        },
        Case {
            name: "quota used up",
            settings: none.clone(),
            script: json!({"responses": [{"error": "quota_exhausted", "resets_in_ms": 1000}]}),
            prompt: "/goal do it",
            expect: ("usage_limited", "quota_exhausted"),
        },
        Case {
            name: "step capped then continues",
            settings: json!({"goal": {"verification": "none"}, "turn": {"max_steps": 1}}),
            script: json!({"responses": [step(1), claim("done")]}),
            prompt: "/goal do it",
            expect: ("complete", "worker_proposal"),
        },
    ];
    for c in cases {
        let env = Env::new();
        env.settings(&c.settings.to_string());
        let model = env.script("s.json", c.script);
        let out = env.exec(&model, &["--permission", "auto", c.prompt]);
        // The exit code says how the goal ended (G-42): a usage limit that will not lift within
        // the run 4, a spent budget 5, a paused goal 6, blocked 3, complete 0.
        let code = match c.expect.0 {
            "usage_limited" => 4,
            "budget_limited" => 5,
            "paused" => 6,
            "blocked" => 3,
            _ => 0,
        };
        assert_eq!(out.status.code(), Some(code), "{}: {}", c.name, text(&out));
        let sid = env.only_session();
        assert_eq!(
            final_goal(&env, &sid),
            (c.expect.0.to_string(), c.expect.1.to_string()),
            "{}: {}",
            c.name,
            text(&out)
        );
        let events = env.run(&["goal", "events", "--session", &sid]);
        assert!(
            String::from_utf8_lossy(&events.stdout).contains("\"type\":\"goal.create\""),
            "{}",
            c.name
        );
        assert!(
            String::from_utf8_lossy(&events.stdout)
                .lines()
                .all(|l| l.contains("\"type\":\"goal.")),
            "only goal events: {}",
            c.name
        );
    }
}

#[test]
fn raising_the_exhausted_budget_reactivates_and_create_goal_needs_approval() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script("s.json", json!({"responses": [
        {"tool_calls": [{"name": "create_goal", "arguments": {"objective": "tidy", "turn_budget": 1}}]},
        {"text": "did a thing"},
        {"text": "summary"},
        claim("tidy now")
    ]}));
    let out = env.exec(&model, &["set a goal to tidy"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("The agent proposes a goal"));
    let sid = env.only_session();
    let q = pending_questionnaire(&env, &sid);
    let out = env.run(&["answer", "--session", &sid, &q, "approve"]);
    // The approved goal spent its one turn: exit 5, saying how to raise it.
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    assert!(text(&out).contains("/goal turns="), "{}", text(&out));
    assert_eq!(
        final_goal(&env, &sid),
        ("budget_limited".into(), "main_turns".into())
    );
    let out = env.run(&["exec", "--session", &sid, "/goal budget=20K"]);
    assert_eq!(out.status.code(), Some(5), "still out of turns");
    assert_eq!(
        final_goal(&env, &sid),
        ("budget_limited".into(), "main_turns".into()),
        "another dimension does not reactivate"
    );
    let out = env.run(&["exec", "--session", &sid, "/goal turns=5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        final_goal(&env, &sid),
        ("complete".into(), "worker_proposal".into())
    );
}

#[test]
fn goal_next_and_a_refused_budget_change_in_a_continuation() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script("s.json", json!({"responses": [
        {"tool_calls": [{"name": "update_goal", "arguments": {"mode": "token_budget", "token_budget": 999999}}]},
        claim("first"),
        claim("second")
    ]}));
    let out = env.exec(
        &model,
        &[
            "--permission",
            "auto",
            "--json",
            "/goal fix the bug budget=50K",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sid = env.only_session();
    let ev = json_lines(&out);
    let refused = ev
        .iter()
        .find(|e| e["type"] == "tool.result" && e["name"] == "update_goal")
        .unwrap();
    assert_eq!(refused["status"], "error");
    assert!(
        refused["content"]
            .as_str()
            .unwrap()
            .contains("only change in a turn the user started")
    );
    assert!(
        ev.iter().any(|e| e["type"] == "goal.updated"),
        "--json shows the snapshots"
    );
    // With no goal unfinished, the next one starts at once (G-46).
    let out = env.run(&["exec", "--session", &sid, "/goal next write the docs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let show: Value = serde_json::from_slice(
        &env.run(&["goal", "show", "--session", &sid, "--json"])
            .stdout,
    )
    .unwrap();
    // The same goal view the desktop shows: the goal and its timeline.
    assert!(show["timeline"].as_array().is_some_and(|t| !t.is_empty()));
    let show = &show["goal"];
    assert_eq!(show["objective"], "write the docs");
    assert_eq!(
        (show["status"].as_str(), show["reason"].as_str()),
        (Some("complete"), Some("worker_proposal"))
    );
}

#[test]
fn a_permission_question_mid_goal_suspends_it_and_the_answer_resumes_it() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "out.txt", "content": "x"}}]},
            claim("wrote out.txt")
        ]}),
    );
    let out = env.exec(&model, &["--permission", "ask", "/goal write out.txt"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let sid = env.only_session();
    assert_eq!(
        final_goal(&env, &sid),
        ("active".into(), "created".into()),
        "waiting does not pause the goal"
    );
    let q = pending_questionnaire(&env, &sid);
    let out = env.run(&["answer", "--session", &sid, &q, "allow_once"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        final_goal(&env, &sid),
        ("complete".into(), "worker_proposal".into())
    );
    assert_eq!(read(env.ws.join("out.txt")), "x");
}

#[test]
fn a_killed_goal_run_is_paused_as_app_closed_on_reopen() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script(
        "s.json",
        json!({"responses": [step(1), {"text": "slow", "delay_ms": 20000}]}),
    );
    let (mut child, sid, _lines) = spawn_until_tool_result(&env, &model, "/goal long job");
    child.kill().unwrap();
    child.wait().unwrap();
    let out = env.run(&["exec", "--session", &sid]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert_eq!(
        final_goal(&env, &sid),
        ("paused".into(), "app_closed".into())
    );
}

#[test]
fn ctrl_c_pauses_the_goal_as_user_requested() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script(
        "s.json",
        json!({"responses": [step(1), {"text": "slow", "delay_ms": 20000}]}),
    );
    let (mut child, sid, mut lines) = spawn_until_tool_result(&env, &model, "/goal long job");
    #[allow(unsafe_code)]
    // SAFETY: sends SIGINT to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    for _ in lines.by_ref() {}
    let status = child.wait().unwrap();
    // Stopped by the user, the goal is paused: exit 6 (paused), not an error.
    assert_eq!(status.code(), Some(6));
    assert_eq!(
        final_goal(&env, &sid),
        ("paused".into(), "user_requested".into())
    );
}

#[test]
fn the_reviewers_calls_are_marked_as_its_own() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "subagent"}}"#);
    let model = env.script("s.json", json!({"responses": [
        {"text": "working", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        claim("done")
    ], "verifier": [
        {"text": "checking", "tool_calls": [{"name": "glob", "arguments": {"pattern": "*.md"}}]},
        {"text": "VERDICT: PASS"}
    ]}));
    let out = env.exec(&model, &["--permission", "auto", "/goal do it"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("✓ [reviewer] glob"), "{printed}");
    assert!(printed.contains("✓ list_dir"), "{printed}");
    assert!(!printed.contains("[reviewer] list_dir"), "{printed}");
}

/// `goal show` names what the agent asked of a blocked goal; `goal reply` answers it and runs
/// the session on until the goal completes; a reply to a goal that is not blocked fails
/// (exit 1) and names why.
#[test]
fn a_blocked_goal_is_answered_with_goal_reply() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let ask = json!({"text": "I need a decision.", "tool_calls": [{"name": "update_goal", "arguments":
        {"mode": "status", "status": "blocked", "message": "Reject or escape quotes?"}}]});
    let model = env.script(
        "s.json",
        json!({"responses": [ask, {"text": "Escaping."}, claim("escaped")]}),
    );
    let out = env.exec(
        &model,
        &["--permission", "auto", "/goal make greet.sh safe"],
    );
    // Blocked on the user: exit 3, and it says how to see the question.
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("goal blocked"), "{}", text(&out));
    let sid = env.only_session();
    let shown = text(&env.run(&["goal", "show", "--session", &sid]));
    assert!(
        shown.contains("The agent asks: Reject or escape quotes?"),
        "{shown}"
    );
    assert!(shown.contains("goal reply"), "{shown}");

    let out = env.run(&["goal", "reply", "--session", &sid, "--text", "Escape them."]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        final_goal(&env, &sid),
        ("complete".into(), "worker_proposal".into())
    );
    let out = env.run(&["goal", "reply", "--session", &sid, "--text", "again"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("not blocked"), "{}", text(&out));
}

/// A goal waiting on its check outlives `--wait-limit`: `exec` exits 7 saying what it waits
/// for and when it gives up; once the check would pass, a later `exec` with no prompt runs
/// the check at once, the goal wakes, and the run ends with it complete (G-47).
#[test]
fn a_waiting_goal_outlives_exec_and_wakes_on_its_check_in_a_later_one() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let wait = json!({"text": "CI is still running.", "tool_calls": [{"name": "wait", "arguments":
        {"check": "test -f ready", "every": 30, "reason": "CI run 7"}}]});
    let model = env.script("s.json", json!({"responses": [wait, claim("released")]}));
    let out = env.exec(
        &model,
        &[
            "--permission",
            "auto",
            "--wait-limit",
            "1s",
            "/goal ship it",
        ],
    );
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("Waiting for `test -f ready` to succeed") && said.contains("CI run 7"),
        "{said}"
    );
    assert!(
        said.contains("past --wait-limit") && said.contains("waymark exec --session"),
        "{said}"
    );
    let sid = env.only_session();
    let shown = text(&env.run(&["goal", "show", "--session", &sid]));
    assert!(shown.contains("waiting"), "{shown}");

    std::fs::write(env.ws.join("ready"), "").unwrap();
    let out = env.exec_session(&sid, &["--wait-limit", "2m"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("wait check passed"), "{}", text(&out));
    assert_eq!(
        final_goal(&env, &sid),
        ("complete".into(), "worker_proposal".into())
    );
}

/// `--wait-limit` bounds a run's waiting in all: two waits each within it, together past it,
/// end the run at the second (exit 7) rather than letting a model hold `exec` open by waiting
/// again and again.
#[test]
fn the_wait_limit_bounds_all_the_waits_of_a_run() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let wait = json!({"text": "Waiting.", "tool_calls": [{"name": "wait", "arguments":
        {"seconds": 30, "reason": "cool-down"}}]});
    let model = env.script(
        "s.json",
        json!({"responses": [wait.clone(), wait, claim("done")]}),
    );
    let start = std::time::Instant::now();
    let out = env.exec(
        &model,
        &[
            "--permission",
            "auto",
            "--wait-limit",
            "45s",
            "/goal ship it",
        ],
    );
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    assert!(text(&out).contains("past --wait-limit"), "{}", text(&out));
    assert!(
        start.elapsed() < std::time::Duration::from_secs(50),
        "it waited both"
    );
}

/// A goal that stops while `exec` waits with it (its time budget spent by waiting) ends the
/// run at once with the goal's code, never leaving `exec` waiting for nothing.
#[test]
fn exec_ends_when_a_waiting_goal_stops_without_a_turn() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let wait = json!({"text": "Waiting.", "tool_calls": [{"name": "wait", "arguments":
        {"seconds": 300, "reason": "cool-down"}}]});
    let model = env.script("s.json", json!({"responses": [wait]}));
    let start = std::time::Instant::now();
    let out = env.exec(&model, &["--permission", "auto", "/goal ship it time=3s"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    assert!(
        start.elapsed() < std::time::Duration::from_secs(60),
        "exec waited on"
    );
    let sid = env.only_session();
    assert_eq!(
        final_goal(&env, &sid),
        ("budget_limited".into(), "active_seconds".into())
    );
}

/// `waymark goal draft` prints a draft (the scripted model drafts from the words) and sets
/// nothing; `/goal draft` sent as a message says where drafting happens instead of setting a
/// goal named "draft …".
#[test]
fn a_goal_is_drafted_from_rough_words_and_nothing_is_set() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script("s.json", json!({"responses": [{"text": "Hello."}]}));
    let out = env.exec(&model, &["hi"]);
    assert!(out.status.success(), "{}", text(&out));
    let sid = env.only_session();
    let out = env.run(&[
        "goal",
        "draft",
        "--session",
        &sid,
        "make the parser take trailing commas",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("Objective: make the parser take trailing commas"),
        "{said}"
    );
    assert!(
        said.contains("Done when:") && said.contains("tokens=200000 turns=20 time=3600s"),
        "{said}"
    );
    assert!(said.contains("Nothing is set"), "{said}");
    let shown = text(&env.run(&["goal", "show", "--session", &sid]));
    assert!(shown.contains("no goal is set"), "{shown}");
    let out = env.exec_session(&sid, &["/goal draft fix the flaky test"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("waymark goal draft"), "{}", text(&out));
    let shown = text(&env.run(&["goal", "show", "--session", &sid]));
    assert!(shown.contains("no goal is set"), "{shown}");
}

/// `waymark goal queue` lists, adds, moves and removes queued goals by their place in line
/// (G-46); a place not in line is refused with the places there are, and changes nothing.
#[test]
fn the_goal_queue_is_managed_from_the_command_line() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let ask = json!({"text": "Which one?", "tool_calls": [{"name": "update_goal", "arguments":
        {"mode": "status", "status": "blocked", "message": "Which one?"}}]});
    let model = env.script("s.json", json!({"responses": [ask]}));
    let out = env.exec(&model, &["--permission", "auto", "/goal tidy the docs"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let sid = env.only_session();
    let queue = |args: &[&str]| {
        let mut all = vec!["goal", "queue"];
        all.extend_from_slice(&args[..1]);
        all.extend_from_slice(&["--session", &sid]);
        all.extend_from_slice(&args[1..]);
        env.run(&all)
    };
    let listed = |env: &Env| {
        String::from_utf8(
            env.run(&["goal", "queue", "list", "--session", &sid])
                .stdout,
        )
        .unwrap()
    };
    assert!(listed(&env).contains("the goal queue is empty"));
    for add in [
        "write the changelog tokens=20K",
        "\"tag the release\" turns=3",
        "announce it",
    ] {
        let out = queue(&["add", add]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("Queued"), "{}", text(&out));
    }
    assert!(
        listed(&env).contains(
            "1. write the changelog  (tokens=20000)\n2. tag the release  (turns=3)\n3. announce it"
        ),
        "{}",
        listed(&env)
    );
    assert!(queue(&["move", "3", "1"]).status.success());
    assert!(queue(&["remove", "2"]).status.success());
    assert!(
        listed(&env).starts_with("1. announce it\n2. tag the release"),
        "{}",
        listed(&env)
    );
    let out = queue(&["remove", "7"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("no place 7") && text(&out).contains("1 to 2"),
        "{}",
        text(&out)
    );
    let json: serde_json::Value = serde_json::from_slice(
        &env.run(&["goal", "queue", "list", "--session", &sid, "--json"])
            .stdout,
    )
    .unwrap();
    assert_eq!(json[1]["objective"], "tag the release");
    assert_eq!(json[1]["turns"], 3);
}

/// A goal whose `exec` is killed mid-run is paused when its session opens again, and the
/// CLI says so with a line; opening the session does not resume it (G-24).
#[test]
fn a_goal_killed_mid_run_is_named_and_not_resumed() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script(
        "s.json",
        json!({"responses": [
            step(1),
            {"text": "slow", "delay_ms": 20000},
            step(2)
        ]}),
    );
    let (mut child, sid, _lines) =
        spawn_until_tool_result(&env, &model, "/goal keep checking the folder");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let out = env.run(&["exec", "--session", &sid]);
    // The goal stays paused until the user resumes it: exit 6.
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("[goal paused: its run ended when the process running it stopped"),
        "{said}"
    );
    assert!(
        said.contains("keep checking the folder") && said.contains("/goal resume"),
        "{said}"
    );
    assert_eq!(
        final_goal(&env, &sid),
        ("paused".into(), "app_closed".into())
    );
    let turns = env
        .events(&sid)
        .iter()
        .filter(|e| e["type"] == "turn.started")
        .count();
    assert_eq!(turns, 1, "opening the session ran nothing");
}

fn goal_show(env: &Env, sid: &str) -> String {
    let out = env.run(&["goal", "show", "--session", sid]);
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A usage limit that resets within `--wait-limit`: `exec` prints the countdown, waits, and
/// the goal resumes by itself (actor `system`) and runs to the end.
#[test]
fn exec_waits_through_a_short_usage_limit_and_the_goal_resumes() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"error": "rate_limited", "resets_in_ms": 1500},
            claim("all done")
        ]}),
    );
    let out = env.exec(
        &model,
        &[
            "--permission",
            "auto",
            "--wait-limit",
            "1m",
            "/goal finish it",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("[usage limit: waiting until "), "{said}");
    assert!(said.contains("goal active (resumed, by system)"), "{said}");
    let sid = env.only_session();
    assert_eq!(
        final_goal(&env, &sid),
        ("complete".into(), "worker_proposal".into())
    );
}

/// A reset later than `--wait-limit`: exit code 4 with the reset time; the schedule ends with
/// the process (nothing resumes the goal behind the user's back), and `goal show` says so.
#[test]
fn exec_exits_4_when_the_limit_resets_later_than_the_wait_limit() {
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script(
        "s.json",
        json!({"responses": [{"error": "rate_limited", "resets_in_ms": 3_600_000}, claim("x")]}),
    );
    let out = env.exec(&model, &["--permission", "auto", "/goal finish it"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("[usage limit: the provider's limit resets at ")
            && said.contains("later than --wait-limit 10m 00s")
            && said.contains("Exit code 4")
            && said.contains("\"/goal resume\""),
        "{said}"
    );
    let sid = env.only_session();
    let shown = goal_show(&env, &sid);
    assert!(
        shown.contains("Status: usage_limited (rate_limited, by runtime)")
            && (shown.contains("(in 59m") || shown.contains("(in 1h 00m"))
            && shown.contains("the automatic resume was cancelled"),
        "{shown}"
    );
    // `--wait-limit 0` never waits, even for a second.
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script(
        "s.json",
        json!({"responses": [{"error": "rate_limited", "resets_in_ms": 1000}, claim("x")]}),
    );
    let out = env.exec(
        &model,
        &[
            "--permission",
            "auto",
            "--wait-limit",
            "0",
            "/goal finish it",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    // A wait limit that is not a time is a usage error naming the forms.
    let bad = env.exec(&model, &["--wait-limit", "5x", "hello"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(
        text(&bad).contains("write 90s, 10m, 2h or 0"),
        "{}",
        text(&bad)
    );
}

/// While `exec` waits, `waymark goal show` from another terminal counts down; Ctrl-C stops
/// the wait (exit 130) and the goal stays limited until the user resumes it.
#[test]
fn goal_show_counts_down_while_exec_waits_and_ctrl_c_stops_the_wait() {
    use std::io::BufRead;
    let env = Env::new();
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let model = env.script(
        "s.json",
        json!({"responses": [{"error": "rate_limited", "resets_in_ms": 1_800_000}, claim("x")]}),
    );
    let mut child = env
        .cmd()
        .args(env.exec_args(
            &model,
            &[
                "--permission",
                "auto",
                "--wait-limit",
                "1h",
                "/goal finish it",
            ],
        ))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let first = err.next().unwrap().unwrap();
    assert!(first.starts_with("[usage limit: waiting until "), "{first}");
    let sid = env.only_session();
    let shown = goal_show(&env, &sid);
    assert!(
        shown.contains("(in 29m") || shown.contains("(in 30m"),
        "{shown}"
    );
    assert!(
        shown.contains("The goal resumes by itself then (automatic resume 1 of 3)"),
        "{shown}"
    );
    let killed = std::process::Command::new("kill")
        .args(["-s", "INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let rest: Vec<String> = err.map_while(Result::ok).collect();
    assert!(
        rest.iter()
            .any(|l| l.contains("stopped waiting for the usage limit")),
        "{rest:?}"
    );
    assert!(goal_show(&env, &sid).contains("the automatic resume was cancelled"));
}

//! The `task` tool (issue 42): a subagent never gets more than its parent. An `explore`
//! child cannot write; a `general` child in plan mode cannot write outside the plan file; a
//! child is not offered `task`; a custom agent file (Claude Code's format) gives the child
//! its prompt and its tools, which only narrow; the parent's next request holds each child's
//! report. The parent's and the children's model calls share one script, in call order.

use super::harness::{Harness, results, run, user};
use serde_json::{Value, json};
use waymark_config::Config;
use waymark_protocol::{CallActor, EventKind, PermissionMode, ToolStatus};
use waymark_runtime::provider::ModelMessage;

fn task(agent: &str, prompt: &str) -> Value {
    json!({"name": "task", "arguments": {"description": "look around", "prompt": prompt, "agent": agent}})
}

/// The results of calls made by a subagent, in order.
fn child_results(ev: &[waymark_protocol::Event]) -> Vec<(String, ToolStatus, String)> {
    ev.iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                name,
                status,
                content,
                actor: CallActor::Subagent(_),
                ..
            } => Some((name.clone(), *status, content.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_explore_child_cannot_write_and_its_report_reaches_the_parent() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [
            {"tool_calls": [task("explore", "Find the config file and fix its typo.")]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "config.toml", "content": "fixed"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "touch by-explore"}}]},
            {"text": "The config is config.toml; I could not change it."},
            {"text": "done"}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    let ev = run(&s, user("fix the config")).await;
    let child = child_results(&ev);
    assert_eq!(child.len(), 2, "{child:?}");
    for (name, status, said) in &child {
        assert_ne!(
            *status,
            ToolStatus::Ok,
            "{name} ran in an explore child: {said}"
        );
    }
    assert!(!h.ws.join("config.toml").exists());
    assert!(!h.ws.join("by-explore").exists());
    let parent = results(&ev);
    let (_, status, report) = parent.iter().find(|r| r.0 == "task").unwrap();
    assert_eq!(*status, ToolStatus::Ok, "{report}");
    assert!(report.starts_with("[task:explore]"), "{report}");
    assert!(report.contains("The config is config.toml"), "{report}");
    // The child saw read-only tools only, and not `task`.
    let requests = rec.requests.lock().unwrap().clone();
    let offered: Vec<&str> = requests[1].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        offered.contains(&"read_file") && offered.contains(&"grep"),
        "{offered:?}"
    );
    for absent in ["write", "edit", "bash", "task", "web_fetch"] {
        assert!(
            !offered.contains(&absent),
            "{absent} offered to explore: {offered:?}"
        );
    }
    // The parent's next request holds the report.
    let last = format!("{:?}", requests.last().unwrap().messages);
    assert!(last.contains("The config is config.toml"), "{last}");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_general_child_in_plan_mode_cannot_write_outside_the_plan_file() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [task("general", "Implement it.")]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "src.rs", "content": "fn main() {}"}}]},
            {"text": "I could not write."},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    s.submit(user("/plan on")).await.unwrap();
    let ev = run(&s, user("plan it")).await;
    let child = child_results(&ev);
    assert_eq!(child.len(), 1, "{child:?}");
    assert_eq!(child[0].1, ToolStatus::Denied, "{child:?}");
    assert!(child[0].2.contains("Plan mode"), "{child:?}");
    assert!(!h.ws.join("src.rs").exists());
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_child_calling_task_is_refused() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [task("general", "Split this up.")]},
            {"tool_calls": [task("general", "Deeper.")]},
            {"text": "I could not delegate."},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("go")).await;
    let child = child_results(&ev);
    assert_eq!(child.len(), 1, "{child:?}");
    assert_eq!(child[0].0, "task");
    assert_ne!(child[0].1, ToolStatus::Ok, "{child:?}");
    s.shutdown().await.unwrap();
}

/// A project's agent file, as Claude Code writes one: its prompt is the child's, and its
/// `tools` narrow the child to them.
#[tokio::test]
async fn a_custom_agent_file_is_used_and_its_tools_only_narrow() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [
            {"tool_calls": [task("doc-checker", "Check the README.")]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "touch by-checker"}}]},
            {"text": "The README is fine."},
            {"text": "done"}
        ]}),
    );
    std::fs::create_dir_all(h.ws.join(".claude/agents")).unwrap();
    std::fs::write(
        h.ws.join(".claude/agents/doc-checker.md"),
        "---\nname: doc-checker\ndescription: Checks documentation\ntools: Read, Grep, Bash\nmodel: inherit\n---\nYou are the documentation checker of Otter Corp.\n",
    )
    .unwrap();
    let s = h.recorded_session(PermissionMode::ReadOnly);
    let ev = run(&s, user("check the docs")).await;
    let requests = rec.requests.lock().unwrap().clone();
    assert!(
        requests[1]
            .system
            .contains("documentation checker of Otter Corp"),
        "{}",
        requests[1].system
    );
    let mut offered: Vec<&str> = requests[1].tools.iter().map(|t| t.name.as_str()).collect();
    offered.sort();
    assert_eq!(offered, ["bash", "grep", "read_file"]);
    // Its `Bash` is still the parent's read-only mode's: refused.
    let child = child_results(&ev);
    assert_eq!(child[0].1, ToolStatus::Denied, "{child:?}");
    assert!(!h.ws.join("by-checker").exists());
    let first = match &requests[1].messages[0] {
        ModelMessage::User { text, .. } => text.clone(),
        other => format!("{other:?}"),
    };
    assert_eq!(first, "Check the README.");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn two_tasks_in_one_reply_both_report_to_the_parent() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [
            {"tool_calls": [task("explore", "Look at the tests."), task("explore", "Look at the docs.")]},
            {"text": "Report one: tests are fine."},
            {"text": "Report two: docs are fine."},
            {"text": "done"}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    let ev = run(&s, user("survey")).await;
    let r = results(&ev);
    assert_eq!(
        r.iter()
            .filter(|r| r.0 == "task" && r.1 == ToolStatus::Ok)
            .count(),
        2,
        "{r:?}"
    );
    let last = format!(
        "{:?}",
        rec.requests.lock().unwrap().last().unwrap().messages
    );
    assert!(
        last.contains("Report one") && last.contains("Report two"),
        "{last}"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_unknown_agent_is_refused_with_the_names_of_those_there_are() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [{"tool_calls": [task("wizard", "Do magic.")]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].1, ToolStatus::Error, "{r:?}");
    assert!(r[0].2.contains("explore, general"), "{r:?}");
    s.shutdown().await.unwrap();
}

/// The parent and its child on each provider's real wire format (a mock server): the child's
/// request holds the task and not the parent's conversation, and the parent's next request
/// holds the child's report.
#[tokio::test]
async fn a_task_runs_on_the_openai_and_anthropic_wires() {
    use super::mock_server::{Flavor, MockServer, on_mock, reply};
    for flavor in [Flavor::OpenAi, Flavor::Anthropic] {
        let h = Harness::new(Config::default());
        let server = MockServer::start(vec![
            reply(
                flavor,
                "Handing it over.",
                Some((
                    "task",
                    json!({"description": "count", "prompt": "Count the files in the workspace.", "agent": "explore"}),
                )),
                100,
            ),
            reply(flavor, "Child report: no files at all.", None, 50),
            reply(flavor, "done", None, 120),
        ])
        .await;
        let (_rt, s) = on_mock(&h, flavor, &server, |_| {});
        let r = results(&run(&s, user("how many files are there, really?")).await);
        assert_eq!(r.len(), 1, "{flavor:?}: {r:?}");
        assert_eq!(r[0].1, ToolStatus::Ok, "{flavor:?}: {r:?}");
        let sent = server.recorded();
        assert_eq!(sent.len(), 3, "{flavor:?}");
        let child = sent[1].body.to_string();
        assert!(
            child.contains("Count the files in the workspace."),
            "{flavor:?}: {child}"
        );
        assert!(
            !child.contains("really?"),
            "{flavor:?}: the child saw the parent's talk"
        );
        let parent = sent[2].body.to_string();
        assert!(
            parent.contains("Child report: no files at all."),
            "{flavor:?}: {parent}"
        );
        s.shutdown().await.unwrap();
    }
}

/// Two `task` calls in one reply, on each provider's wire (a mock server): the children run
/// at once. Each child's reply streams with a pause of 1.5 s in it, so children run one after
/// the other would reach the server at least that far apart; side by side, both ask before
/// either is answered. With `max_parallel` 1 they run one after the other. The parent's next
/// request holds both reports.
#[tokio::test]
async fn two_tasks_in_one_reply_run_at_once_on_the_openai_and_anthropic_wires() {
    use super::mock_server::{Flavor, MockServer, on_mock, reply, reply_calls};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    const PAUSE: Duration = Duration::from_millis(1500);
    for (flavor, max_parallel) in [
        (Flavor::OpenAi, None),
        (Flavor::Anthropic, None),
        (Flavor::OpenAi, Some(1)),
    ] {
        let h = Harness::new(Config::default());
        let arrivals: Arc<Mutex<Vec<(&str, Instant)>>> = Arc::default();
        let seen = arrivals.clone();
        let server = MockServer::start_with(move |r| {
            let body = r.body.to_string();
            if body.contains("You are a subagent") {
                let which = if body.contains("Look at the tests.") { "one" } else { "two" };
                seen.lock().unwrap().push((which, Instant::now()));
                let mut slow = reply(flavor, &format!("Report {which}: all fine."), None, 50)
                    .split_at(&[40]);
                slow.pause = PAUSE;
                slow
            } else if body.contains("Report one") {
                reply(flavor, "done", None, 200)
            } else {
                let look = |what: &str| {
                    json!({"description": "look", "prompt": format!("Look at the {what}."), "agent": "explore"})
                };
                reply_calls(
                    flavor,
                    "Two at once.",
                    &[("task", look("tests")), ("task", look("docs"))],
                    100,
                )
            }
        })
        .await;
        let (_rt, s) = on_mock(&h, flavor, &server, |o| {
            if let Some(n) = max_parallel {
                o.config
                    .extensions
                    .insert("subagents".into(), json!({"max_parallel": n}));
            }
        });
        let r = results(&run(&s, user("survey the project")).await);
        assert_eq!(r.len(), 2, "{flavor:?}: {r:?}");
        assert!(r.iter().all(|r| r.1 == ToolStatus::Ok), "{flavor:?}: {r:?}");
        let at = arrivals.lock().unwrap().clone();
        assert_eq!(at.len(), 2, "{flavor:?}: {at:?}");
        let apart = at[1].1.duration_since(at[0].1);
        match max_parallel {
            None => assert!(
                apart < Duration::from_millis(1000),
                "{flavor:?}: the second child asked {apart:?} after the first: they ran one after the other"
            ),
            Some(_) => assert!(apart >= PAUSE, "{flavor:?}: {apart:?}"),
        }
        let last = server.recorded().last().unwrap().body.to_string();
        assert!(
            last.contains("Report one: all fine.") && last.contains("Report two: all fine."),
            "{flavor:?}: {last}"
        );
        s.shutdown().await.unwrap();
    }
}

/// Stop while a child's command runs ends the `task` call within a second.
#[tokio::test]
async fn stop_during_a_child_ends_it_within_a_second() {
    use waymark_protocol::Op;
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [task("general", "Wait a while.")]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
            {"text": "never"},
            {"text": "never either"}
        ]}),
        PermissionMode::Auto,
    );
    let mut rx = s.subscribe();
    s.submit(user("go")).await.unwrap();
    loop {
        let ev = rx.recv().await.unwrap();
        if matches!(
            &ev.kind,
            EventKind::ToolCall {
                actor: CallActor::Subagent(_),
                ..
            }
        ) {
            break;
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let stopped = std::time::Instant::now();
    s.submit(Op::Stop).await.unwrap();
    loop {
        let ev = rx.recv().await.unwrap();
        if let EventKind::ToolResult { name, status, .. } = &ev.kind
            && name == "task"
        {
            assert_ne!(*status, ToolStatus::Ok);
            break;
        }
    }
    let took = stopped.elapsed();
    assert!(
        took < std::time::Duration::from_secs(1),
        "the task ended {took:?} after Stop"
    );
    s.shutdown().await.unwrap();
}

/// Waits for a permission question about a subagent's call; its id.
async fn child_question(
    rx: &mut tokio::sync::broadcast::Receiver<waymark_protocol::Event>,
) -> String {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let ev = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("no question came")
            .unwrap();
        if let EventKind::QuestionnaireOpened { id, question } = ev.kind
            && let waymark_protocol::Question::Permission(p) = *question
        {
            assert!(p.call_id.starts_with("ta-"), "{p:?}");
            return id;
        }
    }
}

/// A child's permission question reaches the user like its parent's (issue 42): in `ask`,
/// a `general` child's write waits on the user; allowed, it runs; denied, the child is told
/// and nothing is written; Stop while it waits withdraws the question and ends the turn.
#[tokio::test]
async fn a_childs_permission_question_reaches_the_user_and_the_answer_decides() {
    use super::harness::collect;
    use waymark_protocol::{Answer, Op};
    let write = |path: &str| json!({"tool_calls": [{"name": "write", "arguments": {"path": path, "content": "from the child"}}]});
    let (h, _rec) = Harness::recording(
        Config::default(),
        json!({"responses": [
            {"tool_calls": [task("general", "Write the notes file.")]}, write("notes.txt"), {"text": "Wrote it."}, {"text": "done"},
            {"tool_calls": [task("general", "Write another.")]}, write("other.txt"), {"text": "Could not."}, {"text": "done"},
            {"tool_calls": [task("general", "And a third.")]}, write("third.txt"), {"text": "never"}
        ], "when_exhausted": "repeat_last"}),
    );
    let s = h.recorded_session(PermissionMode::Ask);
    for (message, answer) in [
        ("write notes", Answer::AllowOnce),
        (
            "write another",
            Answer::Deny {
                message: Some("not that file".into()),
            },
        ),
    ] {
        let mut rx = s.subscribe();
        s.submit(user(message)).await.unwrap();
        let q = child_question(&mut rx).await;
        s.submit(Op::Answer {
            questionnaire_id: q,
            answer,
        })
        .await
        .unwrap();
        let ev = collect(&mut rx).await;
        let child = child_results(&ev);
        assert_eq!(child.len(), 1, "{child:?}");
        if message == "write notes" {
            assert_eq!(child[0].1, ToolStatus::Ok, "{child:?}");
        } else {
            assert_eq!(child[0].1, ToolStatus::Denied, "{child:?}");
            assert!(child[0].2.contains("not that file"), "{child:?}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(h.ws.join("notes.txt")).unwrap(),
        "from the child"
    );
    assert!(!h.ws.join("other.txt").exists());
    // Stop while the child waits: the question is withdrawn and the turn ends at once.
    let mut rx = s.subscribe();
    s.submit(user("a third")).await.unwrap();
    let q = child_question(&mut rx).await;
    let started = std::time::Instant::now();
    s.submit(Op::Stop).await.unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let snap = h.runtime.snapshot(s.id()).unwrap();
    let asked = snap.questionnaires.iter().find(|x| x.id == q).unwrap();
    assert_ne!(asked.status.as_str(), "pending", "{:?}", asked.status);
    assert!(!h.ws.join("third.txt").exists());
    s.shutdown().await.unwrap();
}

//! The runtime end to end in-process with the scripted model: admission, the turn engine,
//! guards, questionnaires, Stop, step cap, context budget, leases.

use super::harness::{Harness, collect, finished, results, run, types, user, waiting_on};
use serde_json::json;
use waymark_config::Config;
use waymark_protocol::{
    Answer, EventKind, MessageSource, Op, PermissionMode, Position, ToolStatus, TurnEndReason,
};
use waymark_runtime::SessionSpec;
use waymark_runtime::session::OpOutcome;

#[tokio::test]
async fn write_edit_bash_gives_the_file_and_events() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"text": "Writing.", "tool_calls": [{"name": "write", "arguments": {"path": "notes/a.txt", "content": "alpha\nbeta\n"}}]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": "notes/a.txt", "old_string": "beta", "new_string": "gamma"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "cat notes/a.txt && wc -l < notes/a.txt"}}]},
            {"text": "All done."}
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("make the notes")).await;
    assert_eq!(
        std::fs::read_to_string(h.ws.join("notes/a.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    assert_eq!(
        types(&ev),
        vec![
            "message.admitted",
            "turn.started",
            "assistant.message",
            "tool.call",
            "tool.result",
            "assistant.message",
            "tool.call",
            "tool.result",
            "assistant.message",
            "tool.call",
            "tool.result",
            "assistant.message",
            "turn.finished",
            "session.idle"
        ]
    );
    let r = results(&ev);
    assert!(r.iter().all(|(_, st, _)| *st == ToolStatus::Ok), "{r:?}");
    assert!(
        r[2].2.contains("alpha\ngamma\n2") && r[2].2.contains("[exit code: 0]"),
        "{}",
        r[2].2
    );
    assert_eq!(finished(&ev), vec![(TurnEndReason::Completed, None)]);
    assert!(
        ev.iter()
            .any(|e| matches!(&e.kind, EventKind::AssistantDelta { .. })),
        "text streams as deltas"
    );
    // The log is contiguous and holds no transient events.
    let log = h.runtime.events(s.id(), 0, 10_000).unwrap();
    for (i, e) in log.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
        assert!(!e.kind.is_transient());
    }
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn ask_mode_parks_on_a_permission_questionnaire_then_allow_once_completes() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"text": "Wrote it."}
        ]}),
        PermissionMode::Ask,
    );
    let ev = run(&s, user("write a")).await;
    let qid = match &ev.last().unwrap().kind {
        EventKind::SessionWaiting {
            questionnaire_id,
            kind,
        } => {
            assert_eq!(kind.as_str(), "permission");
            questionnaire_id.clone()
        }
        other => panic!("{other:?}"),
    };
    assert!(!h.ws.join("a.txt").exists());
    // A wrong kind of answer is refused with the accepted ones named.
    let e = s
        .submit(Op::Answer {
            questionnaire_id: qid.clone(),
            answer: Answer::Defer,
        })
        .await
        .unwrap_err();
    // (this command offers no prefix grant, so that answer is not named either)
    assert!(
        e.to_string()
            .ends_with("use one of: allow_once, allow_for_session, deny"),
        "{e}"
    );
    let ev = run(
        &s,
        Op::Answer {
            questionnaire_id: qid.clone(),
            answer: Answer::AllowOnce,
        },
    )
    .await;
    assert_eq!(std::fs::read_to_string(h.ws.join("a.txt")).unwrap(), "x");
    assert_eq!(finished(&ev), vec![(TurnEndReason::Completed, None)]);
    // Answering again is refused.
    let again = s
        .submit(Op::Answer {
            questionnaire_id: qid,
            answer: Answer::AllowOnce,
        })
        .await
        .unwrap_err();
    assert_eq!(again.code(), "questionnaire_closed");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn deny_reaches_the_model_as_a_denial_with_the_users_message() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "rm -rf build"}}]},
            {"text": "Understood, leaving build alone."}
        ]}),
    );
    let s = h.recorded_session(PermissionMode::Ask);
    let ev = run(&s, user("clean up")).await;
    let questionnaire_id = &waiting_on(&ev);
    let ev = run(
        &s,
        Op::Answer {
            questionnaire_id: questionnaire_id.clone(),
            answer: Answer::Deny {
                message: Some("keep the build folder".into()),
            },
        },
    )
    .await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Denied);
    assert!(r[0].2.contains("keep the build folder"));
    let reqs = rec.requests.lock().unwrap().clone();
    let last = reqs.last().unwrap();
    let denial = last.messages.iter().find_map(|m| match m {
        waymark_runtime::provider::ModelMessage::ToolResult {
            content, is_error, ..
        } => Some((content.clone(), *is_error)),
        _ => None,
    });
    assert_eq!(
        denial,
        Some((
            "The user denied this call: keep the build folder".into(),
            true
        ))
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn allow_prefix_grants_the_command_prefix() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo two"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo three; ls"}}]},
            {"text": "ok"}
        ]}),
        PermissionMode::Ask,
    );
    let ev = run(&s, user("echo")).await;
    let questionnaire_id = &waiting_on(&ev);
    let ev = run(
        &s,
        Op::Answer {
            questionnaire_id: questionnaire_id.clone(),
            answer: Answer::AllowPrefix,
        },
    )
    .await;
    // `echo two` runs without asking; the chained command asks again.
    let r = results(&ev);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(matches!(
        ev.last().unwrap().kind,
        EventKind::SessionWaiting { .. }
    ));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn stop_kills_the_running_tool_keeps_partial_output_and_aborts_the_turn() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo partial-output; sleep 30"}}]},
            {"text": "never"}
        ]}),
        PermissionMode::Auto,
    );
    let mut rx = s.subscribe();
    s.submit(user("run it")).await.unwrap();
    loop {
        let ev = rx.recv().await.unwrap();
        if matches!(ev.kind, EventKind::ToolCall { .. }) {
            break;
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    s.submit(Op::Stop).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    let ev = collect(&mut rx).await;
    assert!(started.elapsed().as_secs() < 10);
    let r = results(&ev);
    assert!(
        r[0].2.contains("partial-output") && r[0].2.contains("stopped by the user"),
        "{r:?}"
    );
    assert_eq!(finished(&ev), vec![(TurnEndReason::Aborted, None)]);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn step_cap_ends_the_turn_as_step_capped() {
    let mut config = Config::default();
    config.turn.max_steps = 3;
    let h = Harness::new(config);
    let s = h.session(
        json!({"responses": [{"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}], "when_exhausted": "repeat_last"}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("loop")).await;
    assert_eq!(finished(&ev), vec![(TurnEndReason::StepCapped, None)]);
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e.kind, EventKind::AssistantMessage { .. }))
            .count(),
        3
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn provider_errors_end_the_turn_with_a_typed_error() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [{"error": "rate_limited"}, {"error": "bad_response"}]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("one")).await;
    assert_eq!(
        finished(&ev),
        vec![(TurnEndReason::Error, Some("rate_limited".into()))]
    );
    let ev = run(&s, user("two")).await;
    assert_eq!(
        finished(&ev),
        vec![(TurnEndReason::Error, Some("bad_response".into()))]
    );
    let ev = run(&s, user("three")).await;
    assert_eq!(
        finished(&ev),
        vec![(TurnEndReason::Error, Some("script_exhausted".into()))]
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn tool_errors_and_unknown_tools_go_back_to_the_model() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [
                {"name": "read_file", "arguments": {"path": "missing.txt"}},
                {"name": "teleport", "arguments": {}},
                {"name": "write", "arguments": {"path": "../escape.txt", "content": "x"}}
            ]},
            {"text": "I see."}
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("try")).await;
    let r = results(&ev);
    assert_eq!(r.len(), 3);
    assert!(r[..2].iter().all(|(_, st, _)| *st == ToolStatus::Error));
    assert!(r[1].2.contains("no tool named `teleport`"));
    // A write outside the workspace is refused by the guard, even in auto mode.
    assert_eq!(r[2].1, ToolStatus::Denied, "{:?}", r[2]);
    assert!(r[2].2.contains("inside the workspace"), "{:?}", r[2]);
    assert!(!h.dir.path().join("escape.txt").exists());
    assert_eq!(finished(&ev), vec![(TurnEndReason::Completed, None)]);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn slash_commands_run_at_admission_and_never_reach_the_model() {
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": [{"text": "hi"}]}), PermissionMode::Auto);
    let mut rx = s.subscribe();
    let out = s.submit(user("/help")).await.unwrap();
    let OpOutcome::Command { output } = out else {
        panic!("{out:?}")
    };
    assert!(output.contains("/help") && output.contains("/goal") && output.contains("/plan"));
    for line in output.lines() {
        assert!(
            line.chars().count() <= 80,
            "wider than 80 columns: {line:?}"
        );
    }
    let e = s.submit(user("/frobnicate now")).await.unwrap_err();
    assert_eq!(e.code(), "unknown_command");
    assert!(e.to_string().contains("/frobnicate") && e.to_string().contains("/help"));
    s.submit(Op::Resume).await.unwrap();
    let ev = collect(&mut rx).await;
    assert!(
        ev.iter()
            .any(|e| matches!(e.kind, EventKind::CommandOutput { .. }))
    );
    assert!(
        !ev.iter()
            .any(|e| matches!(e.kind, EventKind::TurnStarted { .. }))
    );
    assert!(h.runtime.snapshot(s.id()).unwrap().messages.is_empty());
    // `//` sends a literal slash.
    let ev = run(&s, user("//help is a command")).await;
    let admitted = ev.iter().find_map(|e| match &e.kind {
        EventKind::MessageAdmitted { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert_eq!(admitted.as_deref(), Some("/help is a command"));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn idempotency_key_and_head_insertion() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [{"text": "a"}, {"text": "b"}, {"text": "c"}]}),
        PermissionMode::Auto,
    );
    let mk = |text: &str, position, key: Option<&str>| Op::Submit {
        text: text.into(),
        source: MessageSource::System,
        position,
        idempotency_key: key.map(str::to_string),
        intent: None,
        images: Vec::new(),
    };
    // Park the session on a questionnaire-free path: submit while nothing runs, then read order.
    let a = s
        .submit(mk("tail-1", Position::Tail, Some("k1")))
        .await
        .unwrap();
    let b = s
        .submit(mk("tail-1 again", Position::Tail, Some("k1")))
        .await
        .unwrap();
    match (a, b) {
        (
            OpOutcome::Admitted {
                message_id: x,
                created: true,
            },
            OpOutcome::Admitted {
                message_id: y,
                created: false,
            },
        ) => assert_eq!(x, y),
        other => panic!("{other:?}"),
    }
    let mut rx = s.subscribe();
    s.submit(Op::Resume).await.unwrap();
    collect(&mut rx).await;
    let snap = h.runtime.snapshot(s.id()).unwrap();
    assert_eq!(snap.messages.len(), 1);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn head_insertion_runs_first() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [{"text": "1", "delay_ms": 300}, {"text": "2"}, {"text": "3"}]}),
        PermissionMode::Auto,
    );
    let mut rx = s.subscribe();
    s.submit(user("first")).await.unwrap();
    s.submit(user("tail")).await.unwrap();
    s.submit(Op::Submit {
        text: "urgent".into(),
        source: MessageSource::System,
        position: Position::Head,
        idempotency_key: None,
        intent: None,
        images: Vec::new(),
    })
    .await
    .unwrap();
    let mut order = Vec::new();
    loop {
        let ev = rx.recv().await.unwrap();
        if let EventKind::TurnStarted { message_id, .. } = ev.kind {
            order.push(message_id);
        }
        if order.len() == 3 {
            break;
        }
    }
    assert_eq!(order, vec![1, 3, 2]);
    s.shutdown().await.unwrap();
}

/// When compaction cannot help (here its call fails), the request is still cut to fit:
/// the oldest tool outputs are replaced by a note.
#[tokio::test]
async fn oversized_history_gets_old_tool_outputs_elided_not_dropped() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"context_tokens": 12000, "compact": [{"error": "server_error"}], "responses": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]},
            {"text": "done"}
        ]}),
    );
    std::fs::write(h.ws.join("big.txt"), "word word word\n".repeat(2000)).unwrap();
    let s = h.recorded_session(PermissionMode::Auto);
    let ev = run(&s, user("read it thrice")).await;
    assert!(
        ev.iter()
            .any(|e| matches!(e.kind, EventKind::ContextElided { .. }))
    );
    let reqs = rec.requests.lock().unwrap().clone();
    let last = reqs.last().unwrap();
    let contents: Vec<String> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            waymark_runtime::provider::ModelMessage::ToolResult { content, .. } => {
                Some(content.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(contents.len(), 3, "no tool result is dropped");
    assert!(contents[0].contains("elided to fit the context window"));
    assert!(contents[2].len() > 20_000, "the newest output is kept");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_second_opener_gets_session_busy_until_the_first_releases() {
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": [{"text": "hi"}]}), PermissionMode::Auto);
    let id = s.id().to_string();
    let other = waymark_runtime::Runtime::open(h.runtime.options().clone()).unwrap();
    let e = other
        .open_session(&id, SessionSpec::default())
        .err()
        .unwrap();
    assert_eq!(e.code(), "session_busy");
    assert!(e.to_string().contains(&std::process::id().to_string()));
    // A busy session is not changed either: the second opener asked for read-only.
    let e = other
        .open_session(
            &id,
            SessionSpec {
                permission_mode: Some(PermissionMode::ReadOnly),
                ..SessionSpec::default()
            },
        )
        .err()
        .unwrap();
    assert_eq!(e.code(), "session_busy");
    assert_eq!(
        h.runtime.snapshot(&id).unwrap().summary.permission_mode,
        PermissionMode::Auto
    );
    s.shutdown().await.unwrap();
    let again = other.open_session(&id, SessionSpec::default()).unwrap();
    again.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_model_is_sent_our_system_prompt_and_tools() {
    let (h, rec) = Harness::recording(Config::default(), json!({"responses": [{"text": "hello"}]}));
    let s = h.recorded_session(PermissionMode::Auto);
    run(&s, user("hi")).await;
    let req = rec.requests.lock().unwrap()[0].clone();
    let ws_s = h.ws.display().to_string();
    let data = h
        .dir
        .path()
        .join("data")
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let system = req
        .system
        .replace(&ws_s, "<workspace>")
        .replace(&data, "<data>");
    let session_id = s.id().to_string();
    let system = system.replace(&session_id, "<session>");
    insta::assert_snapshot!("system_prompt", system);
    insta::assert_json_snapshot!("tools", req.tools);
    s.shutdown().await.unwrap();
}

mod extension_points {
    use super::super::harness::{Harness, Recording, run, user};
    use futures_util::future::BoxFuture;
    use serde_json::{Value, json};
    use std::sync::Arc;
    use waymark_config::Config;
    use waymark_protocol::{EventKind, PermissionMode, ToolStatus, TurnEndReason};
    use waymark_runtime::SessionSpec;
    use waymark_runtime::commands::{CommandContext, CommandSpec, SlashCommand};
    use waymark_runtime::context::{Reminder, ReminderContext, ReminderSource};
    use waymark_runtime::extension::{Extension, GuardStage};
    use waymark_runtime::guard::{GuardCall, GuardDecision, ToolGuard};
    use waymark_runtime::provider::ModelMessage;
    use waymark_runtime::tools::{FreeTool, Tool, ToolContext, ToolError, ToolOutput};

    struct FinishNow;
    impl Tool for FinishNow {
        fn name(&self) -> &'static str {
            "finish_now"
        }
        fn description(&self) -> &'static str {
            "ends the turn"
        }
        fn schema(&self) -> Value {
            json!({"type": "object"})
        }
        fn effects(&self) -> waymark_tools::Effects {
            waymark_tools::Effects::READS
        }
    }

    impl FreeTool for FinishNow {
        fn handle<'a>(
            &'a self,
            _: &'a ToolContext,
            _: Value,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async {
                Ok(ToolOutput {
                    images: Vec::new(),
                    content: "waiting for the user".into(),
                    terminate: true,
                })
            })
        }
    }

    struct NoGlob;
    impl ToolGuard for NoGlob {
        fn name(&self) -> &'static str {
            "no-glob"
        }
        fn before_tool_call(&self, call: &GuardCall<'_>) -> GuardDecision {
            if call.tool.name() == "glob" {
                GuardDecision::Deny("glob is off here".into())
            } else {
                GuardDecision::Allow
            }
        }
    }

    struct Note(i32, &'static str);
    impl ReminderSource for Note {
        fn reminders(&self, _: &ReminderContext<'_>) -> Vec<Reminder> {
            vec![Reminder {
                priority: self.0,
                source: "test",
                text: self.1.into(),
            }]
        }
    }

    struct Ping;
    impl SlashCommand for Ping {
        fn spec(&self) -> CommandSpec {
            CommandSpec {
                name: "ping",
                usage: "/ping",
                summary: "answers pong",
                details: "",
            }
        }
        fn run(
            &self,
            _: &mut CommandContext<'_, '_>,
            args: &str,
        ) -> waymark_runtime::Result<String> {
            Ok(format!("pong {args}"))
        }
    }

    struct TestExtension;
    impl Extension for TestExtension {
        fn name(&self) -> &'static str {
            "test"
        }
        fn tools(&self) -> Vec<Arc<dyn FreeTool>> {
            vec![Arc::new(FinishNow)]
        }
        fn guards(&self) -> Vec<(GuardStage, Arc<dyn ToolGuard>)> {
            vec![(GuardStage::BeforePermission, Arc::new(NoGlob))]
        }
        fn reminders(&self) -> Vec<Arc<dyn ReminderSource>> {
            vec![
                Arc::new(Note(1, "LOW-PRIORITY NOTE")),
                Arc::new(Note(50, "HIGH-PRIORITY NOTE")),
            ]
        }
        fn commands(&self) -> Vec<Arc<dyn waymark_runtime::commands::SlashCommand>> {
            vec![Arc::new(Ping)]
        }
    }

    #[tokio::test]
    async fn extensions_add_tools_guards_reminders_and_commands() {
        let h = Harness::new(Config::default());
        let rec = Recording::new(
            json!({"responses": [
                {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
                {"tool_calls": [{"name": "finish_now", "arguments": {}}, {"name": "list_dir", "arguments": {"path": "."}}]},
                {"text": "never reached"}
            ]}),
            &h.ws,
        );
        let mut opts = h.runtime.options().clone();
        opts.provider_override = Some(rec.clone());
        opts.extensions = vec![Arc::new(TestExtension)];
        let runtime = waymark_runtime::Runtime::open(opts).unwrap();
        let s = runtime
            .create_session(SessionSpec {
                workspace: Some(h.ws.clone()),
                model: Some("scripted:rec".into()),
                permission_mode: Some(PermissionMode::Ask),
                hold: false,
            })
            .unwrap();
        let out = s.submit(user("/ping hello")).await.unwrap();
        assert_eq!(
            out,
            waymark_runtime::session::OpOutcome::Command {
                output: "pong hello".into()
            }
        );
        let ev = run(&s, user("go")).await;
        let results = crate::suite::harness::results(&ev);
        // The extension guard runs before the permission guard: a denial, not a question.
        assert_eq!(
            results[0],
            ("glob".into(), ToolStatus::Denied, "glob is off here".into())
        );
        assert_eq!(results[1].0, "finish_now");
        assert_eq!(results[2].1, ToolStatus::Error);
        assert!(results[2].2.contains("an earlier tool call ended the turn"));
        let reason = ev.iter().find_map(|e| match &e.kind {
            EventKind::TurnFinished { reason, .. } => Some(*reason),
            _ => None,
        });
        assert_eq!(reason, Some(TurnEndReason::Terminated));
        let reqs = rec.requests.lock().unwrap().clone();
        assert!(reqs[0].tools.iter().any(|t| t.name == "finish_now"));
        let ModelMessage::User { text, .. } = &reqs[0].messages[0] else {
            panic!()
        };
        let (hi, lo) = (
            text.find("HIGH-PRIORITY").unwrap(),
            text.find("LOW-PRIORITY").unwrap(),
        );
        assert!(hi < lo && text.ends_with("go"), "{text}");
        s.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_session_whose_api_key_is_gone_still_opens_and_its_turns_say_why() {
    let h = Harness::new(Config::default());
    let with_key = h.reopen(|o| {
        o.env =
            std::sync::Arc::new(|k: &str| (k == "OPENAI_API_KEY").then(|| "sk-test".to_string()));
    });
    let s = with_key
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("openai:gpt-test".into()),
            ..Default::default()
        })
        .unwrap();
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    // No key any more: the session opens (to be read), and a turn fails naming the variable.
    let vars = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
        String,
        String,
    >::new()));
    let seen = vars.clone();
    let without = h.reopen(|o| {
        o.env = std::sync::Arc::new(move |k: &str| seen.lock().unwrap().get(k).cloned())
    });
    let s = without.open_session(&id, SessionSpec::default()).unwrap();
    let ev = run(&s, user("hello")).await;
    let (reason, error) = ev
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::TurnFinished { reason, error, .. } => Some((*reason, error.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(reason, TurnEndReason::Error);
    let error = error.unwrap();
    assert_eq!(error.code, "auth");
    assert!(
        error.message.contains("OPENAI_API_KEY"),
        "{}",
        error.message
    );
    // The key is stored meanwhile (the app's keyring): the open session's next turn uses it.
    let server = super::mock_server::MockServer::start(vec![
        super::mock_server::MockResponse::sse(concat!(
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello back.\"}}]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3}}\n\n",
            "data: [DONE]\n\n",
        )),
    ])
    .await;
    vars.lock().unwrap().extend([
        ("OPENAI_API_KEY".to_string(), "sk-stored-later".to_string()),
        ("OPENAI_BASE_URL".to_string(), format!("{}/v1", server.url)),
    ]);
    let ev = run(&s, user("hello again")).await;
    let reason = ev.iter().find_map(|e| match &e.kind {
        EventKind::TurnFinished { reason, .. } => Some(*reason),
        _ => None,
    });
    assert_eq!(reason, Some(TurnEndReason::Completed), "{ev:?}");
    let req = &server.recorded()[0];
    assert!(
        req.headers
            .contains("authorization: bearer sk-stored-later"),
        "{}",
        req.headers
    );
    s.shutdown().await.unwrap();
    // Creating a session still refuses at once when the key is missing.
    vars.lock().unwrap().clear();
    let e = without
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("openai:gpt-test".into()),
            ..Default::default()
        })
        .err()
        .unwrap();
    assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");
}

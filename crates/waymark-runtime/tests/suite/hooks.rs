//! Hooks in Claude Code's shape (issue 42), attacked the way a careless or hostile setup
//! would: a hook blocks a call and its words reach the model; a hook's "allow" never lets a
//! write through plan mode or `read-only`; a hook past its timeout blocks the call and is
//! killed; `PostToolUse` sees the result; `UserPromptSubmit` adds context; a script written
//! for Claude Code works unchanged; a project's own hooks run only once approved; Waymark's own
//! events (`GoalStatusChanged`) fire.

use super::harness::{Harness, results, run, user};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use waymark_config::Config;
use waymark_protocol::{EventKind, PermissionMode, ToolStatus};

/// Settings with `hooks` (`~/.claude/settings.json` left out, so the machine's own file
/// never joins in).
fn config(mut hooks: Value) -> Config {
    hooks["import_claude"] = json!(false);
    Config::from_json(&json!({"hooks": hooks}).to_string()).unwrap()
}

fn on(event: &str, matcher: &str, command: &str) -> Value {
    json!({event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": 10}]}]})
}

fn bash(command: &str) -> Value {
    json!({"name": "bash", "arguments": {"command": command}})
}

/// A hook script written for Claude Code: it reads the event on stdin and refuses `rm` in
/// a Bash call with exit 2, saying why on stderr.
const NO_RM: &str = r#"import json, sys
event = json.load(sys.stdin)
if event["tool_name"] == "Bash" and "rm " in event["tool_input"]["command"]:
    print("rm is not allowed here; move files to trash/ instead", file=sys.stderr)
    sys.exit(2)
"#;

fn script(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    format!("python3 {}", p.display())
}

fn all_text(requests: &[waymark_runtime::provider::ModelRequest]) -> Vec<String> {
    requests.iter().map(|r| format!("{r:?}")).collect()
}

#[tokio::test]
async fn a_claude_code_hook_blocks_rm_and_its_words_reach_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let no_rm = script(tmp.path(), "no_rm.py", NO_RM);
    let log = tmp.path().join("seen.log");
    let mut hooks = on("PreToolUse", "Bash", &no_rm);
    hooks["PreToolUse"]
        .as_array_mut()
        .unwrap()
        .push(json!({"matcher": "*", "hooks": [{"type": "command", "command":
            format!("python3 -c 'import json,sys; print(json.load(sys.stdin)[\"tool_name\"])' >> {}", log.display())}]}));
    let (h, rec) = Harness::recording(
        config(hooks),
        json!({"responses": [
            {"tool_calls": [bash("ls")]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "keep.txt"}}]},
            {"tool_calls": [bash("rm -rf keep.txt")]},
            {"text": "done"}
        ]}),
    );
    std::fs::write(h.ws.join("keep.txt"), "precious\n").unwrap();
    let s = h.recorded_session(PermissionMode::Auto);
    let ev = run(&s, user("tidy up")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert_eq!(r[1].1, ToolStatus::Ok, "{r:?}");
    assert_eq!(r[2].1, ToolStatus::Denied, "{r:?}");
    assert!(r[2].2.contains("move files to trash/"), "{r:?}");
    assert!(h.ws.join("keep.txt").exists(), "the rm ran");
    // The model's next request holds the hook's words.
    let sent = all_text(&rec.requests.lock().unwrap());
    assert!(sent[3].contains("move files to trash/"), "{}", sent[3]);
    // The `*` hook saw every call, by Claude Code's names.
    let seen = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        seen.lines().collect::<Vec<_>>(),
        ["Bash", "Read", "Bash"],
        "{seen}"
    );
    // Each run is logged, and says what it decided.
    let ran: Vec<_> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HookRan {
                event,
                outcome,
                exit_code,
                ..
            } => Some((event.clone(), outcome.clone(), *exit_code)),
            _ => None,
        })
        .collect();
    assert!(
        ran.contains(&("PreToolUse".into(), Some("blocked".into()), Some(2))),
        "{ran:?}"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn permission_decision_deny_denies_and_ask_asks() {
    let deny = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "writes wait for the freeze to end"}}'"#;
    let h = Harness::new(config(on("PreToolUse", "Write", deny)));
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    let r = results(&run(&s, user("write it")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("freeze"), "{r:?}");
    assert!(!h.ws.join("a.txt").exists());
    s.shutdown().await.unwrap();

    let ask = r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "a human looks at writes"}}'"#;
    let h = Harness::new(config(on("PreToolUse", "Write", ask)));
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("write it")).await;
    let asked = ev.iter().any(|e| {
        matches!(&e.kind, EventKind::QuestionnaireOpened { question, .. }
            if format!("{question:?}").contains("a human looks at writes"))
    });
    assert!(asked, "auto mode did not ask though the hook said so");
    assert!(!h.ws.join("a.txt").exists());
    s.shutdown().await.unwrap();
}

/// A hook that allows everything: the permission mode and plan mode still decide.
#[tokio::test]
async fn a_hooks_allow_never_lets_a_write_through_plan_mode_or_read_only() {
    let allow =
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "allow"}, "decision": "approve"}'"#;
    let h = Harness::new(config(on("PreToolUse", "*", allow)));
    let write = json!({"responses": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "out.txt", "content": "x"}}]},
        {"text": "done"}
    ]});
    let s = h.session(write.clone(), PermissionMode::ReadOnly);
    let r = results(&run(&s, user("write it")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    s.shutdown().await.unwrap();

    let s = h.session(write, PermissionMode::Auto);
    s.submit(user("/plan on")).await.unwrap();
    let r = results(&run(&s, user("write it")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("Plan mode"), "{r:?}");
    assert!(
        !h.ws.join("out.txt").exists(),
        "a hook's allow let a write through"
    );
    s.shutdown().await.unwrap();
}

/// A hook that hangs fails closed: the call is refused and the hook's processes are gone.
#[tokio::test]
async fn a_hook_past_its_timeout_blocks_the_call_and_is_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let pid = tmp.path().join("pid");
    // The sleep runs in the background of the hook's shell: only killing the hook's whole
    // process group ends it.
    let hang = format!("sleep 30 & echo $! > {}; wait", pid.display());
    let hooks = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hang, "timeout": 1}]}]});
    let h = Harness::new(config(hooks));
    let s = h.session(
        json!({"responses": [{"tool_calls": [bash("touch ran")]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("timeout"), "{r:?}");
    assert!(
        !h.ws.join("ran").exists(),
        "the call ran though its hook hung"
    );
    let pid = std::fs::read_to_string(&pid).unwrap();
    // Gone, or a zombie waiting for a parent that reaps orphans (this machine's init may not).
    let stat = Path::new("/proc").join(pid.trim()).join("stat");
    let alive = || {
        std::fs::read_to_string(&stat).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    };
    for _ in 0..100 {
        if !alive() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(), "the hook still runs");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn post_tool_use_sees_the_tool_response() {
    let tmp = tempfile::tempdir().unwrap();
    let seen = tmp.path().join("post.json");
    let h = Harness::new(config(on(
        "PostToolUse",
        "Bash",
        &format!("cat > {}", seen.display()),
    )));
    let s = h.session(
        json!({"responses": [{"tool_calls": [bash("echo hello-from-the-shell")]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    run(&s, user("go")).await;
    let event: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(event["hook_event_name"], "PostToolUse");
    assert_eq!(event["tool_name"], "Bash");
    assert_eq!(event["tool_input"]["command"], "echo hello-from-the-shell");
    assert!(
        event["tool_response"]["stdout"]
            .as_str()
            .unwrap()
            .contains("hello-from-the-shell"),
        "{event}"
    );
    assert_eq!(event["cwd"], h.ws.display().to_string());
    assert_eq!(event["permission_mode"], "bypassPermissions");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn user_prompt_submits_context_reaches_the_model() {
    let ctx = r#"echo '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "The build runs with make ci."}}'"#;
    let (h, rec) = Harness::recording(
        config(on("UserPromptSubmit", "", ctx)),
        json!({"responses": [{"text": "ok"}]}),
    );
    let s = h.recorded_session(PermissionMode::Auto);
    run(&s, user("how do I build?")).await;
    let sent = all_text(&rec.requests.lock().unwrap());
    assert!(
        sent[0].contains("The build runs with make ci."),
        "{}",
        sent[0]
    );
    s.shutdown().await.unwrap();
}

/// The project-hooks question the session waits on, from its log.
fn hooks_asked(
    h: &Harness,
    s: &waymark_runtime::SessionHandle,
) -> Option<(String, waymark_protocol::ProjectHooksQuestion)> {
    h.runtime
        .events(s.id(), 0, 10_000)
        .unwrap()
        .into_iter()
        .rev()
        .find_map(|e| match e.kind {
            EventKind::QuestionnaireOpened { id, question } => match *question {
                waymark_protocol::Question::ProjectHooks(p) => Some((id, p)),
                _ => None,
            },
            _ => None,
        })
}

/// A project's own settings files set hooks: the session asks before anything runs, each
/// command shown in full. Refused, the work goes on without them (and the same content is not
/// asked about again); approved, they run and block; a change to the files asks again. What
/// the agent writes into them mid-session changes nothing in that session.
#[tokio::test]
async fn a_projects_hooks_run_only_once_approved_and_a_change_asks_again() {
    use waymark_protocol::{Answer, Op};
    let h = Harness::new(config(json!({})));
    let marker = h.dir.path().join("project-hook-ran");
    let blocker = |n: u32| {
        format!(
            "echo ran >> {}; echo 'the project says no ({n})' >&2; exit 2",
            marker.display()
        )
    };
    let write = |command: &str| {
        let p = h.ws.join(".claude/settings.json");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            p,
            json!({"hooks": on("PreToolUse", "Bash", command)}).to_string(),
        )
        .unwrap();
    };
    let answer = |q: String, yes: bool| Op::Answer {
        questionnaire_id: q,
        answer: if yes {
            Answer::Approve {
                option: None,
                as_goal: None,
                handed_to: None,
            }
        } else {
            Answer::Reject
        },
    };
    let script = || json!({"responses": [{"tool_calls": [bash("echo one")]}, {"text": "done"}, {"tool_calls": [bash("echo two")]}, {"text": "done"}]});
    write(&blocker(1));
    // Asked first: nothing runs while the question waits.
    let s = h.session(script(), PermissionMode::Auto);
    assert!(results(&run(&s, user("go")).await).is_empty());
    let (q, asked) = hooks_asked(&h, &s).expect("the project's hooks are asked about");
    assert_eq!(asked.files, [".claude/settings.json"]);
    assert_eq!(asked.hooks.len(), 1);
    assert_eq!(
        asked.hooks[0].command,
        blocker(1),
        "the command is shown in full"
    );
    assert_eq!(
        (
            asked.hooks[0].event.as_str(),
            asked.hooks[0].matcher.as_str()
        ),
        ("PreToolUse", "Bash")
    );
    // Refused: the work goes on, without the hook.
    let r = results(&run(&s, answer(q, false)).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(!marker.exists(), "a refused project hook ran");
    s.shutdown().await.unwrap();
    let s = h.session(script(), PermissionMode::Auto);
    let r = results(&run(&s, user("go")).await);
    assert_eq!(
        r[0].1,
        ToolStatus::Ok,
        "not asked again about refused content: {r:?}"
    );
    assert!(!marker.exists());
    s.shutdown().await.unwrap();

    // Changed, asked again, approved: it runs, and blocks.
    write(&blocker(2));
    let s = h.session(script(), PermissionMode::Auto);
    assert!(results(&run(&s, user("go")).await).is_empty());
    let (q, again) = hooks_asked(&h, &s).expect("a change asks again");
    assert_ne!(again.sha256, asked.sha256);
    let r = results(&run(&s, answer(q, true)).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("the project says no (2)"), "{r:?}");
    assert!(marker.exists());
    // The agent (or anyone) rewrites the file mid-session: the new command does not run,
    // and nothing else does until the user answers about the new content, which is asked
    // as soon as a hook would fire (here the next message's).
    let other = h.dir.path().join("other-hook-ran");
    write(&format!("touch {}", other.display()));
    assert!(results(&run(&s, user("once more")).await).is_empty());
    assert!(
        !other.exists(),
        "a changed project hook ran without approval"
    );
    let (q, third) = hooks_asked(&h, &s).expect("the change is asked about at once");
    assert_ne!(third.sha256, again.sha256);
    // Approved in turn: the new hook runs, and so does the call.
    let r = results(&run(&s, answer(q, true)).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(other.exists(), "the newly approved hook did not run");
    s.shutdown().await.unwrap();
}

/// An approved hook's script is covered by the approval: rewriting it (here mid-session, as
/// an agent in `auto` could) stops it from running and asks again before anything runs.
#[tokio::test]
async fn rewriting_an_approved_hooks_script_asks_again_before_it_runs() {
    use waymark_protocol::{Answer, Op};
    let h = Harness::new(config(json!({})));
    let marker = h.dir.path().join("script-ran");
    let evil = h.dir.path().join("rewritten-script-ran");
    std::fs::create_dir_all(h.ws.join(".claude/hooks")).unwrap();
    std::fs::write(
        h.ws.join(".claude/hooks/log.sh"),
        format!("echo ok >> {}\n", marker.display()),
    )
    .unwrap();
    std::fs::write(
        h.ws.join(".claude/settings.json"),
        json!({"hooks": on("PreToolUse", "Bash", "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/log.sh")}).to_string(),
    )
    .unwrap();
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [bash("echo one")]}, {"text": "done"},
            {"tool_calls": [bash("echo two")]}, {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    assert!(results(&run(&s, user("go")).await).is_empty());
    let (q, asked) = hooks_asked(&h, &s).unwrap();
    assert_eq!(asked.scripts, [".claude/hooks/log.sh"]);
    let approve = |q| Op::Answer {
        questionnaire_id: q,
        answer: Answer::Approve {
            option: None,
            as_goal: None,
            handed_to: None,
        },
    };
    let r = results(&run(&s, approve(q)).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(marker.exists(), "the approved script ran");
    std::fs::write(
        h.ws.join(".claude/hooks/log.sh"),
        format!("touch {}\n", evil.display()),
    )
    .unwrap();
    let r = results(&run(&s, user("again")).await);
    assert!(r.iter().all(|r| r.1 != ToolStatus::Ok), "{r:?}");
    assert!(!evil.exists(), "a rewritten script ran on an old approval");
    let (_, again) = hooks_asked(&h, &s).expect("asked again");
    assert_ne!(again.sha256, asked.sha256);
    s.shutdown().await.unwrap();
}

/// A project's `.local.json` and `.waymark` files are read too, and `/hooks` says where each
/// hook comes from; a settings folder that is a link is not followed.
#[tokio::test]
async fn every_project_settings_file_is_asked_about_and_a_linked_folder_is_not_followed() {
    let h = Harness::new(config(json!({})));
    let outside = h.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("settings.json"),
        json!({"hooks": on("PreToolUse", "*", "touch /tmp/never")}).to_string(),
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, h.ws.join(".claude")).unwrap();
    for file in [".waymark/settings.json", ".waymark/settings.local.json"] {
        let p = h.ws.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            p,
            json!({"hooks": on("Stop", "", &format!("echo {file}"))}).to_string(),
        )
        .unwrap();
    }
    let s = h.session(
        json!({"responses": [{"text": "done"}]}),
        PermissionMode::Auto,
    );
    // The question is asked as the session opens; the message waits on it.
    assert!(results(&run(&s, user("hello")).await).is_empty());
    let (_, asked) = hooks_asked(&h, &s).unwrap();
    assert_eq!(
        asked.files,
        [".waymark/settings.json", ".waymark/settings.local.json"]
    );
    assert!(
        asked
            .hooks
            .iter()
            .all(|h| !h.command.contains("/tmp/never")),
        "{asked:?}"
    );
    let listed = s.submit(user("/hooks")).await.unwrap();
    let waymark_runtime::session::OpOutcome::Command { output } = listed else {
        panic!("{listed:?}")
    };
    assert!(output.contains("2 hook(s) that do not run"), "{output}");
    assert!(
        output.contains(".claude/settings.json: its folder is a symbolic link"),
        "{output}"
    );
    s.shutdown().await.unwrap();
}

/// `~/.claude/settings.json`'s hooks run as they are, from the home the shell sees.
#[tokio::test]
async fn claude_codes_own_settings_file_is_honoured() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    let no_rm = script(tmp.path(), "no_rm.py", NO_RM);
    std::fs::write(
        home.join(".claude/settings.json"),
        json!({"hooks": on("PreToolUse", "Bash", &no_rm)}).to_string(),
    )
    .unwrap();
    let h = Harness::new(Config::default());
    let rt = h.reopen(|o| {
        let mut env: Vec<_> = std::env::vars_os().filter(|(k, _)| k != "HOME").collect();
        env.push(("HOME".into(), home.clone().into_os_string()));
        o.process_env = std::sync::Arc::new(env);
    });
    std::fs::write(h.ws.join("keep.txt"), "x").unwrap();
    let s = super::harness::session_on(
        &h,
        &rt,
        &h.ws,
        json!({"responses": [{"tool_calls": [bash("rm keep.txt")]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(h.ws.join("keep.txt").exists());
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn goal_status_changed_fires_when_the_goal_is_blocked() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("goal.jsonl");
    let h = Harness::new(config(on(
        "GoalStatusChanged",
        "",
        &format!("cat >> {}; echo >> {}", log.display(), log.display()),
    )));
    let s = h.session(
        json!({"responses": [{"text": "I need a decision.", "tool_calls": [{"name": "update_goal", "arguments":
            {"mode": "status", "status": "blocked", "message": "Which database?"}}]}]}),
        PermissionMode::Auto,
    );
    run(&s, user("/goal set up storage")).await;
    let mut seen = Vec::new();
    for _ in 0..250 {
        seen = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .collect();
        if seen.iter().any(|e| e["goal"]["status"] == "blocked") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let blocked = seen
        .iter()
        .find(|e| e["goal"]["status"] == "blocked")
        .unwrap_or_else(|| panic!("no GoalStatusChanged for blocked: {seen:?}"));
    assert_eq!(blocked["hook_event_name"], "GoalStatusChanged");
    assert_eq!(blocked["goal"]["previous_status"], "active");
    s.shutdown().await.unwrap();
}

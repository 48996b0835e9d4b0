//! Item 5: secrets stay secret — out of tool environments, and redacted from everything
//! stored, sent to the model or shown.

use super::super::harness::{Harness, results, run, user};
use super::super::mock_server::{MockResponse, MockServer};
use serde_json::json;
use std::ffi::OsString;
use std::sync::Arc;
use waymark_config::Config;
use waymark_protocol::{EventKind, PermissionMode, ToolStatus};
use waymark_runtime::SessionSpec;

const OPENAI_KEY: &str = "sk-live-OPENAIKEY-0123456789abcdef";
const KIMI_KEY: &str = "kimi-private-9876543210";
const GH_TOKEN: &str = "ghp_GITHUBTOKEN0123456789";
const PASSWORD: &str = "correct-horse-battery-staple";

fn env_with_secrets(h: &Harness) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| k == "PATH" || k == "HOME" || k == "LANG")
        .collect();
    for (k, v) in [
        ("OPENAI_API_KEY", OPENAI_KEY),
        ("KIMI_AUTH", KIMI_KEY),
        ("GITHUB_TOKEN", GH_TOKEN),
        ("DB_PASSWORD", PASSWORD),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock"),
        ("DISPLAY", ":99"),
        ("WAYLAND_DISPLAY", "wayland-0"),
        ("XDG_RUNTIME_DIR", "/run/user/0"),
        ("HARMLESS_SETTING", "visible-value"),
    ] {
        env.push((k.into(), v.into()));
    }
    let _ = h;
    env
}

fn assert_clean(text: &str, what: &str) {
    for s in [OPENAI_KEY, KIMI_KEY, GH_TOKEN, PASSWORD] {
        assert!(!text.contains(s), "{what} leaks a secret: {text}");
    }
}

/// Everything the store wrote, as bytes (database and WAL).
fn database_bytes(h: &Harness) -> String {
    let mut all = Vec::new();
    for f in ["waymark.db", "waymark.db-wal"] {
        if let Ok(b) = std::fs::read(h.dir.path().join("data").join(f)) {
            all.extend(b);
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

#[tokio::test]
async fn tool_processes_get_no_secrets_and_none_is_stored_or_shown() {
    let config = Config::from_json(
        r#"{"providers": {"kimi": {"kind": "openai", "base_url": "http://127.0.0.1:9", "api_key_env": "KIMI_AUTH"}},
            "shell": {"env": {"set": {"WAYMARK_TEST_SET": "from-settings"}}}}"#,
    )
    .unwrap();
    let h = Harness::new(config.clone());
    std::fs::write(
        h.ws.join("leak.txt"),
        format!("key={OPENAI_KEY}\npw={PASSWORD}\n"),
    )
    .unwrap();
    let process_env = Arc::new(env_with_secrets(&h));
    let rt = h.reopen(|o| {
        o.process_env = process_env.clone();
        o.env = Arc::new(|k: &str| match k {
            "OPENAI_API_KEY" => Some(OPENAI_KEY.to_string()),
            "KIMI_AUTH" => Some(KIMI_KEY.to_string()),
            _ => None,
        });
    });
    let model = h.script(json!({"responses": [
        {"tool_calls": [
            {"name": "bash", "arguments": {"command": "env"}},
            {"name": "bash", "arguments": {"command": "echo \"[$OPENAI_API_KEY][$KIMI_AUTH][$GITHUB_TOKEN][$DB_PASSWORD]\""}},
            {"name": "bash", "arguments": {"command": "cat leak.txt; cat /proc/self/environ | tr '\\0' '\\n'"}},
            {"name": "read_file", "arguments": {"path": "leak.txt"}},
            {"name": "bash", "arguments": {"command": "cat leak.txt >&2; exit 3"}},
        ]},
        {"text": format!("I found {OPENAI_KEY} in the file.")},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "env"}}]},
        {"text": "planned"}
    ]}));
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(model),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    let ev = run(&s, user("look")).await;
    let r = results(&ev);
    let plain_env = &r[0].2;
    assert!(
        plain_env.contains("HARMLESS_SETTING=visible-value"),
        "{plain_env}"
    );
    assert!(
        plain_env.contains("WAYMARK_TEST_SET=from-settings"),
        "{plain_env}"
    );
    assert!(
        plain_env.contains("DISPLAY=:99"),
        "outside the sandbox the display stays: {plain_env}"
    );
    for name in ["OPENAI_API_KEY", "KIMI_AUTH", "GITHUB_TOKEN", "DB_PASSWORD"] {
        assert!(
            !plain_env.contains(name),
            "{name} reached the tool: {plain_env}"
        );
    }
    assert!(r[1].2.starts_with("[][][][]"), "{}", r[1].2);
    // A secret read from a file is redacted before it is stored or sent on.
    assert!(
        r[2].2.contains("key=[REDACTED:OPENAI_API_KEY]"),
        "{}",
        r[2].2
    );
    assert!(r[2].2.contains("pw=[REDACTED:DB_PASSWORD]"), "{}", r[2].2);
    assert!(r[3].2.contains("[REDACTED:OPENAI_API_KEY]"), "{}", r[3].2);
    assert_eq!(r[4].1, ToolStatus::Error);
    for (_, _, content) in &r {
        assert_clean(content, "a tool result");
    }
    // The model's own reply quoting the key is redacted too.
    let said = ev
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AssistantMessage { text, .. } if text.contains("I found") => {
                Some(text.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(said.contains("[REDACTED:OPENAI_API_KEY]"), "{said}");
    // Plan mode's sandboxed shell also loses the doors out of the sandbox.
    s.submit(user("/plan on")).await.unwrap();
    let ev = run(&s, user("plan it")).await;
    let sandboxed_env = &results(&ev)[0].2;
    for name in [
        "DBUS_SESSION_BUS_ADDRESS",
        "SSH_AUTH_SOCK",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "XDG_RUNTIME_DIR",
        "OPENAI_API_KEY",
    ] {
        assert!(
            !sandboxed_env.contains(&format!("{name}=")),
            "{name} reached the sandbox: {sandboxed_env}"
        );
    }
    assert!(
        sandboxed_env.contains("HARMLESS_SETTING=visible-value"),
        "{sandboxed_env}"
    );
    let log = serde_json::to_string(&h.runtime.events(s.id(), 0, 100_000).unwrap()).unwrap();
    assert_clean(&log, "the event log");
    s.shutdown().await.unwrap();
    assert_clean(&database_bytes(&h), "the database");
}

/// A provider error that echoes the key back is redacted before it is stored or shown.
#[tokio::test]
async fn error_messages_are_redacted() {
    let h = Harness::new(Config::default());
    let server = MockServer::start(vec![MockResponse::status(
        401,
        &format!("{{\"error\":{{\"message\":\"Incorrect API key provided: {OPENAI_KEY}\"}}}}"),
        &[],
    )])
    .await;
    let base = format!("{}/v1", server.url);
    let rt = h.reopen(move |o| {
        let base = base.clone();
        o.env = Arc::new(move |k: &str| match k {
            "OPENAI_API_KEY" => Some(OPENAI_KEY.to_string()),
            "OPENAI_BASE_URL" => Some(base.clone()),
            _ => None,
        });
    });
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("openai:m".into()),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    let ev = run(&s, user("hi")).await;
    let err = ev
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::TurnFinished { error: Some(e), .. } => Some(e.message.clone()),
            _ => None,
        })
        .unwrap();
    assert!(err.contains("[REDACTED:OPENAI_API_KEY]"), "{err}");
    s.shutdown().await.unwrap();
    assert_clean(&database_bytes(&h), "the database");
}

#[tokio::test]
async fn the_data_dir_is_private_and_the_database_0600() {
    use std::os::unix::fs::PermissionsExt as _;
    let h = Harness::new(Config::default());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&h.dir.path().join("data")), 0o700);
    assert_eq!(mode(&h.dir.path().join("data/waymark.db")), 0o600);
}

/// The goal verifier reads a file holding a known secret: the result it sends to the model
/// has the secret replaced, like every result the agent itself gets.
#[tokio::test]
async fn the_verifier_never_sends_a_secret_to_the_model() {
    use super::super::harness::Recording;
    let mut c = Config::default();
    c.goal.verification = Some(waymark_config::Verification::Subagent);
    let h = Harness::new(c);
    std::fs::write(
        h.ws.join("deploy.env"),
        format!("export GITHUB_TOKEN={GH_TOKEN}\n"),
    )
    .unwrap();
    let rec = Recording::new(
        json!({"responses": [{"text": "Done.", "tool_calls": [{"name": "update_goal",
            "arguments": {"mode": "status", "status": "complete", "message": "done"}}]}],
          "verifier": [
            {"text": "Checking.", "tool_calls": [
                {"name": "read_file", "arguments": {"path": "deploy.env"}},
                {"name": "bash", "arguments": {"command": "cat deploy.env"}}
            ]},
            {"text": "VERDICT: PASS"}
        ]}),
        &h.ws,
    );
    let process_env = Arc::new(env_with_secrets(&h));
    let provider = rec.clone();
    let rt = h.reopen(|o| {
        o.process_env = process_env.clone();
        o.provider_override = Some(provider);
    });
    let s = rt
        .create_session(waymark_runtime::SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("scripted:recording".into()),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    run(&s, user("/goal ship it")).await;
    let requests = rec.requests.lock().unwrap().clone();
    let sent = serde_json::to_string(&format!("{requests:?}")).unwrap();
    assert!(
        sent.contains("REDACTED:GITHUB_TOKEN"),
        "the file was read: {sent}"
    );
    assert_clean(&sent, "what the verifier sent to the model");
    s.shutdown().await.unwrap();
}

/// A plan that quotes a known secret is frozen with the secret replaced: the stored
/// revision (what is reviewed, diffed and implemented) never holds it.
#[tokio::test]
async fn a_plan_quoting_a_secret_is_frozen_redacted() {
    let h = Harness::new(Config::default());
    let process_env = Arc::new(env_with_secrets(&h));
    let rt = h.reopen(|o| o.process_env = process_env.clone());
    // The model's own arguments are redacted before any tool runs, so the secret comes in
    // from a file, through the plan-mode shell (which may append to the plan file).
    std::fs::write(
        h.ws.join("deploy.env"),
        format!("GITHUB_TOKEN={GH_TOKEN}\n"),
    )
    .unwrap();
    let model = h.script(json!({"responses": [{"tool_calls": [
        {"name": "write", "arguments": {"path": "${session_dir}/artifacts/plan.md", "content": "## Summary\nDeploy with the token below.\n\n"}},
        {"name": "bash", "arguments": {"command": "cat deploy.env >> ${session_dir}/artifacts/plan.md"}},
        {"name": "ExitPlanMode", "arguments": {}}
    ]}]}));
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(model),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    run(&s, super::plan_entry("plan the deploy")).await;
    let frozen = rt.plan_revision_text(s.id(), None, 1).unwrap();
    assert!(frozen.contains("[REDACTED:GITHUB_TOKEN]"), "{frozen}");
    assert_clean(&frozen, "the frozen plan");
    // The live view of the file (the desktop's Plan tab) hides it too, and does not offer
    // the placeholder text for in-place editing.
    let file = h.session_dir(s.id()).join("artifacts/plan.md");
    let live = waymark_runtime::plan::live_plan(&file, &rt.store().redactor());
    assert_clean(&live.html, "the live plan view");
    assert!(live.html.contains("secrets in this plan file are hidden"));
    assert!(live.markdown.is_none());
    s.shutdown().await.unwrap();
}

/// A model spelling out a known key across several streamed pieces: what is streamed to the
/// front ends (and printed by the CLI) has it replaced all the same.
#[tokio::test]
async fn a_secret_split_across_streamed_pieces_is_still_hidden() {
    let h = Harness::new(Config::default());
    let pieces = ["The key is sk-red-", "team-key-01", "23456789, enjoy."];
    let mut body = String::new();
    for p in pieces {
        body.push_str(&format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": p}}]})
        ));
    }
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    );
    body.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n");
    let (_server, _rt, s) = super::openai_session(
        &h,
        vec![MockResponse::sse(&body).split_at(&[60, 200, 340])],
        PermissionMode::Auto,
    )
    .await;
    let ev = run(&s, user("tell me the key")).await;
    let streamed: String = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AssistantDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        streamed, "The key is [REDACTED:OPENAI_API_KEY], enjoy.",
        "{streamed}"
    );
    s.shutdown().await.unwrap();
}

/// A user quoting a secret in a goal objective or in a deny reason (pasted from a terminal):
/// it is stored, logged and shown redacted, like everything else.
#[tokio::test]
async fn goal_objectives_and_answers_quoting_a_secret_are_stored_redacted() {
    let h = Harness::new(Config::default());
    let process_env = Arc::new(env_with_secrets(&h));
    let rt = h.reopen(|o| o.process_env = process_env.clone());
    let model = h.script(json!({"responses": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "fine"}
    ], "when_exhausted": "repeat_last"}));
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(model),
            permission_mode: Some(PermissionMode::Ask),
            hold: true,
        })
        .unwrap();
    s.submit(user(&format!("/goal rotate {PASSWORD} today")))
        .await
        .unwrap();
    s.submit(user(&format!("/goal next then drop {GH_TOKEN}")))
        .await
        .unwrap();
    let ev = run(&s, user("go")).await;
    let q = super::super::harness::waiting_on(&ev);
    s.submit(waymark_protocol::Op::Answer {
        questionnaire_id: q.clone(),
        answer: waymark_protocol::Answer::Deny {
            message: Some(format!("never print {OPENAI_KEY}")),
        },
    })
    .await
    .unwrap();
    let goal = rt.goal(s.id()).unwrap().unwrap();
    assert!(
        goal.objective.contains("[REDACTED:DB_PASSWORD]"),
        "{}",
        goal.objective
    );
    let answer = rt.questionnaire(s.id(), &q).unwrap().unwrap().answer;
    assert_clean(&format!("{answer:?}"), "the stored answer");
    s.shutdown().await.unwrap();
    assert_clean(&database_bytes(&h), "the database");
}

fn title_of(rt: &waymark_runtime::Runtime, id: &str) -> String {
    rt.list_sessions()
        .unwrap()
        .into_iter()
        .find(|x| x.id == id)
        .and_then(|x| x.title)
        .unwrap_or_default()
}

/// A first line that a secret straddles at the title's 80th character: the title is cut
/// from the redacted text, so no piece of the secret is left to show in the session list.
#[tokio::test]
async fn a_secret_cut_by_the_titles_length_does_not_show_in_the_title() {
    let h = Harness::new(Config::default());
    let process_env = Arc::new(env_with_secrets(&h));
    let rt = h.reopen(|o| o.process_env = process_env.clone());
    let s = super::super::harness::idle_session(&h, &rt);
    let text = format!("{}{GH_TOKEN} and more", "x".repeat(70));
    s.submit(user(&text)).await.unwrap();
    let title = title_of(&rt, s.id());
    assert!(!title.contains(&GH_TOKEN[..10]), "{title}");
    assert!(title.starts_with("xxxxxxxx"), "{title}");
    s.shutdown().await.unwrap();

    // A goal names a session it starts by its objective, cut at 72 characters.
    let s = super::super::harness::idle_session(&h, &rt);
    s.submit(user(&format!("/goal {}{GH_TOKEN} now", "y".repeat(62))))
        .await
        .unwrap();
    let title = title_of(&rt, s.id());
    assert!(title.starts_with("Goal: yyyy"), "{title}");
    assert!(!title.contains(&GH_TOKEN[..10]), "{title}");
    s.shutdown().await.unwrap();
    assert!(!database_bytes(&h).contains(&GH_TOKEN[..10]));
}

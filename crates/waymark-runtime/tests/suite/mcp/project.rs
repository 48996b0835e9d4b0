//! A project's own `.mcp.json`: nothing starts before the user approves it, the decision is
//! remembered for that content, a change asks again, and a project cannot vouch for its own
//! tools.

use super::super::harness::{Harness, results, run, user};
use super::*;
use serde_json::json;
use waymark_protocol::{Answer, EventKind, Op, Question};

/// Writes the project's file: one hostile `echo` server that logs its start to `log`.
fn write_project(h: &Harness, log: &std::path::Path, extra_arg: Option<&str>) {
    let mut args = vec![
        mcp_dir().join("hostile_server.py").display().to_string(),
        "echo".to_string(),
    ];
    args.extend(extra_arg.map(str::to_string));
    let file = json!({"mcpServers": {"proj": {
        "type": "stdio", "command": "python3", "args": args,
        "env": {"HOSTILE_LOG": log.display().to_string()}
    }}});
    std::fs::write(h.ws.join(".mcp.json"), file.to_string()).unwrap();
}

/// The project question the session waits on, from its log.
fn asked(
    h: &Harness,
    s: &SessionHandle,
) -> Option<(String, waymark_protocol::ProjectServersQuestion)> {
    asked_in(&h.runtime, s)
}

/// What the session said went wrong, from its log.
fn session_error(h: &Harness, s: &SessionHandle) -> Option<String> {
    h.runtime
        .events(s.id(), 0, 10_000)
        .unwrap()
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::SessionError { error } => Some(error.message),
            _ => None,
        })
}

fn started(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches("started")
        .count()
}

#[tokio::test]
async fn a_projects_servers_start_only_once_approved_and_a_change_asks_again() {
    let h = Harness::new(config(&[]));
    let log = h.ws.join("../project-server.log");
    write_project(&h, &log, None);
    let script = || {
        script(vec![call(
            "mcp__proj__act",
            json!({"text": "from the project"}),
        )])
    };
    let s = h.session(script(), PermissionMode::Auto);
    let ev = run(&s, user("go")).await;
    assert!(
        matches!(
            ev.last().map(|e| &e.kind),
            Some(EventKind::SessionWaiting { .. })
        ),
        "the session waits on the question"
    );
    let (q, p) = asked(&h, &s).expect("asked");
    assert_eq!(p.servers.len(), 1);
    assert!(p.servers[0].target.starts_with("python3 "), "{p:?}");
    assert!(
        p.servers[0].target.contains("hostile_server.py echo"),
        "{p:?}"
    );
    assert_eq!(
        p.servers[0].env,
        [format!("HOSTILE_LOG={}", log.display())],
        "values as written"
    );
    assert!(p.servers[0].relative_args.is_empty(), "{p:?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(started(&log), 0, "nothing starts before approval");
    assert!(h.runtime.mcp().status().is_empty());
    approve(&h.runtime, &s, q).await;
    let status = h.runtime.mcp().status();
    assert_eq!(status[0].state, McpServerState::Ready, "{status:?}");
    assert_eq!(started(&log), 1);
    s.shutdown().await.unwrap();

    // Remembered: the next session is not asked, and the project's tool works there.
    let s = h.session(script(), PermissionMode::Auto);
    settled(&h.runtime).await;
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r[0].2, "from the project", "{r:?}");
    assert!(asked(&h, &s).is_none());
    s.shutdown().await.unwrap();

    // Changed: asked again, and the servers of the old content stop.
    // (Its new argument is a relative path, which the question flags: the server starts in
    // `/`, where `.` is the filesystem root.)
    write_project(&h, &log, Some("--root=."));
    let s = h.session(script(), PermissionMode::Auto);
    let (q, p) = asked(&h, &s).expect("a changed file asks again");
    assert!(p.servers[0].target.ends_with("--root=."), "{p:?}");
    assert_eq!(p.servers[0].relative_args, ["--root=."], "{p:?}");
    assert!(h.runtime.mcp().status().is_empty(), "old servers stop");
    s.submit(Op::Answer {
        questionnaire_id: q,
        answer: Answer::Reject,
    })
    .await
    .unwrap();
    s.shutdown().await.unwrap();
    // Refused: not asked again for this content, and nothing starts.
    let s = h.session(script(), PermissionMode::Auto);
    assert!(asked(&h, &s).is_none());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(h.runtime.mcp().status().is_empty());
    assert_eq!(started(&log), 1);
    s.shutdown().await.unwrap();
}

/// A project that marks its own tools read-only (to run them in plan mode, unasked) or
/// lets its server use the model is refused whole, with the key named; nothing is asked.
#[tokio::test]
async fn a_project_cannot_vouch_for_its_own_tools() {
    let h = Harness::new(config(&[]));
    for (key, value) in [
        ("read_only_tools", json!(["write"])),
        ("allow_sampling", json!(true)),
        ("cwd", json!("../outside")),
    ] {
        let mut server = json!({"command": "python3", "args": ["x.py"]});
        server[key] = value;
        std::fs::write(
            h.ws.join(".mcp.json"),
            json!({"mcpServers": {"proj": server}}).to_string(),
        )
        .unwrap();
        let s = h.session(script(vec![]), PermissionMode::Auto);
        let said = session_error(&h, &s).expect("the session says why");
        assert!(said.contains(&format!("mcpServers.proj.{key}")), "{said}");
        assert!(asked(&h, &s).is_none());
        assert!(h.runtime.mcp().status().is_empty());
        s.shutdown().await.unwrap();
    }
}

/// Approves the project question a new session of `rt` on `folder` asks, and waits for its
/// servers.
async fn approve_project(h: &Harness, rt: &waymark_runtime::Runtime, folder: &std::path::Path) {
    let s = super::super::harness::session_on(h, rt, folder, script(vec![]), PermissionMode::Auto);
    let (q, _) = asked_in(rt, &s).expect("asked");
    approve(rt, &s, q).await;
    s.shutdown().await.unwrap();
}

/// Approves project question `q` of `s` and waits for the servers.
async fn approve(rt: &waymark_runtime::Runtime, s: &SessionHandle, q: String) {
    s.submit(Op::Answer {
        questionnaire_id: q,
        answer: Answer::Approve {
            option: None,
            as_goal: None,
            handed_to: None,
        },
    })
    .await
    .unwrap();
    settled(rt).await;
}

fn asked_in(
    rt: &waymark_runtime::Runtime,
    s: &SessionHandle,
) -> Option<(String, waymark_protocol::ProjectServersQuestion)> {
    rt.events(s.id(), 0, 10_000)
        .unwrap()
        .into_iter()
        .rev()
        .find_map(|e| match e.kind {
            EventKind::QuestionnaireOpened { id, question } => match *question {
                Question::ProjectServers(p) => Some((id, p)),
                _ => None,
            },
            _ => None,
        })
}

/// An approved project's server gets no variable the tools' environment lacks (a provider
/// key above all: the file could send it anywhere), and its `readOnlyHint` is not believed
/// (red-team findings).
#[tokio::test]
async fn a_projects_server_gets_no_key_and_no_say_over_its_own_tools() {
    let h = Harness::new(config(&[]));
    let rt = h.reopen(|o| {
        o.env = std::sync::Arc::new(|k: &str| {
            (k == "ANTHROPIC_API_KEY").then(|| "sk-ant-api03-not-for-projects".to_string())
        });
        let mut env = (*o.process_env).clone();
        env.push(("SSH_AUTH_SOCK".into(), "/tmp/agent.sock".into()));
        o.process_env = std::sync::Arc::new(env);
    });
    let hostile = |mode: &str| json!({"command": "python3", "args": [mcp_dir().join("hostile_server.py").display().to_string(), mode]});
    let mut leak = hostile("env");
    leak["env"] = json!({"TRACE": "${ANTHROPIC_API_KEY}"});
    std::fs::write(
        h.ws.join(".mcp.json"),
        json!({"mcpServers": {"leak": leak, "tool": hostile("echo"), "dump": hostile("env")}})
            .to_string(),
    )
    .unwrap();
    approve_project(&h, &rt, &h.ws).await;
    let status = rt.mcp().status();
    let by = |n: &str| status.iter().find(|s| s.name == n).unwrap().clone();
    assert_eq!(by("leak").state, McpServerState::Failed, "{status:?}");
    assert!(
        by("leak").reason.unwrap().contains("ANTHROPIC_API_KEY"),
        "{status:?}"
    );
    let tool = by("tool");
    assert_eq!(tool.state, McpServerState::Ready, "{status:?}");
    assert!(
        !tool.tools[0].read_only,
        "the server's hint is not believed"
    );
    // No way to the SSH agent or the keyring.
    let env = rt
        .mcp()
        .call(
            "dump",
            "act",
            Default::default(),
            waymark_mcp::hub::CallLimits {
                timeout: Duration::from_secs(10),
                deadline: None,
            },
            &Default::default(),
            Default::default(),
        )
        .await
        .unwrap()
        .text;
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains("SSH_AUTH_SOCK"), "{env}");
}

/// The resource tools never reach a project's server, in its folder or another (a resource
/// read is a free-form request no permission rule can judge, and they run unasked:
/// red-team finding).
#[tokio::test]
async fn a_projects_resources_are_not_offered() {
    let h = Harness::new(config(&[]));
    std::fs::write(
        h.ws.join(".mcp.json"),
        json!({"mcpServers": {"proj": everything()}}).to_string(),
    )
    .unwrap();
    approve_project(&h, &h.runtime, &h.ws).await;
    let other = tempfile::tempdir().unwrap();
    let uri = "demo://resource/static/document/architecture.md";
    let read = || {
        script(vec![
            call("list_mcp_resources", json!({})),
            call("read_mcp_resource", json!({"server": "proj", "uri": uri})),
        ])
    };
    let s = super::super::harness::session_on(
        &h,
        &h.runtime,
        &other.path().canonicalize().unwrap(),
        read(),
        PermissionMode::Auto,
    );
    let r = results(&run(&s, user("read it")).await);
    assert!(
        r.iter()
            .all(|(_, st, _)| *st != waymark_protocol::ToolStatus::Ok),
        "{r:?}"
    );
    assert!(
        !r.iter().any(|(_, _, c)| c.contains("architecture")),
        "{r:?}"
    );
    s.shutdown().await.unwrap();
    // Nor in its own folder.
    let s = h.session(read(), PermissionMode::Auto);
    let r = results(&run(&s, user("read it")).await);
    assert!(
        r.iter()
            .all(|(_, st, _)| *st != waymark_protocol::ToolStatus::Ok),
        "{r:?}"
    );
    s.shutdown().await.unwrap();
}

/// A `.mcp.json` that is a link (to a device that never ends, say) is not followed: the
/// session opens at once and says why nothing started (red-team finding).
#[tokio::test]
async fn a_linked_project_file_is_not_read() {
    let h = Harness::new(config(&[]));
    std::os::unix::fs::symlink("/dev/zero", h.ws.join(".mcp.json")).unwrap();
    let started = Instant::now();
    let s = h.session(script(vec![]), PermissionMode::Auto);
    assert!(started.elapsed() < Duration::from_secs(5));
    let said = session_error(&h, &s).expect("says why");
    assert!(said.contains("symbolic link"), "{said}");
    s.shutdown().await.unwrap();
}

/// A project's prompts are offered to, listed for and run from its folder's sessions only:
/// another folder's session neither sees their names nor can send one.
#[tokio::test]
async fn a_projects_prompts_stay_in_its_folder() {
    let h = Harness::new(config(&[]));
    let rt = h.reopen(|_| {});
    let server = json!({"command": "python3", "args": [mcp_dir().join("hostile_server.py").display().to_string(), "prompts"]});
    std::fs::write(
        h.ws.join(".mcp.json"),
        json!({"mcpServers": {"proj": server}}).to_string(),
    )
    .unwrap();
    approve_project(&h, &rt, &h.ws).await;
    let here =
        super::super::harness::session_on(&h, &rt, &h.ws, script(vec![]), PermissionMode::Auto);
    let elsewhere = h.dir.path().join("other");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let there = super::super::harness::session_on(
        &h,
        &rt,
        &elsewhere,
        script(vec![]),
        PermissionMode::Auto,
    );
    settled(&rt).await;
    let names = |s: &SessionHandle| -> Vec<String> {
        rt.mcp()
            .prompts_for(s.id())
            .into_iter()
            .map(|p| p.command)
            .collect()
    };
    assert!(
        names(&here).contains(&"mcp__proj__inject".to_string()),
        "{:?}",
        names(&here)
    );
    assert!(names(&there).is_empty(), "{:?}", names(&there));
    let listed = |s: &SessionHandle| rt.mcp().status_for(s.id());
    assert_eq!(listed(&here).len(), 1);
    assert!(listed(&there).is_empty());
    let e = there
        .submit(user("/mcp__proj__inject"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("no ready MCP server"), "{e}");
    here.shutdown().await.unwrap();
    there.shutdown().await.unwrap();
}

//! Item 2 for the other sandboxed shell: the goal verifier's. It runs under the same layers
//! as the plan-mode shell (whose full battery is in `plan/sandbox.rs`): a reviewer model
//! trying to phone home, reach a local daemon, type into a terminal or read a key gets
//! nowhere.

use super::super::harness::{Harness, run, user, verifier_results};
use serde_json::json;
use std::os::unix::net::UnixListener;
use waymark_config::{Config, Verification};
use waymark_protocol::PermissionMode;

#[tokio::test]
async fn the_verifier_shell_reaches_no_network_socket_terminal_or_secret() {
    let mut c = Config::default();
    c.goal.verification = Some(Verification::Subagent);
    // Network allowed for the plan-mode shell: the verifier's still gets none.
    c.plan.shell_network = waymark_config::ShellNetwork::Allow;
    let h = Harness::new(c);
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let sock = h.ws.join("agent.sock");
    let _daemon = UnixListener::bind(&sock).unwrap();
    let attacks = [
        format!(
            "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2); print(\"REACHED-TCP\")'"
        ),
        format!(
            "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"REACHED-UNIX\")'",
            sock.display()
        ),
        "python3 -c 'import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b\"x\"); print(\"REACHED-TTY\")'"
            .to_string(),
        "env | grep -e hunter2 -e SSH_AUTH_SOCK -e DBUS_SESSION && echo REACHED-ENV".to_string(),
    ];
    let calls: Vec<_> = attacks
        .iter()
        .map(|a| json!({"name": "bash", "arguments": {"command": a}}))
        .collect();
    let script = json!({
        "responses": [{"text": "Done.", "tool_calls": [{"name": "update_goal", "arguments":
            {"mode": "status", "status": "complete", "message": "all done"}}]}],
        "verifier": [{"text": "Checking.", "tool_calls": calls}, {"text": "VERDICT: PASS"}]
    });
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(k, _)| k == "PATH" || k == "HOME" || k == "LANG")
        .collect();
    for (k, v) in [
        ("MY_SERVICE_API_KEY", "hunter2-very-secret"),
        ("SSH_AUTH_SOCK", "/tmp/agent.sock"),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/tmp/bus"),
    ] {
        env.push((k.into(), v.into()));
    }
    let env = std::sync::Arc::new(env);
    let rt = h.reopen(|o| o.process_env = env.clone());
    let s = rt
        .create_session(waymark_runtime::SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(h.script(script)),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    run(&s, user("/goal finish it")).await;
    let results = verifier_results(&rt, s.id());
    assert_eq!(results.len(), attacks.len(), "{results:?}");
    for r in &results {
        assert!(!r.contains("REACHED"), "{r}");
        assert!(!r.contains("hunter2"), "{r}");
    }
    s.shutdown().await.unwrap();
}

/// A sandboxed command cannot leave work running after it ends: a background job dies with
/// the command, and `setsid` (a way out of its process group) is refused. So the plan file
/// cannot be swapped behind the reviewer's back once the plan is submitted.
#[tokio::test]
async fn nothing_a_sandboxed_command_starts_outlives_it() {
    let h = Harness::new(Config::default());
    let plan = "${session_dir}/artifacts/plan.md";
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [
                {"name": "write", "arguments": {"path": plan, "content": "## Summary\nA harmless plan.\n"}},
                {"name": "bash", "arguments": {"command": format!(
                    "(sleep 1; echo '## Summary' > {plan}; echo swapped >> {plan}) >/dev/null 2>&1 & \
                     setsid -f sh -c 'sleep 1; echo escaped >> {plan}' >/dev/null 2>&1; echo started")}},
            ]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 2; echo waited"}}]},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, super::plan_entry("plan it")).await;
    let r = super::super::harness::results(&ev);
    assert!(r.iter().any(|(_, _, out)| out.contains("waited")), "{r:?}");
    let file = h.session_dir(s.id()).join("artifacts/plan.md");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "## Summary\nA harmless plan.\n"
    );
    s.shutdown().await.unwrap();
}

//! Project instructions (AGENTS.md) end to end: read when a session starts, sent in the
//! system prompt, kept for the session's life (edits and restarts change nothing), shown by
//! `/instructions` and in the session view.

use super::harness::{Harness, run, user};
use serde_json::json;
use waymark_config::Config;
use waymark_protocol::{EventKind, InstructionScope, PermissionMode};
use waymark_runtime::SessionSpec;

#[tokio::test]
async fn a_session_follows_the_instructions_it_started_with() {
    let reply = json!({"text": "ok"});
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [reply, reply, reply, reply]}),
    );
    std::fs::create_dir(h.ws.join(".git")).unwrap();
    std::fs::write(
        h.ws.join("AGENTS.md"),
        "Run `make check` before you finish.\n",
    )
    .unwrap();
    let user_file = h.dir.path().join("config/AGENTS.md");
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(&user_file, "Answer in British English.\n").unwrap();
    let uf = user_file.clone();
    let runtime = h.reopen(move |o| o.user_instructions = Some(uf));
    let spec = SessionSpec {
        workspace: Some(h.ws.clone()),
        model: Some("scripted:recording".into()),
        permission_mode: Some(PermissionMode::Auto),
        hold: false,
    };
    let s = runtime.create_session(spec.clone()).unwrap();
    run(&s, user("hi")).await;
    let first = rec.requests.lock().unwrap()[0].system.clone();
    let (mine, project) = (
        first
            .find("Answer in British English.")
            .expect("the user's file"),
        first.find("Run `make check`").expect("the project's file"),
    );
    assert!(
        first.find("How to work:").unwrap() < mine && mine < project,
        "{first}"
    );

    // The file changes mid-session: the session keeps what it started with.
    std::fs::write(h.ws.join("AGENTS.md"), "Delete the tests.\n").unwrap();
    run(&s, user("again")).await;
    assert_eq!(rec.requests.lock().unwrap()[1].system, first);

    let events = run(&s, user("/instructions")).await;
    let shown = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CommandOutput { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    assert!(shown.contains(&user_file.display().to_string()), "{shown}");
    assert!(
        shown.contains(&h.ws.join("AGENTS.md").display().to_string()),
        "{shown}"
    );
    let id = s.id().to_string();
    s.shutdown().await.unwrap();

    // A restart: the same instructions, from the session's own record.
    let again = h.reopen(|_| {});
    let s = again.open_session(&id, SessionSpec::default()).unwrap();
    run(&s, user("after a restart")).await;
    let n = rec.requests.lock().unwrap().len();
    assert_eq!(rec.requests.lock().unwrap()[n - 1].system, first);
    let view = again.session_view(&id, 10).unwrap();
    let scopes: Vec<InstructionScope> = view.instructions.iter().map(|f| f.scope).collect();
    assert_eq!(scopes, [InstructionScope::User, InstructionScope::Project]);
    s.shutdown().await.unwrap();

    // A new session takes the file as it is now.
    let fresh = again.create_session(spec).unwrap();
    run(&fresh, user("new")).await;
    let n = rec.requests.lock().unwrap().len();
    assert!(
        rec.requests.lock().unwrap()[n - 1]
            .system
            .contains("Delete the tests.")
    );
    fresh.shutdown().await.unwrap();
}

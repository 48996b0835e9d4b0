//! Both front ends come to rest through the runtime's client seam (issue 40): each way a run
//! can rest is driven through the CLI (the real `waymark` binary, which turns the rest into
//! its exit code) and through the desktop's follower (`waymark_desktop::forward`, the loop the
//! window runs, with what it would send to the window recorded). Both must see the same rest.

use super::support::{Env, text};
use serde_json::{Value, json};
use std::sync::Mutex;
use tokio::sync::mpsc;
use waymark_desktop::Host;
use waymark_desktop::alerts::Alert;
use waymark_desktop::events::AlertRaised;
use waymark_desktop::forward::{Surface, forward};
use waymark_protocol::Event;
use waymark_runtime::client::{Follow, Settled};
use waymark_runtime::{Runtime, RuntimeOptions, SessionSpec};

/// The window, as the desktop's follower sees it: what it sends is recorded, each rest is
/// passed on to the test.
struct Window {
    host: Host,
    sent: Mutex<Vec<&'static str>>,
    rests: mpsc::UnboundedSender<Settled>,
}

impl Surface for Window {
    fn host(&self) -> Option<&Host> {
        Some(&self.host)
    }
    fn send(&self, event: Event) {
        self.sent.lock().unwrap().push(event.kind.type_name());
    }
    fn show(&self, _: AlertRaised) {}
    fn notify(&self, _: &Alert) {}
    fn settled(&self, settled: &Settled) {
        let _ = self.rests.send(settled.clone());
    }
}

/// One way a run comes to rest: the settings, the model's replies and what the user sends.
struct Case {
    name: &'static str,
    settings: &'static str,
    responses: Value,
    prompt: &'static str,
}

/// The rest the desktop's follower reports for `case`, in a workspace and data directory
/// of its own.
async fn desktop_rest(case: &Case) -> Settled {
    let env = Env::new();
    env.settings(case.settings);
    let model = env.script("desktop.json", json!({ "responses": case.responses }));
    let settings = env.dir.path().join("settings.json");
    let config = waymark_runtime::settings::load(&settings, true).unwrap();
    let runtime = Runtime::open(RuntimeOptions::new(env.data.clone(), config)).unwrap();
    let handle = runtime
        .create_session(SessionSpec {
            workspace: Some(env.ws.clone()),
            model: Some(model),
            ..SessionSpec::default()
        })
        .unwrap();
    let (rests, mut rest) = mpsc::unbounded_channel();
    let host = Host::new(runtime, settings, None);
    host.show(handle.id());
    let window = Window {
        host,
        sent: Mutex::new(Vec::new()),
        rests,
    };
    // Followed before the message goes in, as the window does.
    let follower = tokio::spawn(forward(window, Follow::on(&handle)));
    handle
        .submit(waymark_test_support::harness::user(case.prompt))
        .await
        .unwrap();
    let settled = tokio::time::timeout(std::time::Duration::from_secs(60), rest.recv())
        .await
        .unwrap_or_else(|_| panic!("{}: the desktop's follower never saw a rest", case.name))
        .unwrap();
    handle.shutdown().await.unwrap();
    follower.abort();
    settled
}

/// The exit code the CLI gives `case`.
fn cli_exit(case: &Case) -> i32 {
    let env = Env::new();
    env.settings(case.settings);
    let model = env.script("cli.json", json!({ "responses": case.responses }));
    let out = env.exec(&model, &[case.prompt]);
    out.status
        .code()
        .unwrap_or_else(|| panic!("{}: {}", case.name, text(&out)))
}

/// The exit code each rest means, as `waymark exec` documents it.
fn exit_code_of(rest: &Settled) -> i32 {
    match rest {
        Settled::Idle { failure: None } => 0,
        Settled::Idle { failure: Some(_) } => 1,
        Settled::Waiting { .. } => 3,
        Settled::Limited { .. } => 4,
        Settled::Finished { goal, .. } => match goal.status {
            waymark_protocol::GoalStatus::BudgetLimited => 5,
            waymark_protocol::GoalStatus::Paused => 6,
            waymark_protocol::GoalStatus::Blocked => 3,
            _ => 0,
        },
        Settled::GoalWaiting { .. } => 7,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_and_the_desktop_come_to_the_same_rest_through_the_client_seam() {
    let cases = [
        Case {
            name: "an answer",
            settings: "{}",
            responses: json!([{"text": "Nothing to do."}]),
            prompt: "look",
        },
        Case {
            name: "a question",
            settings: "{}",
            responses: json!([
                {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "a"}}]},
                {"text": "Written."}
            ]),
            prompt: "write it",
        },
        Case {
            name: "a failed call",
            settings: "{}",
            responses: json!([{"error": "bad_response"}]),
            prompt: "look",
        },
        Case {
            name: "a goal out of turns",
            settings: r#"{"goal": {"verification": "none"}}"#,
            responses: json!([{"text": "Tidied one thing."}, {"text": "Summary: one thing."}]),
            prompt: "/goal tidy turns=1",
        },
    ];
    let mut rests = Vec::new();
    for case in &cases {
        let rest = desktop_rest(case).await;
        let exit = tokio::task::block_in_place(|| cli_exit(case));
        assert_eq!(
            exit,
            exit_code_of(&rest),
            "{}: the CLI exited {exit}, the desktop rested {rest:?}",
            case.name
        );
        rests.push(rest.name());
    }
    // Each case came to a rest of its own kind: the four are told apart.
    assert_eq!(rests, ["idle", "waiting", "idle", "finished"], "{rests:?}");
}

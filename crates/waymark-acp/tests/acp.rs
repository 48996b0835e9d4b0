//! `waymark acp` driven by the ACP SDK's own client (`agent-client-protocol`, the reference
//! implementation editors build on) over a pipe, against a runtime with a scripted model:
//! the handshake, a prompt streamed to its end, a permission question answered from the
//! editor with exactly the options Waymark offers, and a cancelled prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client, Error};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use waymark_config::Config;
use waymark_protocol::PermissionMode;
use waymark_test_support::harness::Harness;

/// The client's end of the pipe to the agent.
type Pipe = ByteStreams<
    tokio_util::compat::Compat<tokio::io::DuplexStream>,
    tokio_util::compat::Compat<tokio::io::DuplexStream>,
>;

/// An agent on a runtime of `h`'s data folder, its sessions on `script` in `mode`; and the
/// client's end of the pipe.
fn agent(
    h: &Harness,
    script: Value,
    mode: PermissionMode,
) -> (tokio::task::JoinHandle<Result<(), Error>>, Pipe) {
    let runtime = Arc::new(h.reopen(|_| {}));
    let options = waymark_acp::Options {
        model: Some(h.script(json!({ "responses": script }))),
        permission: Some(mode),
    };
    let (client_out, agent_in) = tokio::io::duplex(1 << 16);
    let (agent_out, client_in) = tokio::io::duplex(1 << 16);
    let served = tokio::spawn(waymark_acp::serve(
        runtime,
        options,
        ByteStreams::new(agent_out.compat_write(), agent_in.compat()),
        std::future::pending(),
    ));
    (
        served,
        ByteStreams::new(client_out.compat_write(), client_in.compat()),
    )
}

/// What the client was sent, in order.
type Seen = Arc<Mutex<Vec<acp::SessionUpdate>>>;

fn text_of(seen: &Seen) -> String {
    seen.lock()
        .unwrap()
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::AgentMessageChunk(c) => match &c.content {
                acp::ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Every question the editor was asked, in order.
type Asked = Arc<Mutex<Vec<acp::RequestPermissionRequest>>>;

/// An editor on `transport` running `body`: it records each update into `seen` and each
/// question into `asked`, and answers a question with the option `pick` chooses from the ids
/// offered (an id it was not offered, if `pick` says so; `None` cancels the question).
async fn editor<R>(
    transport: Pipe,
    seen: &Seen,
    asked: &Asked,
    pick: impl Fn(&[String]) -> Option<String> + Send + Sync + 'static,
    body: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<R, Error>,
) -> Result<R, Error> {
    let (updates, questions) = (seen.clone(), asked.clone());
    Client
        .v1()
        .on_receive_notification(
            async move |n: acp::SessionNotification, _cx: ConnectionTo<Agent>| {
                updates.lock().unwrap().push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: acp::RequestPermissionRequest,
                        responder: Responder<acp::RequestPermissionResponse>,
                        _cx: ConnectionTo<Agent>| {
                let offered: Vec<String> = req
                    .options
                    .iter()
                    .map(|o| o.option_id.0.to_string())
                    .collect();
                questions.lock().unwrap().push(req);
                responder.respond(acp::RequestPermissionResponse::new(match pick(&offered) {
                    Some(id) => acp::RequestPermissionOutcome::Selected(
                        acp::SelectedPermissionOutcome::new(id),
                    ),
                    None => acp::RequestPermissionOutcome::Cancelled,
                }))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, body)
        .await
}

/// Picks the first of `ids` the question offers.
fn first_of(ids: &'static [&'static str]) -> impl Fn(&[String]) -> Option<String> + Send + Sync {
    move |offered| {
        ids.iter()
            .find(|id| offered.iter().any(|o| o == *id))
            .map(|id| id.to_string())
    }
}

/// The handshake, then a new session in `ws`.
async fn open(
    cx: &ConnectionTo<Agent>,
    ws: std::path::PathBuf,
) -> Result<acp::NewSessionResponse, Error> {
    cx.send_request(acp::InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await?;
    cx.send_request(acp::NewSessionRequest::new(ws))
        .block_task()
        .await
}

/// Prompts session `id` with `text`; how the prompt ended.
async fn prompt(
    cx: &ConnectionTo<Agent>,
    id: &acp::SessionId,
    text: &str,
) -> Result<acp::StopReason, Error> {
    Ok(cx
        .send_request(acp::PromptRequest::new(id.clone(), vec![text.into()]))
        .block_task()
        .await?
        .stop_reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_its_reply_and_ends_the_turn() {
    let h = Harness::new(Config::default());
    let (served, transport) = agent(
        &h,
        json!([{"text": "Hello from Waymark."}]),
        PermissionMode::Ask,
    );
    let seen: Seen = Arc::default();
    let ws = h.ws.clone();
    editor(
        transport,
        &seen,
        &Asked::default(),
        |_| None,
        async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(acp::InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert_eq!(init.protocol_version, ProtocolVersion::V1);
            assert!(init.agent_capabilities.prompt_capabilities.embedded_context);
            let s = cx
                .send_request(acp::NewSessionRequest::new(ws))
                .block_task()
                .await?;
            assert_eq!(
                prompt(&cx, &s.session_id, "hi").await?,
                acp::StopReason::EndTurn
            );
            Ok(())
        },
    )
    .await
    .unwrap();
    assert_eq!(text_of(&seen), "Hello from Waymark.");
    // The client went away: the agent's connection ended cleanly.
    served.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_question_is_asked_with_waymarks_options_and_its_answer_holds() {
    let h = Harness::new(Config::default());
    let (served, transport) = agent(
        &h,
        json!([
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "hello"}}]},
            {"text": "Wrote a.txt."}
        ]),
        PermissionMode::Ask,
    );
    let seen: Seen = Arc::default();
    let asked = Asked::default();
    let ws = h.ws.clone();
    editor(
        transport,
        &seen,
        &asked,
        first_of(&["allow_once"]),
        async move |cx: ConnectionTo<Agent>| {
            let s = open(&cx, ws).await?;
            assert_eq!(
                prompt(&cx, &s.session_id, "write a file").await?,
                acp::StopReason::EndTurn
            );
            Ok(())
        },
    )
    .await
    .unwrap();
    // A file tool's question offers once, for the session (Waymark's grant) and deny, and
    // shows the diff it asks about (what the user approves is in the question itself).
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    let mut offered: Vec<String> = asked[0]
        .options
        .iter()
        .map(|o| o.option_id.0.to_string())
        .collect();
    for c in asked[0].tool_call.fields.content.iter().flatten() {
        if let acp::ToolCallContent::Content(c) = c
            && let acp::ContentBlock::Text(t) = &c.content
        {
            offered.push(t.text.clone());
        }
    }
    assert_eq!(offered[..3], ["allow_once", "allow_always", "reject_once"]);
    assert!(
        offered[3..]
            .iter()
            .any(|t| t.contains("a.txt") && t.contains("+hello")),
        "{offered:?}"
    );
    assert_eq!(
        std::fs::read_to_string(h.ws.join("a.txt")).unwrap(),
        "hello"
    );
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|u| matches!(u,
            acp::SessionUpdate::ToolCall(c) if c.kind == acp::ToolKind::Edit && c.title == "write a.txt")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|u| matches!(u,
            acp::SessionUpdate::ToolCallUpdate(c) if c.fields.status == Some(acp::ToolCallStatus::Completed))),
        "{seen:?}"
    );
    served.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_prompt_stops_the_turn_and_runs_nothing() {
    let h = Harness::new(Config::default());
    let (served, transport) = agent(
        &h,
        json!([
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "hello"}}]},
            {"text": "Wrote a.txt."}
        ]),
        PermissionMode::Ask,
    );
    let ws = h.ws.clone();
    let session: Arc<Mutex<Option<acp::SessionId>>> = Arc::default();
    let asked_in = session.clone();
    Client
        .v1()
        .on_receive_request(
            async move |req: acp::RequestPermissionRequest,
                        responder: Responder<acp::RequestPermissionResponse>,
                        cx: ConnectionTo<Agent>| {
                // The user cancels while the question is open: the editor says so, then
                // answers the question as cancelled, as the protocol has it.
                *asked_in.lock().unwrap() = Some(req.session_id.clone());
                cx.send_notification(acp::CancelNotification::new(req.session_id.clone()))?;
                responder.respond(acp::RequestPermissionResponse::new(
                    acp::RequestPermissionOutcome::Cancelled,
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let s = open(&cx, ws).await?;
            assert_eq!(
                prompt(&cx, &s.session_id, "write a file").await?,
                acp::StopReason::Cancelled
            );
            Ok(())
        })
        .await
        .unwrap();
    assert!(
        session.lock().unwrap().is_some(),
        "the question was never asked"
    );
    assert!(!h.ws.join("a.txt").exists(), "a cancelled call ran");
    served.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_session_and_a_relative_folder_are_clear_errors() {
    let h = Harness::new(Config::default());
    let (served, transport) = agent(&h, json!([{"text": "unused"}]), PermissionMode::Ask);
    Client
        .v1()
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(acp::InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let e = cx
                .send_request(acp::NewSessionRequest::new("relative/dir"))
                .block_task()
                .await
                .unwrap_err();
            assert!(format!("{e:?}").contains("absolute"), "{e:?}");
            let e = cx
                .send_request(acp::PromptRequest::new(
                    acp::SessionId::from("no-such-session"),
                    vec!["hi".into()],
                ))
                .block_task()
                .await
                .unwrap_err();
            assert!(format!("{e:?}").contains("no-such-session"), "{e:?}");
            Ok(())
        })
        .await
        .unwrap();
    served.await.unwrap().unwrap();
}

/// A hostile editor answers with an option it was never offered: that is no permission at
/// all, so the call is refused and the file is not written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_option_the_question_did_not_offer_allows_nothing() {
    let h = Harness::new(Config::default());
    let (served, transport) = agent(
        &h,
        json!([
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "hello"}}]},
            {"text": "It was refused."}
        ]),
        PermissionMode::Ask,
    );
    let ws = h.ws.clone();
    editor(
        transport,
        &Seen::default(),
        &Asked::default(),
        |_| Some("allow_everything".to_string()),
        async move |cx: ConnectionTo<Agent>| {
            let s = open(&cx, ws).await?;
            assert_eq!(
                prompt(&cx, &s.session_id, "write a file").await?,
                acp::StopReason::EndTurn
            );
            Ok(())
        },
    )
    .await
    .unwrap();
    assert!(
        !h.ws.join("a.txt").exists(),
        "an option never offered allowed the write"
    );
    served.await.unwrap().unwrap();
}

/// A hostile editor cancels the prompt, then answers the open question with "allow": the
/// cancel holds and the call never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allow_sent_after_a_cancel_runs_nothing() {
    let h = Harness::new(Config::default());
    let (served, transport) = agent(
        &h,
        json!([
            {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "hello"}}]},
            {"text": "Wrote a.txt."}
        ]),
        PermissionMode::Ask,
    );
    let ws = h.ws.clone();
    Client
        .v1()
        .on_receive_request(
            async move |req: acp::RequestPermissionRequest,
                        responder: Responder<acp::RequestPermissionResponse>,
                        cx: ConnectionTo<Agent>| {
                cx.send_notification(acp::CancelNotification::new(req.session_id.clone()))?;
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                responder.respond(acp::RequestPermissionResponse::new(
                    acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(
                        "allow_once",
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let s = open(&cx, ws).await?;
            assert_eq!(
                prompt(&cx, &s.session_id, "write a file").await?,
                acp::StopReason::Cancelled
            );
            Ok(())
        })
        .await
        .unwrap();
    assert!(
        !h.ws.join("a.txt").exists(),
        "an allow sent after the cancel ran the call"
    );
    served.await.unwrap().unwrap();
}

/// A new session offers Waymark's modes and slash commands; `session/set_mode` switches the
/// permission mode and plan mode, says so, and refuses a mode Waymark does not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_offers_its_modes_and_commands_and_switches_mode() {
    let h = Harness::new(Config::default());
    let (served, transport) = agent(&h, json!([{"text": "unused"}]), PermissionMode::Ask);
    let seen: Seen = Arc::default();
    let ws = h.ws.clone();
    let made: Arc<Mutex<Option<String>>> = Arc::default();
    let id = made.clone();
    editor(
        transport,
        &seen,
        &Asked::default(),
        |_| None,
        async move |cx: ConnectionTo<Agent>| {
            let s = open(&cx, ws).await?;
            *id.lock().unwrap() = Some(s.session_id.0.to_string());
            let modes = s.modes.expect("the session's modes");
            assert_eq!(modes.current_mode_id.0.as_ref(), "default");
            let ids: Vec<String> = modes
                .available_modes
                .iter()
                .map(|m| m.id.0.to_string())
                .collect();
            assert_eq!(ids, ["default", "auto-edit", "plan", "read-only", "auto"]);
            for mode in ["read-only", "plan"] {
                cx.send_request(acp::SetSessionModeRequest::new(s.session_id.clone(), mode))
                    .block_task()
                    .await?;
            }
            let e = cx
                .send_request(acp::SetSessionModeRequest::new(
                    s.session_id.clone(),
                    "yolo",
                ))
                .block_task()
                .await
                .unwrap_err();
            assert!(format!("{e:?}").contains("yolo"), "{e:?}");
            Ok(())
        },
    )
    .await
    .unwrap();
    served.await.unwrap().unwrap();
    let seen = seen.lock().unwrap().clone();
    let commands: Vec<String> = seen
        .iter()
        .find_map(|u| match u {
            acp::SessionUpdate::AvailableCommandsUpdate(c) => Some(
                c.available_commands
                    .iter()
                    .map(|c| c.name.clone())
                    .collect(),
            ),
            _ => None,
        })
        .expect("the session's commands");
    for c in ["plan", "goal", "compact", "rewind"] {
        assert!(
            commands.iter().any(|n| n == c),
            "{c} missing from {commands:?}"
        );
    }
    let switched: Vec<String> = seen
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::CurrentModeUpdate(m) => Some(m.current_mode_id.0.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(switched, ["read-only", "plan"]);
    // The session itself is in those modes, as the window would show it.
    let id = made.lock().unwrap().clone().unwrap();
    let s = h
        .runtime
        .list_sessions()
        .unwrap()
        .into_iter()
        .find(|s| s.id == id)
        .unwrap();
    assert_eq!(s.permission_mode, PermissionMode::ReadOnly);
    assert_eq!(s.interaction_mode, waymark_protocol::InteractionMode::Plan);
}

/// The agent asks to plan first: the editor is asked with approve or decline, its approval
/// puts the session in plan mode, and the editor is told the new mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_entry_is_asked_in_the_editor_and_its_mode_change_is_told() {
    let mut config = Config::default();
    config.beta.desktop_plan_mode = true;
    config.beta.desktop_plan_mode_agent_entry = true;
    let h = Harness::new(config);
    let (served, transport) = agent(
        &h,
        json!([
            {"tool_calls": [{"name": "EnterPlanMode", "arguments": {"reason": "the change is large"}}]},
            {"text": "Planning now."}
        ]),
        PermissionMode::Ask,
    );
    let seen: Seen = Arc::default();
    let asked = Asked::default();
    let ws = h.ws.clone();
    editor(
        transport,
        &seen,
        &asked,
        first_of(&["approve"]),
        async move |cx: ConnectionTo<Agent>| {
            let s = open(&cx, ws).await?;
            prompt(&cx, &s.session_id, "rework the parser").await?;
            Ok(())
        },
    )
    .await
    .unwrap();
    served.await.unwrap().unwrap();
    let offered: Vec<String> = asked.lock().unwrap()[0]
        .options
        .iter()
        .map(|o| o.option_id.0.to_string())
        .collect();
    assert_eq!(offered, ["approve", "decline"]);
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|u| matches!(u,
            acp::SessionUpdate::CurrentModeUpdate(m) if m.current_mode_id.0.as_ref() == "plan")),
        "{seen:?}"
    );
}

/// A session made in one connection is listed and loaded in the next, its history replayed
/// before the answer; another folder's load is refused; close closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_listed_and_loaded_with_its_history_in_the_next_connection() {
    let h = Harness::new(Config::default());
    let (served, transport) = agent(
        &h,
        json!([{"text": "Hello from Waymark."}]),
        PermissionMode::Ask,
    );
    let ws = h.ws.clone();
    let id = Client
        .v1()
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let s = open(&cx, ws).await?;
            prompt(&cx, &s.session_id, "hi").await?;
            Ok(s.session_id)
        })
        .await
        .unwrap();
    served.await.unwrap().unwrap();

    let (served, transport) = agent(&h, json!([{"text": "unused"}]), PermissionMode::Ask);
    let seen: Seen = Arc::default();
    let ws = h.ws.clone();
    let elsewhere = h.dir.path().to_path_buf();
    editor(
        transport,
        &seen,
        &Asked::default(),
        |_| None,
        async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(acp::InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert!(init.agent_capabilities.load_session);
            let listed = cx
                .send_request(acp::ListSessionsRequest::new().cwd(ws.clone()))
                .block_task()
                .await?;
            assert!(
                listed.sessions.iter().any(|s| s.session_id == id),
                "{listed:?}"
            );
            let e = cx
                .send_request(acp::LoadSessionRequest::new(id.clone(), elsewhere))
                .block_task()
                .await
                .unwrap_err();
            assert!(format!("{e:?}").contains("belongs to"), "{e:?}");
            cx.send_request(acp::LoadSessionRequest::new(id.clone(), ws))
                .block_task()
                .await?;
            cx.send_request(acp::CloseSessionRequest::new(id.clone()))
                .block_task()
                .await?;
            let e = cx
                .send_request(acp::CloseSessionRequest::new(id.clone()))
                .block_task()
                .await
                .unwrap_err();
            assert!(format!("{e:?}").contains(&*id.0), "{e:?}");
            Ok(())
        },
    )
    .await
    .unwrap();
    served.await.unwrap().unwrap();
    let seen = seen.lock().unwrap().clone();
    let said = |user: bool| -> String {
        seen.iter()
            .filter_map(|u| match (u, user) {
                (acp::SessionUpdate::UserMessageChunk(c), true)
                | (acp::SessionUpdate::AgentMessageChunk(c), false) => match &c.content {
                    acp::ContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    assert_eq!(said(true), "hi");
    assert_eq!(said(false), "Hello from Waymark.");
}

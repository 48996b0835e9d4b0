//! Waymark as an Agent Client Protocol agent (protocol version 1): `waymark acp` speaks ACP
//! over stdio to an editor (Zed, JetBrains, Neovim, Emacs), on this machine or at the end of
//! `ssh host waymark acp`. It is a thin adapter over the runtime's client seam
//! (`waymark_runtime::client`): an ACP session is a Waymark session, a prompt is a message
//! submitted and followed to its rest, and a permission question goes to the editor as
//! `session/request_permission`. No business logic lives here.
//!
//! Stdout carries nothing but the protocol; logs go to the log file.

mod auth;
mod history;
mod modes;
mod outgoing;
mod prompt;
mod questions;
mod servers;
mod sessions;
mod transport;
mod updates;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error};
use std::sync::Arc;
use waymark_runtime::Runtime;

pub use sessions::Options;
use sessions::Sessions;

/// Serves ACP on the process's `stdin` and `stdout` (which carries nothing else) until the
/// client closes stdin, or until `until` ends (a signal).
pub async fn serve_stdio(
    runtime: Arc<Runtime>,
    options: Options,
    stdin: impl std::io::Read + std::os::fd::AsFd + Send + 'static,
    stdout: impl std::io::Write + std::os::fd::AsFd + Send + 'static,
    until: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    let flow = Arc::new(outgoing::Flow::metered());
    let (transport, written) = transport::stdio(stdin, stdout, flow.clone());
    let served = serve_with(runtime, options, transport, until, flow).await;
    // The last answers are on their way out: they are written before the process ends (a
    // client that reads nothing more does not hold it up for long).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), written).await;
    served
}

/// Serves ACP over `transport` until it closes or `until` ends. A client that goes away
/// stops what its sessions run, as Stop would, and closes them: everything they did is
/// stored, so the next connection finds it.
pub async fn serve(
    runtime: Arc<Runtime>,
    options: Options,
    transport: impl ConnectTo<Agent> + 'static,
    until: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    serve_with(runtime, options, transport, until, Arc::default()).await
}

/// [`serve`], the prompts holding their updates back while `flow` says the client is slow.
async fn serve_with(
    runtime: Arc<Runtime>,
    options: Options,
    transport: impl ConnectTo<Agent> + 'static,
    until: impl std::future::Future<Output = ()>,
    flow: Arc<outgoing::Flow>,
) -> Result<(), Error> {
    let sessions = Arc::new(Sessions::new(runtime, options, flow.clone()));
    let connection = agent(sessions.clone()).connect_to(transport);
    tokio::pin!(connection);
    let served = tokio::select! {
        served = &mut connection => served,
        () = until => {
            // A signal: what is on its way out may still go, briefly, so the client is not
            // left with half a line.
            flow.close();
            let _ = tokio::time::timeout(outgoing::CLOSING_WAIT, async {
                tokio::select! {
                    _ = &mut connection => {}
                    () = flow.drained() => {}
                }
            })
            .await;
            Ok(())
        }
    };
    sessions.close_all().await;
    match served {
        // A client that closed its input and then read nothing more has gone: that is the
        // end of the connection, not its failure.
        Err(e) if flow.is_closing() => {
            tracing::warn!("acp: the client left without reading the last lines: {e}");
            Ok(())
        }
        served => served,
    }
}

/// What the agent says it can do.
fn capabilities(
    version: agent_client_protocol::schema::ProtocolVersion,
) -> acp::InitializeResponse {
    acp::InitializeResponse::new(version)
        .agent_capabilities(
            acp::AgentCapabilities::new()
                .load_session(true)
                .mcp_capabilities(acp::McpCapabilities::new().http(true))
                .prompt_capabilities(acp::PromptCapabilities::new().embedded_context(true))
                .session_capabilities(
                    acp::SessionCapabilities::new()
                        .list(acp::SessionListCapabilities::new())
                        .resume(acp::SessionResumeCapabilities::new())
                        .close(acp::SessionCloseCapabilities::new()),
                ),
        )
        .auth_methods(vec![auth::method()])
        .agent_info(acp::Implementation::new("waymark", env!("CARGO_PKG_VERSION")).title("Waymark"))
}

/// Tells the editor session `id`'s slash commands now, and again once the MCP servers have
/// started if their prompts added commands (a server still starting has none listed yet).
fn offer_commands(
    sessions: &Arc<Sessions>,
    cx: &ConnectionTo<Client>,
    id: &str,
) -> Result<(), Error> {
    let send = |cx: &ConnectionTo<Client>, commands| {
        cx.send_notification(acp::SessionNotification::new(
            id.to_string(),
            acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(
                commands,
            )),
        ))
    };
    let now = sessions.commands(id)?;
    let count = now.len();
    send(cx, now)?;
    let (sessions, to_client, id) = (sessions.clone(), cx.clone(), id.to_string());
    cx.spawn(async move {
        sessions.runtime.mcp_servers(true).await;
        match sessions.commands(&id) {
            Ok(later) if later.len() != count => {
                to_client.send_notification(acp::SessionNotification::new(
                    id,
                    acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(
                        later,
                    )),
                ))
            }
            // Unchanged, or closed meanwhile.
            _ => Ok(()),
        }
    })
}

/// The agent's side of one connection.
fn agent(sessions: Arc<Sessions>) -> impl ConnectTo<Client> {
    Agent
        .v1()
        .name("waymark")
        .on_receive_request(
            async |req: acp::InitializeRequest,
                   responder: Responder<acp::InitializeResponse>,
                   _cx: ConnectionTo<Client>| {
                responder.respond(capabilities(req.protocol_version))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |req: acp::AuthenticateRequest,
                            responder: Responder<acp::AuthenticateResponse>,
                            _cx: ConnectionTo<Client>| {
                    if req.method_id.0.as_ref() != auth::METHOD {
                        return responder.respond_with_error(Error::invalid_params().data(
                            format!(
                                "no sign-in method `{}`: Waymark offers `{}`",
                                req.method_id.0,
                                auth::METHOD
                            ),
                        ));
                    }
                    match auth::ready(&sessions.runtime, sessions.model()) {
                        Ok(()) => responder.respond(acp::AuthenticateResponse::new()),
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |req: acp::NewSessionRequest,
                            responder: Responder<acp::NewSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let made = auth::ready(&sessions.runtime, sessions.model())
                        .and_then(|()| sessions.create(&req.cwd, &req.mcp_servers))
                        .and_then(|(id, left_out)| {
                            let mode = sessions.mode_of(&id)?;
                            Ok((id, mode, left_out))
                        });
                    let (id, mode, left_out) = match made {
                        Ok(made) => made,
                        Err(e) => return responder.respond_with_error(e),
                    };
                    responder.respond(
                        acp::NewSessionResponse::new(id.clone()).modes(modes::state(mode)),
                    )?;
                    // After the answer, so the editor knows the session it is about.
                    if !left_out.is_empty() {
                        cx.send_notification(acp::SessionNotification::new(
                            id.clone(),
                            acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(
                                servers::left_out_text(&left_out).into(),
                            )),
                        ))?;
                    }
                    offer_commands(&sessions, &cx, &id)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |req: acp::PromptRequest,
                            responder: Responder<acp::PromptResponse>,
                            cx: ConnectionTo<Client>| {
                    let running = match sessions.get(&req.session_id).and_then(|o| o.begin()) {
                        Ok(running) => running,
                        Err(e) => return responder.respond_with_error(e),
                    };
                    // The turn runs beside the dispatch loop, which must stay free for
                    // `session/cancel` and the answers to the turn's own questions.
                    let sessions = sessions.clone();
                    let to_client = cx.clone();
                    cx.spawn(async move {
                        let ended = prompt::run(&sessions, &to_client, req, running).await;
                        if let Err(e) = responder.respond_with_result(ended) {
                            tracing::warn!("acp: the prompt's answer was not sent: {e}");
                        }
                        Ok(())
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |req: acp::LoadSessionRequest,
                            responder: Responder<acp::LoadSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    // A replay is written whole: a client that has not read what it was sent
                    // before gets no more to queue for it.
                    if sessions.flow.backlogged() {
                        return responder.respond_with_error(Error::invalid_request().data(
                            "the editor has not read what the agent sent it yet; read it, then load again",
                        ));
                    }
                    let loaded = sessions
                        .open_stored(&req.session_id, &req.cwd, &req.mcp_servers)
                        .and_then(|ws| {
                            let history =
                                history::replay(&sessions.runtime, &req.session_id.0, &ws)?;
                            Ok((history, sessions.mode_of(&req.session_id.0)?))
                        });
                    let (history, mode) = match loaded {
                        Ok(loaded) => loaded,
                        Err(e) => return responder.respond_with_error(e),
                    };
                    // The history first, then the answer, as the protocol has it.
                    for u in history {
                        sessions.flow.sent();
                        cx.send_notification(acp::SessionNotification::new(
                            req.session_id.clone(),
                            u,
                        ))?;
                    }
                    responder.respond(acp::LoadSessionResponse::new().modes(modes::state(mode)))?;
                    offer_commands(&sessions, &cx, &req.session_id.0)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |req: acp::ResumeSessionRequest,
                            responder: Responder<acp::ResumeSessionResponse>,
                            _cx: ConnectionTo<Client>| {
                    match sessions.open_stored(&req.session_id, &req.cwd, &req.mcp_servers) {
                        Ok(_) => responder.respond(acp::ResumeSessionResponse::new()),
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |req: acp::ListSessionsRequest,
                            responder: Responder<acp::ListSessionsResponse>,
                            _cx: ConnectionTo<Client>| {
                    match sessions.list(req.cwd.as_deref()) {
                        Ok(list) => responder.respond(acp::ListSessionsResponse::new(list)),
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |req: acp::CloseSessionRequest,
                            responder: Responder<acp::CloseSessionResponse>,
                            _cx: ConnectionTo<Client>| {
                    match sessions.close(&req.session_id).await {
                        Ok(()) => responder.respond(acp::CloseSessionResponse::new()),
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |req: acp::SetSessionModeRequest,
                            responder: Responder<acp::SetSessionModeResponse>,
                            cx: ConnectionTo<Client>| {
                    match sessions.set_mode(&req.session_id, &req.mode_id.0).await {
                        Ok(now) => {
                            responder.respond(acp::SetSessionModeResponse::new())?;
                            cx.send_notification(acp::SessionNotification::new(
                                req.session_id.clone(),
                                acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(
                                    now.to_string(),
                                )),
                            ))
                        }
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let sessions = sessions.clone();
                async move |n: acp::CancelNotification, _cx: ConnectionTo<Client>| {
                    sessions.cancel(&n.session_id).await;
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
}

//! One call of a server's tool: the hub's connection check, the request, the server's
//! progress and forms while it runs, and the limits the hub keeps itself (a form pauses the
//! clock; Stop sends `notifications/cancelled` and returns at once; a server that takes no
//! cancellation is cut off).

use crate::hub::{CallHooks, CallLimits, McpHub, WATCHDOG_GRACE, lock};
use crate::result::{Shaped, shape};
use crate::{McpError, seconds};
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, Request, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

impl McpHub {
    /// Calls `tool` of `server` with `args`, within its [`CallLimits`]. On
    /// `cancel` the server is sent `notifications/cancelled` and the call returns at once.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
        limits: CallLimits,
        cancel: &CancellationToken,
        hooks: CallHooks,
    ) -> Result<Shaped, McpError> {
        let CallLimits { timeout, deadline } = limits;
        let fail = |m: String| McpError::new(server, m);
        let Some(s) = self.server(server) else {
            return Err(fail("no such server is configured".into()));
        };
        let conn = tokio::select! {
            c = self.ensure(&s) => c?,
            _ = cancel.cancelled() => return Err(fail("stopped before the server was ready".into())),
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        // The limits are kept here, not by rmcp: a form waiting on the user stops the
        // clock, and a server that stopped reading cannot hold the call while rmcp waits to
        // write its cancellation.
        let peer = conn.service.peer().clone();
        let handle = peer
            .send_cancellable_request(
                ClientRequest::CallToolRequest(Request::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(|e| fail(format!("the call could not be sent: {e}")))?;
        let id = handle.id.clone();
        let token = handle.progress_token.clone();
        let asker = hooks.asker.map(|a| s.handler.shared.ask_with(a));
        // Each report from the server counts as a word from it.
        let heard = Arc::new(Mutex::new(Instant::now()));
        let heard_in = heard.clone();
        let progress = hooks.progress;
        s.handler.shared.watch(
            token.clone(),
            Arc::new(move |p| {
                *lock(&heard_in) = Instant::now();
                if let Some(sink) = &progress {
                    sink(p);
                }
            }),
        );
        let started = Instant::now();
        let limit = async {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                // A form of this call waiting on the user stops its clock (only this one's).
                if asker.as_ref().is_some_and(|a| a.waiting()) {
                    *lock(&heard) = Instant::now();
                }
                if deadline.is_some_and(|d| started.elapsed() > d) {
                    return "the goal's time budget ran out during the call".to_string();
                }
                if lock(&heard).elapsed() > timeout {
                    return format!(
                        "no answer within {} (the server's tool_timeout_ms)",
                        seconds(timeout)
                    );
                }
            }
        };
        let outcome = tokio::select! {
            r = handle.await_response() => Ok(r),
            _ = cancel.cancelled() => Err(None),
            why = limit => Err(Some(why)),
        };
        s.handler.shared.unwatch(&token);
        let response = match outcome {
            Ok(r) => r,
            Err(why) => {
                let reason = if why.is_some() {
                    "timed out"
                } else {
                    "stopped by the user"
                };
                let told = tokio::time::timeout(
                    if why.is_some() {
                        WATCHDOG_GRACE
                    } else {
                        Duration::from_millis(300)
                    },
                    peer.notify_cancelled(CancelledNotificationParam::new(
                        Some(id),
                        Some(reason.into()),
                    )),
                )
                .await
                .is_ok_and(|r| r.is_ok());
                return Err(fail(match why {
                    None => "stopped by the user; the server was told to cancel the call".into(),
                    Some(why) if told => format!("{why}; the call was cancelled"),
                    Some(why) => {
                        conn.kill();
                        format!(
                            "{why}, and it did not take the cancellation; it was stopped and starts again on the next call"
                        )
                    }
                }));
            }
        };
        match response {
            Ok(ServerResult::CallToolResult(r)) => {
                lock(&s.state).restarts = 0;
                // Images are decoded (and maybe scaled) as the result is shaped: off the
                // async threads.
                tokio::task::spawn_blocking(move || shape(&r))
                    .await
                    .map_err(|e| fail(format!("its result could not be read: {e}")))
            }
            Ok(ServerResult::InputRequiredResult(_)) => Err(fail(
                "the server asked for more input mid-call, which Waymark does not support yet"
                    .into(),
            )),
            Ok(ServerResult::CreateTaskResult(_)) => Err(fail(
                "the server made the call a task, which Waymark does not support yet".into(),
            )),
            Ok(_) => Err(fail(
                "the server answered the call with something other than a result".into(),
            )),
            Err(ServiceError::McpError(e)) => Err(fail(format!("the call failed: {}", e.message))),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                Err(fail(format!("{} during the call", conn.closed_reason())))
            }
            Err(e) => {
                if conn.is_closed() {
                    Err(fail(format!("{} during the call", conn.closed_reason())))
                } else {
                    Err(fail(format!("the call failed: {e}")))
                }
            }
        }
    }
}

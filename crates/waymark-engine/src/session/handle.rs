//! A front end's handle on an open session: ops go to the session's actor (a command an
//! extension expands is expanded first, in the submitter's task), events come from its
//! broadcast channel.

use super::OpOutcome;
use super::session_core::SessionCore;
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc, oneshot};
use waymark_protocol::{Event, Op};

pub(super) type Reply = oneshot::Sender<Result<OpOutcome>>;

/// A front end's handle on an open session.
pub struct SessionHandle {
    pub(super) id: String,
    pub(super) ops: mpsc::UnboundedSender<(Op, Reply)>,
    pub(super) events: broadcast::Sender<Event>,
    pub(super) task: Option<tokio::task::JoinHandle<()>>,
    /// Events written while opening (before anyone could subscribe).
    pub startup: Vec<Event>,
    /// For commands an extension expands into a message, before the actor gets it.
    pub(super) core: Arc<SessionCore>,
}

impl SessionHandle {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session as its extensions see it, for work a front end asks of one outside the
    /// op queue (a goal draft's one model call).
    pub fn api(&self) -> SessionApi {
        SessionApi::new(self.core.clone())
    }

    /// The session's slash commands (the engine's and its extensions'), by name.
    pub fn commands(&self) -> Vec<crate::extension::commands::CommandSpec> {
        let mut specs = self.core.commands.specs();
        specs.sort_by_key(|s| s.name);
        specs
    }

    /// A receiver of every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Sends an op and waits until the session has taken it (not until work finishes).
    pub async fn submit(&self, op: Op) -> Result<OpOutcome> {
        let op = super::expand::expand(&self.core, op).await?;
        let op = super::prompt::check(&self.core, op).await?;
        let (tx, rx) = oneshot::channel();
        self.ops.send((op, tx)).map_err(|_| Error::SessionClosed)?;
        rx.await.map_err(|_| Error::SessionClosed)?
    }

    /// Stops any running turn, releases the lease and ends the actor.
    pub async fn shutdown(mut self) -> Result<()> {
        let r = self.submit(Op::Shutdown).await.map(|_| ());
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        r
    }
}

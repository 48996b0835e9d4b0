//! The async policy stage of a tool call. Before the guard chain decides a call, each
//! extension's [`CallPolicy`] reviews it, in order, outside any transaction, and may wait (a
//! hook process, a server). A policy may let the call pass, refuse it, have the user asked
//! about it, or rewrite its input; a rewritten input is stored, with its new digest, before
//! anything decides on it or runs it. A policy only narrows: passing never overrides plan
//! mode, the permission mode, a guard or a budget, and only the user's own answer widens.

use crate::SessionApi;
use crate::error::Result;
use futures_util::future::BoxFuture;
use waymark_protocol::{CallActor, ToolCallRecord};

/// A call as a policy sees it.
pub struct PolicyCall<'a> {
    pub turn_id: i64,
    /// The call as stored now (a rewrite by an earlier policy included).
    pub call: &'a ToolCallRecord,
    pub actor: CallActor,
    /// What the tool the name resolves to declares it does (writes, runs programs, reaches
    /// the network, acts through another program), so a policy judges the call by what it
    /// does, not by its name; `None` when no tool has that name now (the guard chain then
    /// refuses it, or a tool source still starting brings it later).
    pub effects: Option<waymark_tools::Effects>,
    /// Cancelled when the user presses Stop: a policy that waits (a hook process) stops.
    pub cancel: &'a tokio_util::sync::CancellationToken,
}

/// What a policy says of a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// No objection: the call goes on to the next policy and the guard chain.
    Pass,
    /// Refused, with the reason the model is told.
    Deny(String),
    /// The user is asked about it, whatever the permission mode would do, with the reason.
    Ask(String),
    /// Run it with this input instead (stored before it runs).
    Rewrite(serde_json::Value),
}

/// One extension's review of every tool call before the guard chain decides it.
pub trait CallPolicy: Send + Sync {
    /// A short name, shown with what it refused or asked.
    fn name(&self) -> &'static str;
    fn review<'a>(
        &'a self,
        api: &'a SessionApi,
        call: &'a PolicyCall<'a>,
    ) -> BoxFuture<'a, Result<Verdict>>;
}

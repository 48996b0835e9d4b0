//! What an extension asks of the engine's agent loop (`SessionApi::run_agent`): a run of
//! model calls and tool calls that is not the session's turn — the goal's reviewer, a
//! subagent. The run is ephemeral: nothing of it enters the session's history, and only its
//! tool calls and results are logged as events, by its actor. Its calls go through the same
//! policies and guard chain as the agent's; nobody can answer them, so a call the user
//! would be asked about is refused.

use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use waymark_protocol::ErrorInfo;
use waymark_provider::{CallPurpose, ModelMessage, Route};
use waymark_store::Tx;
use waymark_store::spend::Charge;
use waymark_tools::Tool;

/// Who runs: the actor the run's calls are made as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentRole {
    /// The goal's reviewer, under its own read-only policy: for the goal extension's
    /// completion check only (extensions are compiled in, and trusted that far).
    Verifier,
    /// A subagent: held to the session's own mode, grants and plan rules, never more. The
    /// engine gives it its depth (how many subagent runs it is nested in, plus one).
    Subagent,
}

/// Which of the session's tools a run is offered. A call to any other tool is refused.
pub type ToolFilter = Arc<dyn Fn(&dyn Tool) -> bool + Send + Sync>;

/// Told of what a run spends, inside the transaction that charges its model call to the
/// turn (and the day): the tokens of the call (0 at the end of a round of tool calls and at
/// the end of the run) and its charge (`None` when no model call was charged). The goal's
/// reviewer adds them to its goal.
pub type Meter = Box<dyn Fn(&mut Tx<'_>, u64, Option<&Charge>) -> crate::Result<()> + Send + Sync>;

/// A run for [`SessionApi::run_agent`](crate::SessionApi::run_agent).
pub struct AgentSpec {
    pub role: AgentRole,
    /// The turn the run belongs to (its calls are charged to it).
    pub turn_id: i64,
    pub system: String,
    /// What the run starts from: the brief, as messages.
    pub brief: Vec<ModelMessage>,
    pub tools: ToolFilter,
    /// The most model calls the run makes.
    pub max_steps: u32,
    /// Whether the last call offers no tools, so the model must answer.
    pub answer_last: bool,
    /// The model the run's calls go to.
    pub route: Route,
    pub purpose: CallPurpose,
    pub max_output_tokens: u32,
    /// Stop: the run ends at once (a running tool gets the usual grace). Pass the calling
    /// tool's `ctx.cancel`, so the session's Stop ends the run.
    pub cancel: CancellationToken,
    /// What a call the user would be asked about is refused with (when `asks_user` is off,
    /// or the question is one a policy asked).
    pub when_asked: String,
    /// Whether a call the guards would ask about is put to the user, like the agent's own,
    /// the run waiting for the answer (a subagent working for the agent); otherwise it is
    /// refused with `when_asked` (the goal's reviewer).
    pub asks_user: bool,
    pub meter: Option<Meter>,
    /// The call the run works for (a `task` call), named on each of its calls' events.
    pub parent: Option<ParentCall>,
}

/// The call a run works for, and the agent it runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentCall {
    pub call_id: String,
    pub agent: String,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEnd {
    /// The model replied without tool calls: its text.
    Answered(String),
    /// Stop came.
    Stopped,
    /// A model call could not start: a spending limit, an unpriced model under one.
    Refused(ErrorInfo),
    /// A model call failed.
    Failed(String),
    /// The step cap came before an answer.
    StepCapped,
}

//! The engine's one agent loop: a model call, the reply's tool calls, the next model call,
//! until the model answers without tool calls, Stop, the step cap, a refused or failed call.
//! Every model call is gated by the spending limits, streamed, billed for what it consumed
//! when it fails or is stopped, and its calls are given ids before anything records them.
//!
//! What a run keeps is its recorder's. The session's turn (`turn/persisted.rs`) stores every
//! reply and result, parks on a question and resumes from the store. A run an extension asks
//! for ([`run_agent`]: the goal's reviewer, a subagent) keeps its messages in memory and
//! logs only its calls, as events by its actor.

mod nesting;
mod run;

pub(crate) use nesting::{at_level, current_level, depth_under};
pub(crate) use run::run_agent;

use crate::error::Result;
use crate::extension::SessionApi;
use crate::provider::{ModelRequest, ModelResponse, ProviderError, Route, StreamEvent};
use crate::session::SessionCore;
use crate::store::spend::Hold;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;
use waymark_protocol::{ErrorInfo, EventKind, Usage};

/// What a recorder makes of the next model call.
pub(crate) enum Prepared<X> {
    /// The request to send.
    Request(ModelRequest),
    /// The run ends instead, as the recorder ended it.
    Exit(X),
}

/// What a recorder makes of a failed model call.
pub(crate) enum Failure<X> {
    /// Go round again (the recorder made room, or left out what the provider refused).
    Retry,
    Exit(X),
}

/// How the loop ended a run.
pub(crate) enum Ended {
    /// The model replied without tool calls: its text.
    Answered(String),
    Stopped,
    StepCapped,
    /// The next model call could not start (a spending limit).
    Refused(ErrorInfo),
}

/// Where a run keeps what happens in it.
pub(crate) trait Recorder: Send {
    type Exit: Send;
    fn turn_id(&self) -> i64;
    /// What its calls' runtime ids start with (`tc` for the turn's), and whether the
    /// provider's own ids may go on the wire (only where the history shows every id used).
    fn call_ids(&self) -> (&str, bool);
    /// Whether the reply's text is shown as it streams, and retries are said.
    fn shows_stream(&self) -> bool;
    /// Runs every call that has no result yet, in order; `Some` when the run ends there
    /// (a call parked, Stop, a call that ends the turn).
    async fn run_calls(&mut self) -> Result<Option<Self::Exit>>;
    /// The model calls made so far, and the most the run may make.
    fn steps(&self) -> Result<(u32, u32)>;
    /// The next request, or the end of the run.
    async fn prepare(&mut self, step: u32) -> Result<Prepared<Self::Exit>>;
    /// The model the next call goes to.
    fn route(&self) -> Route;
    /// Charges a call that went out and left no reply, on `usage` (an estimate).
    fn charge_unanswered(&mut self, route: &Route, usage: Usage, hold: Option<Hold>) -> Result<()>;
    /// Stop came while the reply streamed; `partial` is its text so far.
    fn stopped_midway(
        &mut self,
        route: &Route,
        usage: Usage,
        hold: Option<Hold>,
        _partial: String,
    ) -> Result<()> {
        self.charge_unanswered(route, usage, hold)
    }
    /// A model call failed (already charged or its hold released): retry or end.
    async fn failed(
        &mut self,
        e: &ProviderError,
        request: &ModelRequest,
    ) -> Result<Failure<Self::Exit>>;
    /// A reply came, before its calls have ids.
    fn replied(&mut self, _reply: &ModelResponse) {}
    /// Keeps a reply whose calls have their ids, and charges it.
    fn record_reply(
        &mut self,
        reply: &ModelResponse,
        route: &Route,
        hold: Option<Hold>,
    ) -> Result<()>;
    fn end(&mut self, how: Ended) -> Result<Self::Exit>;
}

/// Runs `rec`'s run to its end.
pub(crate) async fn run_loop<R: Recorder>(
    core: &SessionCore,
    api: &SessionApi,
    rec: &mut R,
    cancel: &CancellationToken,
) -> Result<R::Exit> {
    let turn_id = rec.turn_id();
    loop {
        if let Some(exit) = rec.run_calls().await? {
            return Ok(exit);
        }
        if cancel.is_cancelled() {
            return rec.end(Ended::Stopped);
        }
        let (steps, max_steps) = rec.steps()?;
        if steps >= max_steps {
            return rec.end(Ended::StepCapped);
        }
        let mut request = match rec.prepare(steps).await? {
            Prepared::Request(r) => r,
            Prepared::Exit(x) => return Ok(x),
        };
        // The model in force now, read once: a switch made during the run applies from the
        // next call on, and this call is limited and charged as what it is.
        let route = rec.route();
        // No model call starts past a spending limit, nor to an unpriced model under one;
        // the output is held to what the limits can still pay for (G-33).
        let hold = match core.gate_call(api, Some(turn_id), &route, &mut request)? {
            waymark_extension::Gate::Refused(refused) => {
                tracing::warn!("model call refused: {}", refused.message);
                return rec.end(Ended::Refused(refused));
            }
            waymark_extension::Gate::Go(hold) => hold,
        };
        let shown = rec.shows_stream().then_some(turn_id);
        match call_model(core, &route, &request, steps, shown, cancel).await {
            Called::Stopped(usage, partial) => {
                // Stopped after it went out: the provider bills it, so it counts.
                rec.stopped_midway(&route, usage, hold, partial)?;
                return rec.end(Ended::Stopped);
            }
            Called::Failed(e, usage) => {
                // A call the provider began answering is billed whatever comes of it next;
                // one it never answered takes its hold back.
                if e.streamed {
                    rec.charge_unanswered(&route, usage, hold)?;
                } else {
                    core.release(hold)?;
                }
                match rec.failed(&e, &request).await? {
                    Failure::Retry => continue,
                    Failure::Exit(x) => return Ok(x),
                }
            }
            Called::Replied(mut reply) => {
                rec.replied(&reply);
                crate::turn::identify_calls(
                    core,
                    rec.call_ids(),
                    turn_id,
                    steps,
                    &mut reply.tool_calls,
                )?;
                rec.record_reply(&reply, &route, hold)?;
                if reply.tool_calls.is_empty() {
                    return rec.end(Ended::Answered(reply.text));
                }
            }
        }
    }
}

/// How a model call ended.
enum Called {
    Replied(ModelResponse),
    /// It failed; what it consumed as far as it came.
    Failed(ProviderError, Usage),
    /// Stop came after it went out: what it consumed, and the text streamed so far.
    Stopped(Usage, String),
}

/// Sends `request` and waits for the reply or Stop. With `shown` (the turn's id) the
/// text is shown as it streams, except an end that could be the start of a secret, and
/// retries are said.
async fn call_model(
    core: &SessionCore,
    route: &Route,
    request: &ModelRequest,
    step: u32,
    shown: Option<i64>,
    cancel: &CancellationToken,
) -> Called {
    let streamed = Mutex::new(String::new());
    // How far the reply has come (text, reasoning, tool calls, the figures reported): what
    // a failure or a stop midway is charged for.
    let progress = Mutex::new(crate::provider::Progress::default());
    let billed = || {
        let mut at = *progress.lock().unwrap_or_else(|p| p.into_inner());
        let text = streamed.lock().unwrap_or_else(|p| p.into_inner()).len();
        at.output_bytes = at.output_bytes.max(text);
        at.charge(
            request.estimated_tokens(),
            u64::from(request.max_output_tokens),
        )
    };
    let redactor = core.journal.store.redactor();
    let display = Mutex::new(crate::secrets::StreamRedactor::default());
    let sink = |ev: StreamEvent| match ev {
        StreamEvent::Text(t) => {
            streamed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_str(&t);
            if let Some(turn_id) = shown {
                let text = display
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(&redactor, &t);
                if !text.is_empty() {
                    core.transient(EventKind::AssistantDelta { turn_id, text });
                }
            }
        }
        StreamEvent::Reasoning(_) => {}
        StreamEvent::Progress(p) => *progress.lock().unwrap_or_else(|p| p.into_inner()) = p,
        StreamEvent::Retry {
            attempt,
            wait,
            error,
        } => {
            if shown.is_some() {
                core.transient(EventKind::ModelRetry {
                    attempt,
                    wait_ms: wait.as_millis() as u64,
                    error: error.info(),
                })
            }
        }
    };
    // The turn's own calls are plain `model_call`s; any other says what it is for.
    let span = match request.purpose {
        crate::provider::CallPurpose::Main => tracing::info_span!("model_call", step),
        crate::provider::CallPurpose::Verifier => {
            tracing::info_span!("model_call", step, purpose = "verifier")
        }
        crate::provider::CallPurpose::Compact => {
            tracing::info_span!("model_call", step, purpose = "compact")
        }
        crate::provider::CallPurpose::Draft => {
            tracing::info_span!("model_call", step, purpose = "draft")
        }
    };
    let reply = tokio::select! {
        r = tracing::Instrument::instrument(route.provider.call(request, &sink), span) => r,
        _ = cancel.cancelled() => {
            // Estimated on what had streamed (reasoning and tool calls too).
            let usage = billed();
            let partial = std::mem::take(&mut *streamed.lock().unwrap_or_else(|p| p.into_inner()));
            return Called::Stopped(usage, partial);
        }
    };
    if let Some(turn_id) = shown {
        let rest = display
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .finish(&redactor);
        if !rest.is_empty() {
            core.transient(EventKind::AssistantDelta {
                turn_id,
                text: rest,
            });
        }
    }
    match reply {
        Ok(r) => Called::Replied(r),
        Err(e) => {
            let usage = billed();
            Called::Failed(e, usage)
        }
    }
}

//! The session's turn as the agent loop's recorder: every reply and result is stored as it
//! happens, a call that needs the user parks the turn (it resumes from the store when the
//! answer comes), the context is compacted when it fills, and the turn is closed with its
//! reason.

use super::compact::{self, Compacted, compact};
use super::images;
use super::offer::tool_specs;
use super::process::{CallOutcome, process_call};
use super::record::{
    TurnExit, charge_unanswered, finish, finish_aborted, record_reply, record_result,
};
use crate::agent::{Ended, Failure, Prepared, Recorder};
use crate::context::{self, ReminderContext, RequestParts};
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::provider::{ModelRequest, ModelResponse, ProviderError, Route};
use crate::session::SessionCore;
use crate::store::spend::Hold;
use crate::store::{self, SessionRow};
use crate::tools::ToolContext;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use waymark_protocol::{CompactReason, EventKind, MessageSource, ToolStatus, TurnEndReason, Usage};

/// Room kept for the reply when budgeting the context.
const MAX_OUTPUT_TOKENS: u32 = 8192;

/// The sizes of the last request built, for a retry after the provider found it too long.
#[derive(Clone, Copy, Default)]
struct Sized {
    /// The history's estimate before any elision, and the tokens elided from it.
    raw: u64,
    elided: u64,
    window: u64,
    estimate: u64,
    fixed: u64,
}

/// A turn being run: what it was set up with, and what it learned on the way.
pub(super) struct Persisted<'a> {
    core: &'a Arc<SessionCore>,
    api: SessionApi,
    turn_id: i64,
    cancel: &'a CancellationToken,
    session: SessionRow,
    reminders: Option<String>,
    tool_ctx: ToolContext,
    offer_tools: bool,
    withheld: Vec<&'static str>,
    extra_prompt: Vec<String>,
    last_elided: u64,
    context_retried: bool,
    sized: Sized,
}

impl<'a> Persisted<'a> {
    /// Sets the turn up: its session as it is now, the reminders for it (the sandbox probed
    /// first when one says which layers hold), its tools' context and the extensions' say
    /// on what is offered.
    pub(super) async fn new(
        core: &'a Arc<SessionCore>,
        turn_id: i64,
        source: MessageSource,
        cancel: &'a CancellationToken,
    ) -> Result<Self> {
        let sid = core.id.clone();
        let api = SessionApi::new(core.clone());
        let session = core
            .read(|c| Ok(store::sessions::get(c, &sid)?))?
            .ok_or_else(|| Error::SessionNotFound(sid.clone()))?;
        if core.hooks().probes_sandbox(&session) {
            core.sandbox.probe_async().await;
        }
        let reminders = context::render_reminders(
            core.reminders
                .iter()
                .flat_map(|r| {
                    r.reminders(&ReminderContext {
                        session: &session,
                        turn_id,
                        message_source: source,
                        session_dir: &core.places.session_dir,
                        api: Some(&api),
                    })
                })
                .collect(),
        );
        let offer_tools = core.hooks().offers_tools(&api, turn_id)?;
        let withheld = core.hooks().withheld_tools(&api, turn_id)?;
        let extra_prompt = core.hooks().system_prompts(&api, &session);
        Ok(Self {
            core,
            tool_ctx: core.tool_context(turn_id, cancel),
            api,
            turn_id,
            cancel,
            session,
            reminders,
            offer_tools,
            withheld,
            extra_prompt,
            last_elided: 0,
            context_retried: false,
            sized: Sized::default(),
        })
    }

    /// Compacts for `reason`, by the sizes of the last request built.
    async fn compact(&mut self, reason: CompactReason) -> Result<Compacted> {
        let s = self.sized;
        compact(
            self.core,
            &self.api,
            Some(self.turn_id),
            reason,
            compact::Sizes {
                window: s.window,
                before: s.estimate,
                fixed: s.fixed,
            },
            self.cancel,
        )
        .await
    }
}

/// How many of `calls` (from the first) run side by side: the consecutive calls of the
/// first one's tool, up to what that tool allows at once (1 for most tools).
fn side_by_side(core: &SessionCore, api: &SessionApi, calls: &[store::ToolCallRecord]) -> usize {
    let Some(first) = calls.first() else {
        return 0;
    };
    let at_once = match core.find_tool(&first.name) {
        Some(crate::session::FoundTool::Session(t)) => t.at_once(api).max(1),
        _ => 1,
    };
    calls
        .iter()
        .take(at_once)
        .take_while(|c| c.name == first.name)
        .count()
}

impl Recorder for Persisted<'_> {
    type Exit = TurnExit;

    fn turn_id(&self) -> i64 {
        self.turn_id
    }
    fn call_ids(&self) -> (&str, bool) {
        ("tc", true)
    }
    fn shows_stream(&self) -> bool {
        true
    }

    async fn run_calls(&mut self) -> Result<Option<TurnExit>> {
        let (core, turn_id) = (self.core, self.turn_id);
        loop {
            let pending =
                core.read(|c| Ok(store::turns::unresolved_calls(c, &core.id, turn_id)?))?;
            if pending.is_empty() {
                return Ok(None);
            }
            let mut terminate = false;
            let mut at = 0;
            while at < pending.len() {
                let call = &pending[at];
                if terminate {
                    record_result(
                        core,
                        turn_id,
                        call,
                        ToolStatus::Error,
                        "not run: an earlier tool call ended the turn".into(),
                        Vec::new(),
                    )?;
                    at += 1;
                    continue;
                }
                if self.cancel.is_cancelled() {
                    return finish_aborted(core, turn_id).map(Some);
                }
                // Consecutive calls of a tool that runs several at once (subagents) run side
                // by side, as many as it allows; every other call runs alone, in order.
                let group = &pending[at..at + side_by_side(core, &self.api, &pending[at..])];
                at += group.len();
                // One call that ends the turn (it failed, or stopped it) stops its siblings
                // too, rather than leave them working for a turn that is over.
                let group_ctx = ToolContext {
                    cancel: self.cancel.child_token(),
                    ..self.tool_ctx.clone()
                };
                let api = &self.api;
                let outcomes = futures_util::future::join_all(group.iter().map(|c| {
                    let ctx = &group_ctx;
                    async move {
                        let out = process_call(core, api, turn_id, c, ctx).await;
                        if !matches!(out, Ok(CallOutcome::Done { .. } | CallOutcome::Parked)) {
                            ctx.cancel.cancel();
                        }
                        out
                    }
                }))
                .await;
                let (mut parked, mut aborted) = (false, false);
                for outcome in outcomes {
                    match outcome? {
                        CallOutcome::Done { terminate: t } => terminate |= t,
                        CallOutcome::Parked => parked = true,
                        CallOutcome::Aborted => aborted = true,
                    }
                }
                if aborted {
                    return finish_aborted(core, turn_id).map(Some);
                }
                if parked {
                    return Ok(Some(TurnExit::Parked));
                }
            }
            if terminate {
                return finish(core, turn_id, TurnEndReason::Terminated, None).map(Some);
            }
        }
    }

    fn steps(&self) -> Result<(u32, u32)> {
        let steps = self
            .core
            .read(|c| Ok(store::turns::get(c, self.turn_id)?))?
            .map(|t| t.steps)
            .unwrap_or(0);
        Ok((steps, self.core.config().turn.max_steps))
    }

    async fn prepare(&mut self, steps: u32) -> Result<Prepared<TurnExit>> {
        let (core, turn_id) = (self.core, self.turn_id);
        // An extension may end the turn before another call (a goal's spent budget).
        if steps > 0 && !core.hooks().may_call_model(&self.api, turn_id, steps)? {
            return finish(core, turn_id, TurnEndReason::Completed, None).map(Prepared::Exit);
        }
        // Listed again before each call: a tool server that became ready, or whose list
        // changed, since the last one is offered from this call on.
        let (tools, tools_tokens) = if self.offer_tools {
            let (mut tools, mut tokens) = tool_specs(core, &self.session);
            if !self.withheld.is_empty() {
                let (kept, held): (Vec<_>, Vec<_>) = tools
                    .into_iter()
                    .partition(|t| !self.withheld.contains(&t.name.as_str()));
                tools = kept;
                tokens = tokens.saturating_sub(crate::provider::tools_tokens(&held));
            }
            (tools, tokens)
        } else {
            (Vec::new(), 0)
        };
        let window = core
            .config()
            .turn
            .context_tokens
            .unwrap_or_else(|| core.provider().context_tokens());
        let system = context::system_prompt(
            &core.places.workspace,
            &core.places.session_dir,
            &core.instructions,
            &self.extra_prompt,
        );
        let fixed = crate::provider::estimate_tokens(
            system.len() + self.reminders.as_ref().map_or(0, String::len),
        ) + tools_tokens;
        let (raw, estimate) = core.context_estimate(fixed)?;
        self.sized = Sized {
            raw,
            elided: self.sized.elided,
            window,
            estimate,
            fixed,
        };
        let mut reload = false;
        let manual = core
            .compact_requested
            .swap(false, std::sync::atomic::Ordering::AcqRel);
        if manual
            || crate::compaction::should_compact(
                estimate,
                window,
                core.config().turn.compact_at_percent,
            )
        {
            let reason = if manual {
                CompactReason::Manual
            } else {
                CompactReason::Threshold
            };
            match self.compact(reason).await? {
                Compacted::Cancelled => return finish_aborted(core, turn_id).map(Prepared::Exit),
                Compacted::Failed(e) => {
                    // The request is cut to fit instead (older tool outputs elided).
                    tracing::warn!(kind = ?e.kind, "compaction failed: {e}");
                }
                Compacted::Done => reload = true,
                Compacted::Nothing => {}
            }
        }
        // The estimate just read the history; only a compaction changed it since.
        let (mut request, elided) = core.with_history_loaded(reload, |history| {
            context::build_request(RequestParts {
                system: system.clone(),
                history,
                current_turn: turn_id,
                reminders: self.reminders.as_deref(),
                tools,
                tools_tokens,
                budget_tokens: window
                    .saturating_sub(u64::from(MAX_OUTPUT_TOKENS))
                    .max(window / 2),
                max_output_tokens: MAX_OUTPUT_TOKENS,
            })
        })?;
        self.sized.elided = elided.items;
        if elided.items != self.last_elided {
            self.last_elided = elided.items;
            core.write(|tx| {
                Ok(tx.emit(
                    &core.id,
                    EventKind::ContextElided {
                        turn_id,
                        items: elided.items,
                        bytes: elided.bytes,
                    },
                )?)
            })?;
        }
        // Images the provider refused before stay out.
        self.api.state::<images::Refused>().leave_out(&mut request);
        Ok(Prepared::Request(request))
    }

    fn route(&self) -> Route {
        self.core.route()
    }

    fn charge_unanswered(&mut self, route: &Route, usage: Usage, hold: Option<Hold>) -> Result<()> {
        charge_unanswered(self.core, self.turn_id, route, usage, hold)
    }

    fn stopped_midway(
        &mut self,
        route: &Route,
        usage: Usage,
        hold: Option<Hold>,
        partial: String,
    ) -> Result<()> {
        if partial.is_empty() {
            return self.charge_unanswered(route, usage, hold);
        }
        // What had streamed stays in the conversation.
        let reply = ModelResponse {
            text: partial,
            reasoning: None,
            tool_calls: vec![],
            usage,
        };
        record_reply(self.core, self.turn_id, &reply, route, hold)
    }

    async fn failed(
        &mut self,
        e: &ProviderError,
        request: &ModelRequest,
    ) -> Result<Failure<TurnExit>> {
        let (core, turn_id) = (self.core, self.turn_id);
        // Too long for the provider after all: compact once and send again.
        if e.kind == crate::provider::ProviderErrorKind::ContextTooLong && !self.context_retried {
            self.context_retried = true;
            core.underestimated();
            match self.compact(CompactReason::ProviderLimit).await? {
                Compacted::Done => return Ok(Failure::Retry),
                Compacted::Cancelled => return finish_aborted(core, turn_id).map(Failure::Exit),
                Compacted::Nothing | Compacted::Failed(_) => {
                    tracing::warn!("model call failed: {e}");
                    return finish(core, turn_id, TurnEndReason::Error, Some(e.info()))
                        .map(Failure::Exit);
                }
            }
        }
        // The provider refused an image it was sent: the images of this request stay out
        // of the session's requests from now on, and the call goes again without them.
        if images::is_refusal(e) && images::carries(request) {
            let n = self.api.state::<images::Refused>().refuse(request);
            tracing::warn!("the provider refused an image; {n} left out from now on: {e}");
            core.transient(EventKind::ModelRetry {
                attempt: 1,
                wait_ms: 0,
                error: e.info(),
            });
            return Ok(Failure::Retry);
        }
        tracing::warn!(kind = ?e.kind, "model call failed: {e}");
        finish(core, turn_id, TurnEndReason::Error, Some(e.info())).map(Failure::Exit)
    }

    fn replied(&mut self, reply: &ModelResponse) {
        if self.sized.elided == 0 {
            self.core
                .observe_input(self.sized.raw, reply.usage.input_tokens);
        }
        self.context_retried = false;
    }

    fn record_reply(
        &mut self,
        reply: &ModelResponse,
        route: &Route,
        hold: Option<Hold>,
    ) -> Result<()> {
        record_reply(self.core, self.turn_id, reply, route, hold)
    }

    fn end(&mut self, how: Ended) -> Result<TurnExit> {
        let (core, turn_id) = (self.core, self.turn_id);
        match how {
            Ended::Answered(_) => finish(core, turn_id, TurnEndReason::Completed, None),
            Ended::Stopped => finish_aborted(core, turn_id),
            Ended::StepCapped => finish(core, turn_id, TurnEndReason::StepCapped, None),
            Ended::Refused(refused) => finish(core, turn_id, TurnEndReason::Error, Some(refused)),
        }
    }
}

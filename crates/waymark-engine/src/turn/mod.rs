//! The turn engine: model call (streaming deltas) → tool calls in order through the
//! `before_tool_call` chain → results → next call, until the model replies without tool
//! calls (`completed`), a tool ends the turn (`terminated`), Stop (`aborted`), the step cap
//! (`step_capped`) or a typed error (`error`). A call that needs the user parks the turn;
//! it resumes from the stored history when the answer arrives.

mod call;
mod compact;
mod images;
mod offer;
mod policy;

pub(crate) use compact::compact_between_turns;
use compact::{Compacted, compact};
pub(crate) use offer::tool_specs;

use call::asked_about;
pub(crate) use call::{
    Decided, Executed, abandoned, call_fingerprint, decide, execute, identify_calls, run_unattended,
};

use crate::context::{self, ReminderContext, RequestParts};
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::guard::GuardDecision;
use crate::provider::{ModelResponse, StreamEvent};
use crate::session::SessionCore;
use crate::store::{self, HistoryItem, MessageRow, ToolCallRecord, TurnRow, TurnStatus, Tx};
use crate::tools::ToolContext;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use waymark_protocol::{
    CallActor, CompactReason, ErrorInfo, EventKind, MessageSource, ToolCallSummary, ToolStatus,
    TurnEndReason, Usage,
};

/// Room kept for the reply when budgeting the context.
const MAX_OUTPUT_TOKENS: u32 = 8192;

/// How a turn run begins.
pub(crate) enum TurnStart {
    New(MessageRow),
    Resume(TurnRow),
}

/// How a turn run ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TurnExit {
    Finished(TurnEndReason),
    Parked,
}

enum CallOutcome {
    Done { terminate: bool },
    Parked,
    Aborted,
}

/// Runs (or resumes) a turn to its end or until it parks.
pub(crate) async fn run(
    core: Arc<SessionCore>,
    start: TurnStart,
    cancel: CancellationToken,
) -> Result<TurnExit> {
    let sid = core.id.clone();
    let (turn_id, source) = match start {
        TurnStart::New(m) => {
            let id = core.write(|tx| {
                let id = tx.start_turn(&sid, m.id)?;
                tx.append_history(
                    &sid,
                    Some(id),
                    &HistoryItem::User {
                        text: m.text.clone(),
                        source: m.source,
                    },
                )?;
                tx.emit(
                    &sid,
                    EventKind::TurnStarted {
                        turn_id: id,
                        message_id: m.id,
                        source: m.source,
                    },
                )?;
                let api = SessionApi::new(core.clone());
                core.hooks().on_turn_start(tx, &api, id, &m)?;
                Ok(id)
            })?;
            // Outside the transaction: a checkpoint of the workspace as the turn starts.
            let api = SessionApi::new(core.clone());
            core.hooks().before_turn(&api, id, &cancel).await?;
            (id, m.source)
        }
        TurnStart::Resume(t) => {
            core.write(|tx| Ok(tx.set_turn_status(t.id, TurnStatus::Running)?))?;
            let source = core
                .read(|c| Ok(store::messages::get(c, t.message_id)?))?
                .map(|m| m.source)
                .unwrap_or(MessageSource::User);
            (t.id, source)
        }
    };
    tracing::Span::current().record("turn_id", turn_id);
    let result = drive(&core, turn_id, source, &cancel).await;
    match result {
        Ok(TurnExit::Finished(reason)) => {
            let api = SessionApi::new(core.clone());
            core.hooks().settle(&api, turn_id, &cancel).await?;
            Ok(TurnExit::Finished(reason))
        }
        Ok(TurnExit::Parked) => Ok(TurnExit::Parked),
        Err(e) => {
            // Whatever failed, the turn must not stay open.
            finish(&core, turn_id, TurnEndReason::Error, Some(e.info()))?;
            Err(e)
        }
    }
}

async fn drive(
    core: &Arc<SessionCore>,
    turn_id: i64,
    source: MessageSource,
    cancel: &CancellationToken,
) -> Result<TurnExit> {
    let sid = core.id.clone();
    let api = SessionApi::new(core.clone());
    let session = core
        .read(|c| Ok(store::sessions::get(c, &sid)?))?
        .ok_or_else(|| Error::SessionNotFound(sid.clone()))?;
    if core.hooks().probes_sandbox(&session) {
        // A reminder says which sandbox layers hold: probe before it is written.
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
                    session_dir: &core.session_dir,
                    api: Some(&api),
                })
            })
            .collect(),
    );
    let tool_ctx = ToolContext {
        workspace: core.workspace.clone(),
        session_dir: core.session_dir.clone(),
        artifacts: core.artifacts.clone(),
        cancel: cancel.clone(),
        output_limit: core.config().turn.tool_output_limit as usize,
        timeouts: crate::tools::Timeouts::from_config(&core.config().turn),
        turn_id,
        call_id: String::new(),
        sandbox: None,
        protected: Default::default(),
        live: None,
        redactor: None,
        env: core.tool_env(),
    };
    let mut last_elided = 0u64;
    let mut context_retried = false;
    let offer_tools = core.hooks().offers_tools(&api, turn_id)?;
    let withheld = core.hooks().withheld_tools(&api, turn_id)?;
    let extra_prompt = core.hooks().system_prompts(&api, &session);
    loop {
        let pending = core.read(|c| Ok(store::turns::unresolved_calls(c, &sid, turn_id)?))?;
        if !pending.is_empty() {
            let mut terminate = false;
            for call in &pending {
                if terminate {
                    record_result(
                        core,
                        turn_id,
                        call,
                        ToolStatus::Error,
                        "not run: an earlier tool call ended the turn".into(),
                        Vec::new(),
                    )?;
                    continue;
                }
                if cancel.is_cancelled() {
                    return finish_aborted(core, turn_id);
                }
                match process_call(core, &api, turn_id, call, &tool_ctx).await? {
                    CallOutcome::Done { terminate: t } => terminate = t,
                    CallOutcome::Parked => return Ok(TurnExit::Parked),
                    CallOutcome::Aborted => return finish_aborted(core, turn_id),
                }
            }
            if terminate {
                return finish(core, turn_id, TurnEndReason::Terminated, None);
            }
            continue;
        }
        if cancel.is_cancelled() {
            return finish_aborted(core, turn_id);
        }
        let steps = core
            .read(|c| Ok(store::turns::get(c, turn_id)?))?
            .map(|t| t.steps)
            .unwrap_or(0);
        if steps >= core.config().turn.max_steps {
            return finish(core, turn_id, TurnEndReason::StepCapped, None);
        }
        // An extension may end the turn before another call (a goal's spent budget).
        if steps > 0 && !core.hooks().may_call_model(&api, turn_id, steps)? {
            return finish(core, turn_id, TurnEndReason::Completed, None);
        }
        // Listed again before each call: a tool server that became ready, or whose list
        // changed, since the last one is offered from this call on.
        let (tools, tools_tokens) = if offer_tools {
            let (mut tools, mut tokens) = tool_specs(core, &session);
            if !withheld.is_empty() {
                let (kept, held): (Vec<_>, Vec<_>) = tools
                    .into_iter()
                    .partition(|t| !withheld.contains(&t.name.as_str()));
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
            &core.workspace,
            &core.session_dir,
            &core.instructions,
            &extra_prompt,
        );
        let fixed = crate::provider::estimate_tokens(
            system.len() + reminders.as_ref().map_or(0, String::len),
        ) + tools_tokens;
        let (raw, estimate) = core.context_estimate(fixed)?;
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
            match compact(
                core,
                &api,
                Some(turn_id),
                reason,
                compact::Sizes {
                    window,
                    before: estimate,
                    fixed,
                },
                cancel,
            )
            .await?
            {
                Compacted::Cancelled => return finish_aborted(core, turn_id),
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
                reminders: reminders.as_deref(),
                tools,
                tools_tokens,
                budget_tokens: window
                    .saturating_sub(u64::from(MAX_OUTPUT_TOKENS))
                    .max(window / 2),
                max_output_tokens: MAX_OUTPUT_TOKENS,
            })
        })?;
        if elided.items != last_elided {
            last_elided = elided.items;
            core.write(|tx| {
                Ok(tx.emit(
                    &sid,
                    EventKind::ContextElided {
                        turn_id,
                        items: elided.items,
                        bytes: elided.bytes,
                    },
                )?)
            })?;
        }
        // Images the provider refused before stay out.
        api.state::<images::Refused>().leave_out(&mut request);
        // The model in force now, with its spec, read once: a switch made during the turn
        // applies from the next call on, and this call is limited and charged as what it is.
        let route = core.route();
        // No model call starts past a spending limit, nor to an unpriced model under one;
        // the output is held to what the limits can still pay for (G-33).
        let hold = match core.gate_call(&api, Some(turn_id), &route, &mut request)? {
            waymark_extension::Gate::Refused(refused) => {
                tracing::warn!("model call refused: {}", refused.message);
                return finish(core, turn_id, TurnEndReason::Error, Some(refused));
            }
            waymark_extension::Gate::Go(hold) => hold,
        };
        let streamed = Mutex::new(String::new());
        // How far the reply has come (text, reasoning, tool calls, the figures reported):
        // what a failure or a stop midway is charged for.
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
        // Deltas are shown as they come, except an end that could be the start of a secret.
        let redactor = core.store.redactor();
        let shown = Mutex::new(crate::secrets::StreamRedactor::default());
        let sink = |ev: StreamEvent| match ev {
            StreamEvent::Text(t) => {
                streamed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_str(&t);
                let text = shown
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(&redactor, &t);
                if !text.is_empty() {
                    core.transient(EventKind::AssistantDelta { turn_id, text });
                }
            }
            StreamEvent::Reasoning(_) => {}
            StreamEvent::Progress(p) => *progress.lock().unwrap_or_else(|p| p.into_inner()) = p,
            StreamEvent::Retry {
                attempt,
                wait,
                error,
            } => core.transient(EventKind::ModelRetry {
                attempt,
                wait_ms: wait.as_millis() as u64,
                error: error.info(),
            }),
        };
        let reply = tokio::select! {
            r = tracing::Instrument::instrument(
                route.provider.call(&request, &sink),
                tracing::info_span!("model_call", step = steps),
            ) => r,
            _ = cancel.cancelled() => {
                // Stopped after it went out: the provider bills it, so it counts, estimated
                // on what had streamed (reasoning and tool calls too).
                let usage = billed();
                let partial = std::mem::take(&mut *streamed.lock().unwrap_or_else(|p| p.into_inner()));
                if partial.is_empty() {
                    charge_unanswered(core, turn_id, &route, usage, hold)?;
                } else {
                    record_reply(core, turn_id, &ModelResponse { text: partial, reasoning: None, tool_calls: vec![], usage }, &route, hold)?;
                }
                return finish_aborted(core, turn_id);
            }
        };
        let rest = shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .finish(&redactor);
        if !rest.is_empty() {
            core.transient(EventKind::AssistantDelta {
                turn_id,
                text: rest,
            });
        }
        let mut reply = match reply {
            Ok(r) => {
                if elided.items == 0 {
                    core.observe_input(raw, r.usage.input_tokens);
                }
                context_retried = false;
                r
            }
            Err(e) => {
                // A call the provider began answering is billed whatever comes of it next
                // (compacted and sent again, sent again without its images, or the end of
                // the turn): charged on what had streamed or been reported. One it never
                // answered takes its hold back.
                if e.streamed {
                    charge_unanswered(core, turn_id, &route, billed(), hold)?;
                } else {
                    core.release(hold)?;
                }
                // Too long for the provider after all: compact once and send again.
                if e.kind == crate::provider::ProviderErrorKind::ContextTooLong && !context_retried
                {
                    context_retried = true;
                    core.underestimated();
                    let reason = CompactReason::ProviderLimit;
                    match compact(
                        core,
                        &api,
                        Some(turn_id),
                        reason,
                        compact::Sizes {
                            window,
                            before: estimate,
                            fixed,
                        },
                        cancel,
                    )
                    .await?
                    {
                        Compacted::Done => continue,
                        Compacted::Cancelled => return finish_aborted(core, turn_id),
                        Compacted::Nothing | Compacted::Failed(_) => {
                            tracing::warn!("model call failed: {e}");
                            return finish(core, turn_id, TurnEndReason::Error, Some(e.info()));
                        }
                    }
                }
                // The provider refused an image it was sent: the images of this request stay
                // out of the session's requests from now on, and the call goes again without
                // them.
                if images::is_refusal(&e) && images::carries(&request) {
                    let n = api.state::<images::Refused>().refuse(&request);
                    tracing::warn!("the provider refused an image; {n} left out from now on: {e}");
                    core.transient(EventKind::ModelRetry {
                        attempt: 1,
                        wait_ms: 0,
                        error: e.info(),
                    });
                    continue;
                }
                tracing::warn!(kind = ?e.kind, "model call failed: {e}");
                return finish(core, turn_id, TurnEndReason::Error, Some(e.info()));
            }
        };
        identify_calls(core, CallActor::Main, turn_id, steps, &mut reply.tool_calls)?;
        record_reply(core, turn_id, &reply, &route, hold)?;
        if reply.tool_calls.is_empty() {
            return finish(core, turn_id, TurnEndReason::Completed, None);
        }
    }
}

/// Charges a call that left no reply (it failed or was stopped after it went out) to the turn
/// and its day, on `usage` (an estimate).
fn charge_unanswered(
    core: &SessionCore,
    turn_id: i64,
    route: &crate::provider::Route,
    usage: Usage,
    hold: Option<crate::store::spend::Hold>,
) -> Result<()> {
    let charge = core.charge_for(route, &usage, hold);
    core.write(|tx| Ok(tx.add_usage(turn_id, usage, &charge)?))
}

/// Commits one model reply: history, usage, step count and events, in one transaction; the
/// call is charged by the route it went by.
fn record_reply(
    core: &SessionCore,
    turn_id: i64,
    r: &ModelResponse,
    route: &crate::provider::Route,
    hold: Option<crate::store::spend::Hold>,
) -> Result<()> {
    let sid = core.id.as_str();
    core.write(|tx| {
        tx.append_history(
            sid,
            Some(turn_id),
            &HistoryItem::Assistant {
                text: r.text.clone(),
                reasoning: r.reasoning.clone(),
                tool_calls: r.tool_calls.clone(),
            },
        )?;
        tx.record_step(turn_id, r.usage, &core.charge_for(route, &r.usage, hold))?;
        tx.emit(
            sid,
            EventKind::AssistantMessage {
                turn_id,
                text: r.text.clone(),
                reasoning: r.reasoning.clone(),
                tool_calls: r
                    .tool_calls
                    .iter()
                    .map(|c| ToolCallSummary {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                    })
                    .collect(),
                usage: r.usage,
            },
        )?;
        for c in &r.tool_calls {
            tx.emit(
                sid,
                EventKind::ToolCall {
                    turn_id,
                    call_id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                    actor: CallActor::Main,
                },
            )?;
        }
        Ok(())
    })
}

fn record_result(
    core: &SessionCore,
    turn_id: i64,
    call: &ToolCallRecord,
    status: ToolStatus,
    content: String,
    changes: Vec<waymark_protocol::FileChange>,
) -> Result<()> {
    let sid = core.id.as_str();
    core.write(|tx| {
        write_result(
            tx,
            sid,
            turn_id,
            call,
            status,
            (content, Vec::new()),
            changes,
        )
    })
}

/// Records a call's result in the history and the log; `changes` (what a file tool changed)
/// only when it succeeded.
fn write_result(
    tx: &mut Tx<'_>,
    sid: &str,
    turn_id: i64,
    call: &ToolCallRecord,
    status: ToolStatus,
    (content, images): (String, Vec<waymark_protocol::ToolImage>),
    changes: Vec<waymark_protocol::FileChange>,
) -> Result<()> {
    tx.append_history(
        sid,
        Some(turn_id),
        &HistoryItem::ToolResult {
            call_id: call.id.clone(),
            wire_id: call.wire_id.clone(),
            name: call.name.clone(),
            status,
            content: content.clone(),
            images: images.clone(),
        },
    )?;
    Ok(tx.emit(
        sid,
        EventKind::ToolResult {
            turn_id,
            call_id: call.id.clone(),
            name: call.name.clone(),
            status,
            content,
            actor: CallActor::Main,
            changes: if status == ToolStatus::Ok {
                changes
            } else {
                Vec::new()
            },
            images,
        },
    )?)
}

/// Gives every call of the turn that has no result one saying why it did not run, so the
/// history stays well-formed for the model.
pub(crate) fn close_unresolved(tx: &mut Tx<'_>, sid: &str, turn_id: i64, why: &str) -> Result<()> {
    for call in store::turns::unresolved_calls(tx.conn(), sid, turn_id)? {
        write_result(
            tx,
            sid,
            turn_id,
            &call,
            ToolStatus::Error,
            (why.to_string(), Vec::new()),
            Vec::new(),
        )?;
    }
    Ok(())
}

async fn process_call(
    core: &SessionCore,
    api: &SessionApi,
    turn_id: i64,
    call: &ToolCallRecord,
    base_ctx: &ToolContext,
) -> Result<CallOutcome> {
    let sid = core.id.clone();
    let answered = core.read(|c| {
        Ok(store::questionnaires::for_turn(c, turn_id)?
            .into_iter()
            .rev()
            .find(|q| asked_about(q, call)))
    })?;
    if let Some(q) = &answered
        && q.is_pending()
    {
        // Still waiting (another process may answer it).
        core.write(|tx| Ok(tx.set_turn_status(turn_id, TurnStatus::Parked)?))?;
        return Ok(CallOutcome::Parked);
    }
    let answer = answered
        .as_ref()
        .and_then(|q| q.answer.as_ref().map(|a| (q.kind(), a)));
    // A call with no answer goes through the extensions' policies first: a fresh one, or one
    // whose question was withdrawn (its scope ended) and is decided again now. A call the
    // user answered went through them before it was asked about, and is stored as they left
    // it.
    let (staged, policy_asks) = if answer.is_none() {
        match policy::review(core, api, turn_id, call, CallActor::Main).await? {
            policy::Staged::Go { call, ask } => (call, ask),
            policy::Staged::Denied(msg) => {
                core.write(|tx| {
                    write_result(
                        tx,
                        &sid,
                        turn_id,
                        call,
                        ToolStatus::Denied,
                        (msg, Vec::new()),
                        Vec::new(),
                    )
                })?;
                core.hooks()
                    .after_tool(api, turn_id, call, ToolStatus::Denied)?;
                return Ok(CallOutcome::Done { terminate: false });
            }
        }
    } else {
        (call.clone(), None)
    };
    let call = &staged;
    // The result is recorded, then every extension hears of it.
    let recorded = |status: ToolStatus, content: String, changes, images| -> Result<()> {
        core.write(|tx| write_result(tx, &sid, turn_id, call, status, (content, images), changes))?;
        core.hooks().after_tool(api, turn_id, call, status)
    };
    let (tool, decision, ctx, changes) =
        match decide(core, api, CallActor::Main, turn_id, call, answer, base_ctx).await? {
            Decided::UnknownTool(msg) => {
                recorded(ToolStatus::Error, msg, Vec::new(), Vec::new())?;
                return Ok(CallOutcome::Done { terminate: false });
            }
            Decided::Found {
                tool,
                decision,
                ctx,
                changes,
            } => (tool, decision, ctx, changes),
        };
    let decision = policy::narrowed(decision, policy_asks, answer, call, &changes, &tool);
    match decision {
        GuardDecision::Deny(msg) => {
            recorded(ToolStatus::Denied, msg, Vec::new(), Vec::new())?;
            Ok(CallOutcome::Done { terminate: false })
        }
        GuardDecision::Ask(mut asked) => {
            let qid = core.ids.new_id("q");
            // The answer binds to this call alone: its id and what exactly it asked.
            asked.call_id = call.id.clone();
            asked.call_sha256 = call_fingerprint(call);
            let question = Box::new(waymark_protocol::Question::Permission(*asked));
            core.write(|tx| {
                tx.open_questionnaire(&qid, &sid, Some(turn_id), &question)?;
                tx.set_turn_status(turn_id, TurnStatus::Parked)?;
                Ok(tx.emit(
                    &sid,
                    EventKind::QuestionnaireOpened {
                        id: qid.clone(),
                        question,
                    },
                )?)
            })?;
            Ok(CallOutcome::Parked)
        }
        GuardDecision::Allow => {
            // A confined shell writes nothing of the workspace; anything else that may
            // write gets a checkpoint first.
            let writes = tool.effects().writes && ctx.sandbox.is_none();
            core.hooks().before_run(api, turn_id, call, writes).await?;
            run_allowed(core, api, turn_id, call, &tool, &ctx, changes, recorded).await
        }
    }
}

/// Runs a call the guards allowed and records how it ended.
#[allow(clippy::too_many_arguments)] // the one-way pipeline (issue 40, step 4) replaces `recorded`
async fn run_allowed(
    core: &SessionCore,
    api: &SessionApi,
    turn_id: i64,
    call: &ToolCallRecord,
    tool: &crate::session::FoundTool,
    ctx: &ToolContext,
    changes: Vec<waymark_protocol::FileChange>,
    recorded: impl Fn(
        ToolStatus,
        String,
        Vec<waymark_protocol::FileChange>,
        Vec<waymark_protocol::ToolImage>,
    ) -> Result<()>,
) -> Result<CallOutcome> {
    match execute(core, api, tool, ctx, call).await {
        Executed::Abandoned => {
            recorded(
                ToolStatus::Error,
                abandoned(&call.name),
                Vec::new(),
                Vec::new(),
            )?;
            Ok(CallOutcome::Aborted)
        }
        Executed::Fatal(m) => {
            recorded(ToolStatus::Error, m.clone(), Vec::new(), Vec::new())?;
            finish(
                core,
                turn_id,
                TurnEndReason::Error,
                Some(ErrorInfo::new("tool_failed", m)),
            )?;
            Ok(CallOutcome::Aborted)
        }
        Executed::Done {
            status,
            content,
            terminate,
            images,
        } => {
            recorded(status, content, changes, images)?;
            if ctx.cancel.is_cancelled() {
                return Ok(CallOutcome::Aborted);
            }
            Ok(CallOutcome::Done { terminate })
        }
    }
}

fn finish_aborted(core: &SessionCore, turn_id: i64) -> Result<TurnExit> {
    let open = core
        .read(|c| Ok(store::turns::get(c, turn_id)?))?
        .map(|t| t.status);
    if open == Some(TurnStatus::Finished) {
        // A fatal tool error already closed it.
        return Ok(TurnExit::Finished(TurnEndReason::Error));
    }
    finish(core, turn_id, TurnEndReason::Aborted, None)
}

/// Ends the turn (closing unresolved calls) and reports it.
pub(crate) fn finish(
    core: &SessionCore,
    turn_id: i64,
    reason: TurnEndReason,
    error: Option<ErrorInfo>,
) -> Result<TurnExit> {
    let sid = core.id.as_str();
    let why = match reason {
        TurnEndReason::Aborted => "not run: the user stopped the turn",
        TurnEndReason::Completed
        | TurnEndReason::Terminated
        | TurnEndReason::StepCapped
        | TurnEndReason::Error => "not run: the turn ended",
    };
    core.write(|tx| {
        close_turn(
            tx,
            core.hooks(),
            sid,
            TurnEnd {
                turn_id,
                reason,
                error: error.as_ref(),
                why,
                recovered: false,
            },
        )
    })?;
    match &error {
        Some(e) => tracing::warn!(?reason, code = %e.code, "turn ended: {}", e.message),
        None => tracing::info!(?reason, "turn ended"),
    }
    Ok(TurnExit::Finished(reason))
}

/// How a turn ends: why, the error if any, what the calls that never ran are told, and
/// whether it was found interrupted after a crash.
pub(crate) struct TurnEnd<'a> {
    pub(crate) turn_id: i64,
    pub(crate) reason: TurnEndReason,
    pub(crate) error: Option<&'a ErrorInfo>,
    /// The result given to every call that has none.
    pub(crate) why: &'a str,
    pub(crate) recovered: bool,
}

/// Closes a turn in `tx`: a result for every call that has none (saying `why`), the turn
/// row, and the `turn.finished` event (`recovered` when found interrupted after a crash).
pub(crate) fn close_turn(
    tx: &mut Tx<'_>,
    hooks: crate::hooks::Hooks<'_>,
    sid: &str,
    end: TurnEnd<'_>,
) -> Result<()> {
    let TurnEnd {
        turn_id,
        reason,
        error,
        why,
        recovered,
    } = end;
    close_unresolved(tx, sid, turn_id, why)?;
    let row = tx.finish_turn(turn_id, reason, error)?;
    hooks.on_turn_closed(tx, &row, recovered)?;
    Ok(tx.emit(
        sid,
        EventKind::TurnFinished {
            turn_id,
            reason,
            usage: row.usage,
            steps: row.steps,
            error: error.cloned().map(Box::new),
            recovered,
            cost_usd: row.spend.usd(),
        },
    )?)
}

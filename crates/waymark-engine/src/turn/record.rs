//! What a turn writes: each model reply with its charge, each call's result, and the
//! turn's end (every call left without a result told why, the row closed, the extensions
//! told, `turn.finished`).

use crate::error::Result;
use crate::provider::ModelResponse;
use crate::session::SessionCore;
use crate::store::{self, HistoryItem, ToolCallRecord, TurnStatus, Tx};
use waymark_protocol::{
    CallActor, ErrorInfo, EventKind, ToolCallSummary, ToolStatus, TurnEndReason, Usage,
};

/// How a turn run ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TurnExit {
    Finished(TurnEndReason),
    Parked,
}

/// Charges a call that left no reply (it failed or was stopped after it went out) to the turn
/// and its day, on `usage` (an estimate).
pub(super) fn charge_unanswered(
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
pub(super) fn record_reply(
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
            tx.emit(sid, call_event(turn_id, c, CallActor::Main))?;
        }
        Ok(())
    })
}

/// Records a result for a call that did not run.
pub(super) fn record_result(
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

/// Opens permission question `qid` about a call of turn `turn_id` and logs it: the user is
/// asked (the agent's call parks its turn; a subagent's waits in place).
pub(super) fn open_question(
    tx: &mut Tx<'_>,
    sid: &str,
    turn_id: i64,
    qid: &str,
    question: Box<waymark_protocol::Question>,
) -> Result<()> {
    tx.open_questionnaire(qid, sid, Some(turn_id), &question)?;
    tx.emit(
        sid,
        EventKind::QuestionnaireOpened {
            id: qid.to_string(),
            question,
        },
    )?;
    Ok(())
}

/// Records a call's result in the history and the log; `changes` (what a file tool changed)
/// only when it succeeded.
pub(super) fn write_result(
    tx: &mut Tx<'_>,
    sid: &str,
    turn_id: i64,
    call: &ToolCallRecord,
    status: ToolStatus,
    (content, images): (String, Vec<waymark_protocol::ToolImage>),
    changes: Vec<waymark_protocol::FileChange>,
) -> Result<()> {
    // A call has one result: a sibling run side by side that ends after its turn was closed
    // (which answered it "not run" before marking the turn finished) adds none.
    if store::turns::get(tx.conn(), turn_id)?
        .is_some_and(|t| t.status == store::TurnStatus::Finished)
    {
        return Ok(());
    }
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

/// Ends the turn as stopped, unless a fatal tool error already closed it.
pub(super) fn finish_aborted(core: &SessionCore, turn_id: i64) -> Result<TurnExit> {
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
    withdraw_child_questions(tx, sid, turn_id)?;
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

/// Withdraws the questions a subagent of turn `turn_id` still waits on (their calls have ids
/// of its run, `ta-…`): the run is gone with the turn, however it ended (a crash, a dropped
/// run), and a question left pending would hold the session's work back for a call that
/// never runs.
fn withdraw_child_questions(tx: &mut Tx<'_>, sid: &str, turn_id: i64) -> Result<()> {
    for q in store::questionnaires::for_turn(tx.conn(), turn_id)? {
        let child = matches!(&q.question, waymark_protocol::Question::Permission(p) if p.call_id.starts_with("ta-"));
        if child && q.is_pending() {
            tx.withdraw_questionnaire(&q.id)?;
            tx.emit(
                sid,
                EventKind::QuestionnaireAnswered {
                    id: q.id.clone(),
                    kind: q.kind(),
                    answer: waymark_protocol::Answer::Withdraw,
                },
            )?;
        }
    }
    Ok(())
}

/// The `tool.call` event of `call` by `actor`: when its reply is recorded, when a policy
/// rewrote it, and when a run that keeps no history makes it.
pub(super) fn call_event(turn_id: i64, call: &ToolCallRecord, actor: CallActor) -> EventKind {
    EventKind::ToolCall {
        turn_id,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        actor,
        subagent: None,
    }
}

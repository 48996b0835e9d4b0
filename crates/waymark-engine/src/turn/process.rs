//! One call of the turn, one way: the user's answer if it has one, else the extensions'
//! policies (which may refuse it, have the user asked or rewrite it, stored first); the
//! guard chain's decision, narrowed by the policies; a question that parks the turn, or
//! the run; then its result recorded and every extension told.

use super::call::{
    Decided, Executed, abandoned, asked_about, call_fingerprint, decide, execute, reviewed,
};
use super::policy;
use super::record::{finish, write_result};
use crate::error::Result;
use crate::extension::SessionApi;
use crate::guard::GuardDecision;
use crate::session::SessionCore;
use crate::store::{self, ToolCallRecord, TurnStatus};
use crate::tools::ToolContext;
use waymark_protocol::{CallActor, ErrorInfo, ToolStatus, TurnEndReason};

/// Where a call left the turn.
pub(super) enum CallOutcome {
    Done { terminate: bool },
    Parked,
    Aborted,
}

/// A call's result, to be recorded, and what the turn does next.
struct Ran {
    status: ToolStatus,
    content: String,
    changes: Vec<waymark_protocol::FileChange>,
    images: Vec<waymark_protocol::ToolImage>,
    then: Then,
}

/// What follows a recorded result.
enum Then {
    /// The next call (or the turn's end, when the tool ends the turn).
    Next { terminate: bool },
    /// Stop came.
    Stop,
    /// The tool failed in a way that ends the turn.
    Fail(String),
}

impl Ran {
    /// A result without changes or images, after which the turn goes on.
    fn said(status: ToolStatus, content: String) -> Ran {
        Ran {
            status,
            content,
            changes: Vec::new(),
            images: Vec::new(),
            then: Then::Next { terminate: false },
        }
    }
}

pub(super) async fn process_call(
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
        match policy::review(core, api, turn_id, call, CallActor::Main, &base_ctx.cancel).await? {
            policy::Staged::Go { call, ask } => (call, ask),
            policy::Staged::Denied(msg) => {
                record(core, api, turn_id, call, Ran::said(ToolStatus::Denied, msg))?;
                return Ok(CallOutcome::Done { terminate: false });
            }
        }
    } else {
        (call.clone(), None)
    };
    let call = &staged;
    let ran = match decide(core, api, CallActor::Main, turn_id, call, answer, base_ctx).await? {
        Decided::UnknownTool(msg) => Ran::said(ToolStatus::Error, msg),
        Decided::Found {
            tool,
            decision,
            ctx,
            changes,
        } => match policy::narrowed(decision, policy_asks, answer, call, &changes, &tool) {
            GuardDecision::Deny(msg) => Ran::said(ToolStatus::Denied, msg),
            GuardDecision::Ask(mut asked) => {
                let qid = core.journal.ids.new_id("q");
                // The answer binds to this call alone: its id and what exactly it asked.
                asked.call_id = call.id.clone();
                asked.call_sha256 = call_fingerprint(call);
                let question = Box::new(waymark_protocol::Question::Permission(*asked));
                core.write(|tx| {
                    super::record::open_question(tx, &sid, turn_id, &qid, question)?;
                    Ok(tx.set_turn_status(turn_id, TurnStatus::Parked)?)
                })?;
                return Ok(CallOutcome::Parked);
            }
            GuardDecision::Allow => {
                // A confined shell writes nothing of the workspace; anything else that may
                // write gets a checkpoint first.
                let writes = tool.effects().writes && ctx.sandbox.is_none();
                core.hooks().before_run(api, turn_id, call, writes).await?;
                let mut ran = run_allowed(core, api, call, &tool, &ctx, changes).await;
                ran.content = reviewed(
                    core,
                    api,
                    (turn_id, CallActor::Main),
                    call,
                    ran.status,
                    ran.content,
                )
                .await;
                ran
            }
        },
    };
    let then = record(core, api, turn_id, call, ran)?;
    Ok(match then {
        Then::Next { terminate } => CallOutcome::Done { terminate },
        Then::Stop => CallOutcome::Aborted,
        Then::Fail(m) => {
            finish(
                core,
                turn_id,
                TurnEndReason::Error,
                Some(ErrorInfo::new("tool_failed", m)),
            )?;
            CallOutcome::Aborted
        }
    })
}

/// Runs a call the guards allowed: its result, and what the turn does next.
async fn run_allowed(
    core: &SessionCore,
    api: &SessionApi,
    call: &ToolCallRecord,
    tool: &crate::session::FoundTool,
    ctx: &ToolContext,
    changes: Vec<waymark_protocol::FileChange>,
) -> Ran {
    match execute(core, api, tool, ctx, call).await {
        Executed::Abandoned => Ran {
            then: Then::Stop,
            ..Ran::said(ToolStatus::Error, abandoned(&call.name))
        },
        Executed::Fatal(m) => Ran {
            then: Then::Fail(m.clone()),
            ..Ran::said(ToolStatus::Error, m)
        },
        Executed::Done {
            status,
            content,
            terminate,
            images,
        } => Ran {
            status,
            content,
            changes,
            images,
            then: if ctx.cancel.is_cancelled() {
                Then::Stop
            } else {
                Then::Next { terminate }
            },
        },
    }
}

/// Records the result, then every extension hears of it.
fn record(
    core: &SessionCore,
    api: &SessionApi,
    turn_id: i64,
    call: &ToolCallRecord,
    ran: Ran,
) -> Result<Then> {
    let Ran {
        status,
        content,
        changes,
        images,
        then,
    } = ran;
    core.write(|tx| {
        write_result(
            tx,
            &core.id,
            turn_id,
            call,
            status,
            (content, images),
            changes,
        )
    })?;
    core.hooks().after_tool(api, turn_id, call, status)?;
    Ok(then)
}

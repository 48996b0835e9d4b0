//! The policy stage of a call (`waymark_extension::policy`): the extensions' async policies
//! review a fresh call, in order, before the guard chain decides it. A rewritten input is
//! stored (the history row and a new `tool.call` event, so its digest is the new one) before
//! the next policy sees it, and long before it runs: a crash after the rewrite resumes with it.

use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::extension::policy::{PolicyCall, Verdict};
use crate::session::SessionCore;
use crate::store::ToolCallRecord;
use waymark_protocol::display::escape_line;
use waymark_protocol::{CallActor, EventKind};

/// What the policies made of a call.
pub(crate) enum Staged {
    /// On to the guard chain with this call (rewritten or not), the user asked first when a
    /// policy said so (its reason).
    Go {
        call: ToolCallRecord,
        ask: Option<String>,
    },
    /// Refused, with what the model is told.
    Denied(String),
}

/// Runs the session's policies over `call`.
pub(crate) async fn review(
    core: &SessionCore,
    api: &SessionApi,
    turn_id: i64,
    call: &ToolCallRecord,
    actor: CallActor,
) -> Result<Staged> {
    let mut call = call.clone();
    let mut ask: Option<String> = None;
    for policy in &core.policies {
        let seen = PolicyCall {
            turn_id,
            call: &call,
            actor,
        };
        match policy.review(api, &seen).await? {
            Verdict::Pass => {}
            Verdict::Deny(why) => {
                return Ok(Staged::Denied(format!(
                    "Refused by the `{}` policy: {why}",
                    policy.name()
                )));
            }
            Verdict::Ask(why) => {
                ask.get_or_insert_with(|| {
                    format!("the `{}` policy asks: {}", policy.name(), escape_line(&why))
                });
            }
            Verdict::Rewrite(arguments) if arguments == call.arguments => {}
            Verdict::Rewrite(arguments) => {
                if !arguments.is_object() {
                    return Ok(Staged::Denied(format!(
                        "Refused: the `{}` policy rewrote the call's input into something that is not an object",
                        policy.name()
                    )));
                }
                let sid = core.id.clone();
                core.write(|tx| {
                    // What is stored (redacted) is what the guards judge and the tool runs,
                    // now and after a restart.
                    let Some(stored) = tx.rewrite_call(&sid, turn_id, &call.id, &arguments)? else {
                        return Err(Error::Corrupt(format!(
                            "call {} of turn {turn_id} is not stored",
                            call.id
                        )));
                    };
                    call.arguments = stored;
                    Ok(tx.emit(
                        &sid,
                        EventKind::ToolCall {
                            turn_id,
                            call_id: call.id.clone(),
                            name: call.name.clone(),
                            arguments: call.arguments.clone(),
                            actor,
                        },
                    )?)
                })?;
                // The conversation the model sees next carries the stored input.
                core.reset_history();
                tracing::info!(policy = policy.name(), call_id = %call.id, "a policy rewrote the call's input");
            }
        }
    }
    Ok(Staged::Go { call, ask })
}

/// The policies over a call nobody can answer and nothing stores (the goal reviewer's): the
/// refusal to give it, if one refuses, asks (`when_asked`) or rewrites it.
pub(crate) async fn review_unattended(
    core: &SessionCore,
    api: &SessionApi,
    turn_id: i64,
    call: &ToolCallRecord,
    actor: CallActor,
    when_asked: &str,
) -> Result<Option<String>> {
    for policy in &core.policies {
        let seen = PolicyCall {
            turn_id,
            call,
            actor,
        };
        match policy.review(api, &seen).await? {
            Verdict::Pass => {}
            Verdict::Rewrite(arguments) if arguments == call.arguments => {}
            Verdict::Deny(why) => {
                return Ok(Some(format!(
                    "Refused by the `{}` policy: {why}",
                    policy.name()
                )));
            }
            Verdict::Ask(_) => return Ok(Some(when_asked.to_string())),
            Verdict::Rewrite(_) => {
                return Ok(Some(format!(
                    "Refused: the `{}` policy would change this call, and this caller's calls run only as made",
                    policy.name()
                )));
            }
        }
    }
    Ok(None)
}

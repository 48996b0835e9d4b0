//! The policy stage of a call (`waymark_extension::policy`), and how what the policies and the
//! user said narrows the guard chain's decision: the extensions' async policies
//! review a fresh call, in order, before the guard chain decides it. A rewritten input is
//! stored (the history row and a new `tool.call` event, so its digest is the new one) before
//! the next policy sees it, and long before it runs: a crash after the rewrite resumes with it.

use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::extension::policy::{PolicyCall, Verdict};
use crate::guard::GuardDecision;
use crate::session::SessionCore;
use crate::store::ToolCallRecord;
use waymark_protocol::CallActor;
use waymark_protocol::display::escape_line;

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
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Staged> {
    let mut call = call.clone();
    let mut ask: Option<String> = None;
    // A rewrite changes the input, never the tool: its effects are read once.
    let effects = core.find_tool(&call.name).map(|t| t.effects());
    for policy in &core.policy.policies {
        let seen = PolicyCall {
            turn_id,
            call: &call,
            actor,
            effects,
            cancel,
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
                    Ok(tx.emit(&sid, super::record::call_event(turn_id, &call, actor))?)
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
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Option<String>> {
    let effects = core.find_tool(&call.name).map(|t| t.effects());
    for policy in &core.policy.policies {
        let seen = PolicyCall {
            turn_id,
            call,
            actor,
            effects,
            cancel,
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

/// The guard chain's decision, narrowed by what the policies and the user said: a policy's
/// question is asked even where the mode would allow the call, and the user's own "deny" to
/// a question about this call holds whatever the mode says. Nothing here widens.
pub(crate) fn narrowed(
    decision: GuardDecision,
    policy_asks: Option<String>,
    answer: Option<(
        waymark_protocol::QuestionnaireKind,
        &waymark_protocol::Answer,
    )>,
    call: &ToolCallRecord,
    changes: &[waymark_protocol::FileChange],
    tool: &crate::session::FoundTool,
) -> GuardDecision {
    use waymark_protocol::{Answer, QuestionnaireKind};
    if let Some((QuestionnaireKind::Permission, Answer::Deny { message })) = answer
        && matches!(decision, GuardDecision::Allow)
    {
        return GuardDecision::Deny(match message {
            Some(m) if !m.trim().is_empty() => format!("The user denied this call: {m}"),
            _ => "The user denied this call. Do not retry it; ask or take another approach."
                .to_string(),
        });
    }
    let Some(why) = policy_asks else {
        return decision;
    };
    match decision {
        GuardDecision::Allow => {
            GuardDecision::Ask(Box::new(policy_question(call, changes, tool, &why)))
        }
        GuardDecision::Ask(mut q) => {
            q.summary = format!("{} — {why}", q.summary);
            // A policy asks about each call: no answer covers more than this one.
            q.grants = waymark_protocol::GrantOffer::default();
            GuardDecision::Ask(q)
        }
        deny => deny,
    }
}

/// The question a policy has asked about a call the permission mode would let run: its
/// tool, input and file changes, and no grant (each call is asked about).
fn policy_question(
    call: &ToolCallRecord,
    changes: &[waymark_protocol::FileChange],
    tool: &crate::session::FoundTool,
    why: &str,
) -> waymark_protocol::PermissionQuestion {
    use waymark_protocol::display::escape_line;
    let shell = tool.effects().processes;
    waymark_protocol::PermissionQuestion {
        tool: call.name.clone(),
        shell,
        scope: None,
        arguments: call.arguments.clone(),
        summary: format!("{} ({why})", escape_line(&call.name)),
        command: shell
            .then(|| {
                call.arguments
                    .get("command")
                    .and_then(serde_json::Value::as_str)
            })
            .flatten()
            .map(str::to_string),
        files: changes.to_vec(),
        git: false,
        grants: waymark_protocol::GrantOffer::default(),
        call_id: String::new(),
        call_sha256: String::new(),
    }
}

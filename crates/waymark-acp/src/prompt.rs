//! One `session/prompt`: the user's message submitted to the Waymark session and followed
//! through the client seam to its rest, each event shown to the editor as it comes, each
//! permission question asked through `session/request_permission`, and the rest turned into
//! the prompt's stop reason.

use crate::sessions::{Open, Running, Sessions};
use crate::updates;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, Error};
use waymark_protocol::display::escape_block;
use waymark_protocol::{
    Answer, EventKind, GoalOp, GoalSnapshot, MessageSource, Op, PermissionQuestion, Position,
    Question, QuestionnaireStatus, TurnEndReason,
};
use waymark_runtime::client::{Progress, Settled, submit_and_follow};

/// Runs one prompt to its end.
pub(crate) async fn run(
    sessions: &Sessions,
    cx: &ConnectionTo<Client>,
    req: acp::PromptRequest,
    running: Running,
) -> Result<acp::PromptResponse, Error> {
    let sid = req.session_id.clone();
    let open = running.open();
    let text = text_of(&req.prompt)?;
    let op = Op::Submit {
        text,
        source: MessageSource::User,
        position: Position::Tail,
        idempotency_key: None,
        intent: None,
    };
    let (mut follow, _) = submit_and_follow(&open.handle, Some(op))
        .await
        .map_err(|(_, e)| Error::invalid_params().data(e.to_string()))?;
    let goal_of = sessions.runtime.goal_of();
    let send =
        |u: acp::SessionUpdate| cx.send_notification(acp::SessionNotification::new(sid.clone(), u));
    let mut stopped = false;
    let mut last_end = None;
    loop {
        let progress = tokio::select! {
            p = follow.next(&goal_of) => p,
            () = running.cancel.cancelled(), if !stopped => {
                stopped = true;
                stop(open).await;
                continue;
            }
        };
        match progress {
            Ok(Progress::Event(e)) => {
                if let EventKind::TurnFinished { reason, .. } = &e.kind {
                    last_end = Some(*reason);
                }
                for u in updates::of(&e.kind, &open.workspace) {
                    send(u)?;
                }
            }
            Ok(Progress::Lagged(n)) => {
                tracing::warn!("acp: {n} events were skipped while the client read slowly");
            }
            Ok(Progress::Closed) => {
                return Err(Error::internal_error().data("the session closed during the prompt"));
            }
            Err(e) => tracing::warn!("acp: a session's goal could not be read: {e}"),
            Ok(Progress::Settled(_)) if stopped => {
                return Ok(acp::PromptResponse::new(acp::StopReason::Cancelled));
            }
            Ok(Progress::Settled(rest)) => match rest {
                Settled::Waiting { questionnaire_id } => {
                    let row = sessions
                        .runtime
                        .questionnaire(open.handle.id(), &questionnaire_id)
                        .map_err(|e| Error::internal_error().data(e.to_string()))?;
                    let Some(row) = row.filter(|r| r.status == QuestionnaireStatus::Pending) else {
                        // Answered or withdrawn meanwhile: the session moves on by itself.
                        continue;
                    };
                    let Question::Permission(q) = row.question else {
                        send(say(
                            "Waymark waits on a question this editor cannot show yet. \
                             Answer it in the Waymark app, or with `waymark answer`, then prompt again.",
                        ))?;
                        return Ok(acp::PromptResponse::new(acp::StopReason::EndTurn));
                    };
                    // A cancel while the question is open ends it, whatever the editor
                    // answers after.
                    let answer = tokio::select! {
                        a = ask(cx, &sid, &q) => a?,
                        () = running.cancel.cancelled() => None,
                    };
                    match answer.filter(|_| !running.cancel.is_cancelled()) {
                        Some(answer) => {
                            open.handle
                                .submit(Op::Answer {
                                    questionnaire_id,
                                    answer,
                                })
                                .await
                                .map_err(|e| Error::internal_error().data(e.to_string()))?;
                        }
                        None => {
                            stopped = true;
                            stop(open).await;
                        }
                    }
                }
                Settled::Idle { failure: None } => {
                    let reason = if last_end == Some(TurnEndReason::StepCapped) {
                        acp::StopReason::MaxTurnRequests
                    } else {
                        acp::StopReason::EndTurn
                    };
                    return Ok(acp::PromptResponse::new(reason));
                }
                Settled::Idle { failure: Some(e) } => {
                    if e.code == "provider_refusal" {
                        return Ok(acp::PromptResponse::new(acp::StopReason::Refusal));
                    }
                    return Err(Error::internal_error().data(format!("{}: {}", e.code, e.message)));
                }
                // The goal goes on by itself (a wait that wakes, a limit that lifts): the
                // prompt stays open, so the editor sees its turns and Cancel stops it.
                Settled::GoalWaiting { goal }
                | Settled::Limited {
                    goal,
                    resumes_at: Some(_),
                } => {
                    send(say(&goal_line(&goal)))?;
                }
                Settled::Finished { goal, .. } | Settled::Limited { goal, .. } => {
                    send(say(&goal_line(&goal)))?;
                    return Ok(acp::PromptResponse::new(acp::StopReason::EndTurn));
                }
            },
        }
    }
}

/// Stop: the running turn ends, and a goal that would go on by itself pauses.
async fn stop(open: &Open) {
    let _ = open.handle.submit(Op::Stop).await;
    let goal = open.handle.submit(Op::Goal { op: GoalOp::Pause }).await;
    if let Err(e) = goal {
        tracing::debug!("acp: no goal to pause after a cancel: {e}");
    }
}

/// A goal's state in a line.
fn goal_line(goal: &GoalSnapshot) -> String {
    format!("Goal {}: {}", goal.status.as_str(), goal.reason.words())
}

/// The prompt's content as the message Waymark takes: text as it is, embedded files with
/// their name, links by their address.
fn text_of(blocks: &[acp::ContentBlock]) -> Result<String, Error> {
    let mut parts = Vec::new();
    for b in blocks {
        match b {
            acp::ContentBlock::Text(t) => parts.push(t.text.clone()),
            acp::ContentBlock::Resource(r) => match &r.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => {
                    parts.push(format!("<file uri=\"{}\">\n{}\n</file>", t.uri, t.text));
                }
                _ => {
                    return Err(Error::invalid_params()
                        .data("a binary embedded resource cannot be sent to Waymark yet"));
                }
            },
            acp::ContentBlock::ResourceLink(l) => parts.push(format!("<{}>", l.uri)),
            _ => {
                return Err(Error::invalid_params()
                    .data("only text, embedded text files and links can be sent to Waymark yet"));
            }
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(Error::invalid_params().data("the prompt is empty"));
    }
    Ok(text)
}

/// An agent message of Waymark's own.
fn say(text: &str) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(text.to_string().into()))
}

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";

/// The options a permission question offers the editor: exactly Waymark's, no wider. "Always"
/// only where Waymark offers a grant, as that grant.
pub(crate) fn options(q: &PermissionQuestion) -> Vec<acp::PermissionOption> {
    let mut out = vec![acp::PermissionOption::new(
        ALLOW_ONCE,
        "Allow once",
        acp::PermissionOptionKind::AllowOnce,
    )];
    if !q.git
        && let Some(text) = q.grants.session.as_ref().map(|_| {
            q.grants
                .session_text
                .clone()
                .unwrap_or_else(|| "Allow for this session".to_string())
        })
    {
        out.push(acp::PermissionOption::new(
            ALLOW_ALWAYS,
            text,
            acp::PermissionOptionKind::AllowAlways,
        ));
    }
    out.push(acp::PermissionOption::new(
        REJECT_ONCE,
        "Deny",
        acp::PermissionOptionKind::RejectOnce,
    ));
    out
}

/// The answer an option the editor chose gives; `None` for one the question did not offer.
pub(crate) fn answer_of(q: &PermissionQuestion, option: &str) -> Option<Answer> {
    if !options(q).iter().any(|o| *o.option_id.0 == *option) {
        return None;
    }
    Some(match option {
        ALLOW_ONCE => Answer::AllowOnce,
        ALLOW_ALWAYS => Answer::AllowForSession,
        _ => Answer::Deny { message: None },
    })
}

/// Asks the editor; `None` when the prompt was cancelled meanwhile.
async fn ask(
    cx: &ConnectionTo<Client>,
    sid: &acp::SessionId,
    q: &PermissionQuestion,
) -> Result<Option<Answer>, Error> {
    // What the user approves, in full: the command line, each file's diff, or the
    // arguments (the question's texts are escaped for display already).
    let mut shown = Vec::new();
    if let Some(command) = &q.command {
        shown.push(acp::ToolCallContent::from(updates::fenced("sh", command)));
    }
    for f in &q.files {
        let diff = f.diff.as_deref().unwrap_or("(no diff could be made)");
        shown.push(acp::ToolCallContent::from(format!(
            "{} `{}`\n{}",
            f.op,
            f.path,
            updates::fenced("diff", diff)
        )));
    }
    if shown.is_empty() {
        let args = serde_json::to_string_pretty(&q.arguments).unwrap_or_default();
        shown.push(acp::ToolCallContent::from(updates::fenced(
            "json",
            &escape_block(&args),
        )));
    }
    let call = acp::ToolCallUpdate::new(
        q.call_id.clone(),
        acp::ToolCallUpdateFields::new()
            .title(q.summary.clone())
            .kind(updates::kind_of(&q.tool))
            .content(shown)
            .raw_input(q.arguments.clone()),
    );
    let asked = cx
        .send_request(acp::RequestPermissionRequest::new(
            sid.clone(),
            call,
            options(q),
        ))
        .block_task()
        .await?;
    match asked.outcome {
        acp::RequestPermissionOutcome::Selected(s) => match answer_of(q, &s.option_id.0) {
            Some(a) => Ok(Some(a)),
            // An option it was not offered answers nothing wider: it is a refusal.
            None => Ok(Some(Answer::Deny { message: None })),
        },
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(session: Option<&str>, git: bool) -> PermissionQuestion {
        serde_json::from_value(serde_json::json!({
            "tool": "bash", "shell": true, "arguments": {"command": "make"},
            "summary": "Run make", "command": "make", "git": git,
            "grants": {"session": session, "session_text": "Allow `make` for this session"},
            "call_id": "c1"
        }))
        .unwrap()
    }

    #[test]
    fn always_is_offered_only_as_the_grant_waymark_offers() {
        let ids = |q: &PermissionQuestion| {
            options(q)
                .iter()
                .map(|o| o.option_id.0.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(&question(Some("make"), false)),
            [ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE]
        );
        assert_eq!(ids(&question(None, false)), [ALLOW_ONCE, REJECT_ONCE]);
        // No grant covers a write into `.git` or an instructions file.
        assert_eq!(
            ids(&question(Some("make"), true)),
            [ALLOW_ONCE, REJECT_ONCE]
        );
    }

    #[test]
    fn an_option_not_offered_answers_nothing() {
        assert_eq!(answer_of(&question(None, false), ALLOW_ALWAYS), None);
        assert_eq!(answer_of(&question(None, false), "allow_everything"), None);
        assert_eq!(
            answer_of(&question(Some("make"), false), ALLOW_ALWAYS),
            Some(Answer::AllowForSession)
        );
    }
}

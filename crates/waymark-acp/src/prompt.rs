//! One `session/prompt`: the user's message submitted to the Waymark session and followed
//! through the client seam to its rest, each event shown to the editor as it comes, each
//! question it can show asked through `session/request_permission` (`crate::questions`), and
//! the rest turned into the prompt's stop reason.

use crate::questions::{self, Asked, Chosen};
use crate::sessions::{Open, Running, Sessions};
use crate::updates;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, Error};
use waymark_protocol::display::escape_block;
use waymark_protocol::{
    Answer, EventKind, GoalOp, GoalSnapshot, MessageSource, Op, Position, QuestionnaireStatus,
    TurnEndReason,
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
    let op = match revising(sessions, open) {
        // The user chose "Revise" on the plan: this prompt is what should change.
        Some(questionnaire_id) => Op::Answer {
            questionnaire_id,
            answer: Answer::Revise {
                text,
                comments: Vec::new(),
            },
        },
        None => Op::Submit {
            text,
            source: MessageSource::User,
            position: Position::Tail,
            idempotency_key: None,
            intent: None,
            images: Vec::new(),
        },
    };
    let (mut follow, _) = submit_and_follow(&open.handle, Some(op))
        .await
        .map_err(|(_, e)| Error::invalid_params().data(e.to_string()))?;
    let goal_of = sessions.runtime.goal_of();
    // Each update is counted until it is written, so a slow client holds the next ones back.
    let send = |u: acp::SessionUpdate| {
        sessions.flow.sent();
        cx.send_notification(acp::SessionNotification::new(sid.clone(), u))
    };
    let mut stopped = false;
    let mut last_end = None;
    // The goal's status last told, so each change is said once.
    let mut goal_told = None;
    // The reply's text that has streamed in and not been sent yet: the pieces already
    // waiting go out as one chunk, without waiting for any that have not come.
    let mut text = String::new();
    loop {
        let progress = tokio::select! {
            biased;
            () = running.cancel.cancelled(), if !stopped => {
                stopped = true;
                stop(open).await;
                continue;
            }
            // A client slow to read holds the next event back (once too many updates wait
            // to be written): the session's own bounded channel then skips what it cannot
            // keep, and the editor is told (`Lagged`), instead of every update queueing for
            // it without end.
            p = async {
                sessions.flow.room().await;
                follow.next(&goal_of).await
            } => p,
            () = std::future::ready(()), if !text.is_empty() => {
                send(updates::reply_text(&std::mem::take(&mut text)))?;
                continue;
            }
        };
        if let Ok(Progress::Event(e)) = &progress
            && let EventKind::AssistantDelta { text: more, .. } = &e.kind
        {
            text.push_str(more);
            continue;
        }
        if !text.is_empty() {
            send(updates::reply_text(&std::mem::take(&mut text)))?;
        }
        match progress {
            Ok(Progress::Event(e)) => {
                if let EventKind::TurnFinished { reason, .. } = &e.kind {
                    last_end = Some(*reason);
                }
                // The agent entered or left plan mode, or the mode was switched elsewhere.
                if matches!(
                    e.kind,
                    EventKind::PlanModeChanged { .. } | EventKind::SessionConfigured { .. }
                ) && let Ok(mode) = sessions.mode_of(open.handle.id())
                {
                    send(acp::SessionUpdate::CurrentModeUpdate(
                        acp::CurrentModeUpdate::new(mode.to_string()),
                    ))?;
                }
                for u in updates::of(&e.kind, &open.workspace) {
                    send(u)?;
                }
                // A goal that starts or changes status says so in a short line.
                if let EventKind::GoalUpdated { goal } = &e.kind {
                    tell_goal(goal, &mut goal_told, &send)?;
                }
            }
            Ok(Progress::Lagged(n)) => {
                // The editor read too slowly and missed events: it is told so, and given the
                // state they would have left it in (the mode, the goal's progress).
                tracing::warn!("acp: {n} events were skipped while the client read slowly");
                send(say(&format!(
                    "\n\n({n} updates were skipped while the editor read slowly; the session's history has them.)\n"
                )))?;
                if let Ok(mode) = sessions.mode_of(open.handle.id()) {
                    send(acp::SessionUpdate::CurrentModeUpdate(
                        acp::CurrentModeUpdate::new(mode.to_string()),
                    ))?;
                }
                if let Ok(Some(goal)) = goal_of(open.handle.id()) {
                    send(acp::SessionUpdate::Plan(updates::goal_plan(&goal)))?;
                }
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
                    // A plan to review is shown first, and its steps as the editor's plan.
                    let asked = if let waymark_protocol::Question::PlanApproval(r) = &row.question {
                        let markdown = sessions
                            .runtime
                            .plan_revision_text(open.handle.id(), Some(&r.plan_id), r.version)
                            .map_err(|e| Error::internal_error().data(e.to_string()))?;
                        for u in questions::plan_shown(r, &markdown) {
                            send(u)?;
                        }
                        Some(questions::plan_review(r, &markdown, &questionnaire_id))
                    } else {
                        questions::asked(&row.question, &questionnaire_id)
                    };
                    let Some(asked) = asked else {
                        send(say(
                            "Waymark waits on a question this editor cannot show yet. \
                             Answer it in the Waymark app, or with `waymark answer`, then prompt again.",
                        ))?;
                        return Ok(acp::PromptResponse::new(acp::StopReason::EndTurn));
                    };
                    // A cancel while the question is open ends it, whatever the editor
                    // answers after.
                    let answer = tokio::select! {
                        a = ask(cx, &sid, &asked) => a?,
                        () = running.cancel.cancelled() => None,
                    };
                    match answer.filter(|_| !running.cancel.is_cancelled()) {
                        Some(Chosen::FeedbackNext) => {
                            open.revise_next(questionnaire_id);
                            send(say(
                                "\n\nSend what the plan should change as your next message: \
                                 the agent revises the plan with it.",
                            ))?;
                            return Ok(acp::PromptResponse::new(acp::StopReason::EndTurn));
                        }
                        Some(Chosen::Answer(answer)) => {
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
                    tell_goal(&goal, &mut goal_told, &send)?;
                }
                // The goal's last word ends the prompt: a blocked goal's question is the
                // last message the editor shows.
                Settled::Finished { goal, .. } | Settled::Limited { goal, .. } => {
                    tell_goal(&goal, &mut goal_told, &send)?;
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

/// The plan review this prompt gives the feedback for: the one the user chose "Revise" on,
/// while it still waits (answered elsewhere meanwhile, the prompt is a message as any other).
fn revising(sessions: &Sessions, open: &Open) -> Option<String> {
    let id = open.take_revising()?;
    match sessions.runtime.questionnaire(open.handle.id(), &id) {
        Ok(Some(row)) if row.status == QuestionnaireStatus::Pending => Some(id),
        _ => None,
    }
}

/// Says the goal's state in a line, once per status it comes to (`told` keeps the last one said).
fn tell_goal(
    goal: &GoalSnapshot,
    told: &mut Option<(String, waymark_protocol::GoalStatus)>,
    send: &impl Fn(acp::SessionUpdate) -> Result<(), Error>,
) -> Result<(), Error> {
    let now = Some((goal.goal_id.clone(), goal.status));
    if *told == now {
        return Ok(());
    }
    *told = now;
    send(say(&goal_line(goal)))
}

/// A goal's state in a short paragraph: its status and why, what it has spent of each
/// budget it has, and the question it is blocked on.
fn goal_line(goal: &GoalSnapshot) -> String {
    let b = &goal.budget;
    let spent: Vec<String> = [
        (&b.main_turns, "turns"),
        (&b.tokens, "tokens"),
        (&b.active_seconds, "s"),
    ]
    .into_iter()
    .filter_map(|(line, unit)| line.limit.map(|l| format!("{} of {l} {unit}", line.used)))
    .collect();
    let mut text = format!(
        "\n\nGoal {}: {}.",
        goal.status.as_str(),
        goal.reason.words()
    );
    if !spent.is_empty() {
        text.push_str(&format!(" Spent {}.", spent.join(", ")));
    }
    if let Some(q) = &goal.question {
        text.push_str(&format!("\n\nThe agent asks: {}", escape_block(q)));
    }
    text.push('\n');
    text
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

/// Asks the editor; `None` when the prompt was cancelled meanwhile. An option the question
/// did not offer is its refusal.
async fn ask(
    cx: &ConnectionTo<Client>,
    sid: &acp::SessionId,
    asked: &Asked,
) -> Result<Option<Chosen>, Error> {
    let reply = cx
        .send_request(acp::RequestPermissionRequest::new(
            sid.clone(),
            asked.call.clone(),
            asked.options(),
        ))
        .block_task()
        .await?;
    match reply.outcome {
        acp::RequestPermissionOutcome::Selected(s) => {
            Ok(Some(asked.chosen_or_refusal(&s.option_id.0)))
        }
        _ => Ok(None),
    }
}

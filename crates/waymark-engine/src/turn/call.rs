//! One tool call, the same for the session's agent and the goal's verifier: its identity
//! (runtime ids, wire ids, the digest an answer binds to), the guard chain's decision, and
//! running the tool so that Stop ends it within a second.

use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::guard::{GuardCall, GuardDecision, run_chain};
use crate::session::SessionCore;
use crate::store::{self, ToolCallRecord};
use crate::tools::ToolOutput;
use crate::tools::{ToolContext, ToolError, truncate_head};
use std::time::Duration;
use waymark_protocol::{Answer, QuestionnaireKind};
use waymark_protocol::{CallActor, EventKind, ToolStatus};

/// What the guard chain decided about a call, and the context it runs in if allowed.
pub(crate) enum Decided {
    /// No such tool; the message lists the tools.
    UnknownTool(String),
    /// The tool was found and the guards decided.
    Found {
        /// The tool the guards decided on: the very one that runs (a tool source could
        /// answer the name differently later).
        tool: crate::session::FoundTool,
        decision: GuardDecision,
        ctx: Box<ToolContext>,
        /// What an allowed file tool will change, for its result's event.
        changes: Vec<waymark_protocol::FileChange>,
    },
}

/// Runs the guard chain for `call` by `actor`. The session's mode is read for every call:
/// a `/plan on` admitted mid-turn confines the very next shell command, and the verifier's
/// shell is always the sandboxed one.
pub(crate) async fn decide(
    core: &SessionCore,
    api: &SessionApi,
    actor: CallActor,
    turn_id: i64,
    call: &ToolCallRecord,
    answer: Option<(QuestionnaireKind, &Answer)>,
    base_ctx: &ToolContext,
) -> Result<Decided> {
    let sid = core.id.clone();
    let mut found = core.find_tool(&call.name);
    if found.is_none() {
        // A tool of a source still starting (an MCP server not ready yet) is waited for,
        // within the source's own bound, rather than refused as unknown.
        for s in &core.toolbox.sources {
            if s.wait_for(&sid, &call.name).await {
                found = core.find_tool(&call.name);
                break;
            }
        }
    }
    let Some(found) = found else {
        let mut names: Vec<String> = core
            .toolbox
            .fixed
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        for s in &core.toolbox.sources {
            names.extend(s.names(&sid));
        }
        return Ok(Decided::UnknownTool(format!(
            "there is no tool named `{}`; the tools are: {}",
            crate::display::escape_line(&call.name),
            names.join(", ")
        )));
    };
    let (session, grants) = core.read(|c| {
        let s =
            store::sessions::get(c, &sid)?.ok_or_else(|| Error::SessionNotFound(sid.clone()))?;
        Ok((s, store::sessions::grants(c, &sid)?))
    })?;
    // The verifier's shell is always the read-only one; extensions may confine the agent's
    // (plan mode) and cap how long a call may take (a goal's time budget).
    let mut prep = crate::extension::CallPrep::default();
    if actor == CallActor::Verifier {
        prep.confine(Vec::new());
    }
    let info = crate::extension::CallInfo {
        actor,
        turn_id,
        session: &session,
        call,
    };
    core.hooks().before_tool(api, &info, &mut prep)?;
    let writable = prep.writable().map(<[_]>::to_vec);
    let sandbox = match writable {
        Some(files) => {
            // Probed once per session, off the async threads.
            core.sandbox.probe_async().await;
            // The network only as far as the hooks let it out (the verifier's never is).
            let network = match actor {
                CallActor::Main | CallActor::Subagent(_) => prep.shell_network(),
                CallActor::Verifier => waymark_config::ShellNetwork::Deny,
            };
            let settings = &core.config().sandbox;
            let mut spec = core.sandbox.spec(files, network, settings);
            if let (Some(spec), Some(owner)) = (spec.as_mut(), prep.scratch_owner()) {
                // Where the scratch shell is missing, the read-only one stands in.
                spec.scratch = core.sandbox.scratch_async(owner, settings).await.ok();
            }
            spec
        }
        None => None,
    };
    let protected = core.sandbox.protected(&core.config().sandbox.read_allow);
    let tool = found.tool();
    let guard_call = GuardCall {
        tool: tool.as_ref(),
        call_id: &call.id,
        arguments: &call.arguments,
        session: &session,
        workspace: &core.places.workspace,
        artifacts: &core.places.artifacts,
        shell_sandboxed: sandbox.is_some(),
        grants: &grants,
        answer,
        turn_id,
        actor,
        api: Some(api),
        protected: &protected,
    };
    let decision = run_chain(&core.policy.guards, &guard_call);
    // Before it runs, the diff of what an allowed file tool will change (the file is read
    // as it is now; the private places the guard keeps stay hidden).
    let changes = if matches!(decision, GuardDecision::Allow) {
        crate::preview::changes_to_show(&guard_call)
    } else {
        Vec::new()
    };
    // A private place the guard let this call read is read; any other stays refused by the
    // tool itself, whatever the path turns out to be when it runs.
    let protected = if matches!(decision, GuardDecision::Allow)
        && crate::permission::private_read_allowed(
            &guard_call,
            crate::extension::rules::scope_of(&core.policy.rules, &session),
        ) {
        crate::sandbox::private::Protected::none()
    } else {
        protected.clone()
    };
    // Under a time budget, no allowed command outlives it by more than the grace.
    let mut timeouts = base_ctx.timeouts;
    if matches!(decision, GuardDecision::Allow) {
        timeouts.budget_left = prep
            .time_left()
            .map(|left| left.saturating_add(crate::tools::BUDGET_GRACE));
    }
    let ctx = ToolContext {
        sandbox,
        timeouts,
        protected,
        call_id: call.id.clone(),
        live: Some(live_output(core, api, turn_id, &call.id)),
        redactor: Some(core.journal.store.redactor()),
        ..base_ctx.clone()
    };
    Ok(Decided::Found {
        tool: found,
        decision,
        ctx: Box::new(ctx),
        changes,
    })
}

/// Where a running command's output goes as it arrives: to the front ends, redacted as
/// its result will be, as a transient `tool.output`.
fn live_output(
    core: &SessionCore,
    api: &SessionApi,
    turn_id: i64,
    call_id: &str,
) -> crate::tools::LiveOutput {
    let api = api.clone();
    let call_id = call_id.to_string();
    let redactor = core.journal.store.redactor();
    std::sync::Arc::new(move |text: &str| {
        api.transient(EventKind::ToolOutput {
            turn_id,
            call_id: call_id.clone(),
            text: redactor.redact(text).into_owned(),
        })
    })
}

/// How an allowed tool ended.
pub(crate) enum Executed {
    /// A result for the model: its status, content (cut to the output limit) and whether
    /// the tool ends the turn.
    Done {
        status: ToolStatus,
        content: String,
        terminate: bool,
        images: Vec<waymark_protocol::ToolImage>,
    },
    /// The tool failed in a way that ends the turn.
    Fatal(String),
    /// Stop came and the tool did not wind down in time.
    Abandoned,
}

/// Runs an allowed tool and shapes its result.
pub(crate) async fn execute(
    core: &SessionCore,
    api: &SessionApi,
    found: &crate::session::FoundTool,
    ctx: &ToolContext,
    call: &ToolCallRecord,
) -> Executed {
    let span = tracing::info_span!("tool", name = %call.name, call_id = %call.id);
    let run = run_tool(found, api, ctx, call.arguments.clone());
    let Some(result) = tracing::Instrument::instrument(run, span).await else {
        return Executed::Abandoned;
    };
    let limit = core.config().turn.tool_output_limit as usize;
    let hint = "Ask for less (a line range, a narrower pattern).";
    // Secrets go before the cut, so a cut cannot leave part of one behind, and before the
    // result reaches any model (the verifier's results never pass through the store).
    let redactor = core.journal.store.redactor();
    let shape = |text: &str| truncate_head(&redactor.redact(text), limit, hint);
    match result {
        Ok(out) => Executed::Done {
            status: ToolStatus::Ok,
            content: shape(&out.content),
            terminate: out.terminate,
            images: out.images,
        },
        Err(ToolError::Model(m)) => Executed::Done {
            status: ToolStatus::Error,
            content: shape(&m),
            terminate: false,
            images: Vec::new(),
        },
        Err(ToolError::Fatal(m)) => Executed::Fatal(m),
    }
}

/// What an abandoned tool's result says.
pub(crate) fn abandoned(name: &str) -> String {
    format!("[stopped by the user; `{name}` did not stop by itself in time and was abandoned]")
}

/// Gives each call of a reply its runtime id (`<prefix>_<turn>_<step>_<n>`: `tc` for the
/// turn's calls, `tv` for the verifier's, `ta-<run id>` for a subagent run's; unique in the
/// session) and a wire id: the provider's own when it is usable and not used before in the
/// conversation or the reply, else the runtime id. Provider ids never name a call inside the
/// runtime, so a provider that omits or repeats them cannot make two calls share an answer.
pub(crate) fn identify_calls(
    core: &SessionCore,
    (prefix, provider_ids): (&str, bool),
    turn_id: i64,
    step: u32,
    calls: &mut [ToolCallRecord],
) -> Result<()> {
    let mut seen: Vec<String> = Vec::with_capacity(calls.len());
    for (n, c) in calls.iter_mut().enumerate() {
        c.id = format!("{prefix}_{turn_id}_{step}_{n}");
        // A run that keeps no history (the reviewer's, a subagent's) cannot tell whether the
        // provider used an id before in it: its calls go by the runtime's ids.
        if !provider_ids {
            c.wire_id = None;
        }
        let usable = match c.wire_id.as_deref() {
            Some(w) => {
                usable_wire_id(w) && !seen.iter().any(|s| s == w) && !core.wire_id_used(w)?
            }
            None => false,
        };
        if !usable {
            c.wire_id = Some(c.id.clone());
        }
        seen.push(c.wire().to_string());
    }
    Ok(())
}

/// Wire ids every provider accepts: 1–64 ASCII letters, digits, `_` and `-`.
fn usable_wire_id(w: &str) -> bool {
    // `tc_`, `tv_` and `ta-` are the runtime's own prefixes: a provider id shaped like them
    // could collide with a wire id the runtime makes up later.
    !w.starts_with("tc_")
        && !w.starts_with("tv_")
        && !w.starts_with("ta-")
        && (1..=64).contains(&w.len())
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// How long a stopped tool gets to wind down by itself (bash kills its process group and
/// keeps the output so far) before the turn ends without it.
const STOP_GRACE: Duration = Duration::from_millis(700);

/// Runs a tool; on Stop it gets [`STOP_GRACE`] to finish, then it is abandoned (`None`), so
/// Stop ends the turn whatever the tool is doing (a read stuck in the kernel, a hung mount).
pub(crate) async fn run_tool(
    found: &crate::session::FoundTool,
    api: &SessionApi,
    ctx: &ToolContext,
    args: serde_json::Value,
) -> Option<std::result::Result<ToolOutput, ToolError>> {
    use crate::session::FoundTool;
    let fut = match found {
        FoundTool::Session(t) => t.handle_in(api, ctx, args),
        FoundTool::Free(t) => t.handle(ctx, args),
    };
    tokio::pin!(fut);
    tokio::select! {
        r = &mut fut => Some(r),
        _ = ctx.cancel.cancelled() => tokio::time::timeout(STOP_GRACE, fut).await.ok(),
    }
}

/// A digest of what a call asks for (tool and arguments), which a permission answer binds to.
pub(crate) fn call_fingerprint(call: &ToolCallRecord) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(call.name.as_bytes());
    h.update([0]);
    h.update(call.arguments.to_string().as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `q` is the permission question this very call raised: same call id and the same
/// tool and arguments. No other call can use its answer.
pub(crate) fn asked_about(q: &store::QuestionnaireRow, call: &ToolCallRecord) -> bool {
    match &q.question {
        waymark_protocol::Question::Permission(p) => {
            p.call_id == call.id && p.call_sha256 == call_fingerprint(call)
        }
        _ => false,
    }
}

/// Whether `actor` may call `tool`: a session tool acts on the session itself, and a
/// subagent may call one only when it says so.
fn for_actor(tool: &crate::session::FoundTool, actor: CallActor) -> bool {
    match (tool, actor) {
        (crate::session::FoundTool::Session(t), CallActor::Subagent(_)) => t.for_subagents(),
        _ => true,
    }
}

/// The most of the extensions' notes one result carries, in bytes (past it, cut with `…`).
const MAX_NOTES: usize = 8 * 1024;

/// What comes before the extensions' notes, so the model tells them from the tool's output.
const NOTES_HEADING: &str = "[Notes the session's checks added to this result]";

/// `content` with the notes the extensions' result review adds (`review_result`) under a
/// heading, redacted and cut to [`MAX_NOTES`]: a call of `actor` in turn `turn_id` that ran.
/// The call ran whatever the review says: a review that fails adds nothing (it is logged and
/// said as a session error), so its result is still recorded as what happened.
pub(crate) async fn reviewed(
    core: &SessionCore,
    api: &SessionApi,
    (turn_id, actor): (i64, CallActor),
    call: &ToolCallRecord,
    status: ToolStatus,
    mut content: String,
) -> String {
    let seen = crate::extension::ResultSeen {
        status,
        content: &content,
        actor,
    };
    let notes = match core.hooks().review_result(api, turn_id, call, &seen).await {
        Ok(notes) => notes,
        Err(e) => {
            let error = waymark_protocol::ErrorInfo::new(
                "result_review_failed",
                format!(
                    "the review of `{}`'s result failed, so it has no notes: {e}",
                    crate::display::escape_line(&call.name)
                ),
            );
            core.transient(EventKind::SessionError { error });
            return content;
        }
    };
    if notes.is_empty() {
        return content;
    }
    let notes = core
        .journal
        .store
        .redactor()
        .redact(&notes.join("\n\n"))
        .into_owned();
    content.push_str("\n\n");
    content.push_str(NOTES_HEADING);
    content.push('\n');
    content.push_str(&waymark_protocol::display::cut_at(notes, MAX_NOTES));
    content
}

/// What a run with nobody to answer its calls holds them to.
pub(crate) struct Unattended<'a> {
    /// What a call the user would be asked about is refused with.
    pub(crate) when_asked: &'a str,
    /// The tools the run was offered; a call to any other is refused.
    pub(crate) offered: &'a (dyn Fn(&dyn crate::tools::Tool) -> bool + Send + Sync),
    /// The call the run works for, named on its calls' events.
    pub(crate) parent: Option<&'a crate::extension::agent::ParentCall>,
    /// Whether a call the guards would ask about is put to the user (the run waits for the
    /// answer) instead of refused with `when_asked`.
    pub(crate) asks_user: bool,
}

/// One call nobody can answer (the goal's reviewer's, a subagent's): logged, reviewed by
/// the policies, decided by the guard chain, run, its result logged. A call a policy or a
/// guard would ask about is refused with `when_asked`, and one to a tool the run was not
/// offered is refused.
pub(crate) async fn run_unattended(
    core: &SessionCore,
    api: &SessionApi,
    actor: CallActor,
    turn_id: i64,
    call: &ToolCallRecord,
    ctx: &ToolContext,
    held: Unattended<'_>,
) -> Result<(ToolStatus, String)> {
    let Unattended {
        when_asked,
        offered,
        parent,
        asks_user,
    } = held;
    // What a file tool that succeeded changed, for its result's event.
    let mut changes = Vec::new();
    let sid = api.id().to_string();
    api.write(|tx| {
        let mut event = super::record::call_event(turn_id, call, actor);
        if let (EventKind::ToolCall { subagent, .. }, Some(p)) = (&mut event, parent) {
            *subagent = Some(Box::new(waymark_protocol::SubagentCall {
                parent_call_id: p.call_id.clone(),
                agent: p.agent.clone(),
            }));
        }
        Ok(tx.emit(&sid, event)?)
    })?;
    // The policies see the reviewer's calls too; nobody can answer them, and they are never
    // stored, so a question or a rewrite refuses the call.
    let refused =
        super::policy::review_unattended(core, api, turn_id, call, actor, when_asked, &ctx.cancel)
            .await?;
    let (status, content) = if let Some(msg) = refused {
        (ToolStatus::Denied, msg)
    } else {
        let mut decided = decide(core, api, actor, turn_id, call, None, ctx).await?;
        // A subagent's question goes to the user like its parent's; the run waits for the
        // answer, and the call is decided again with it, as the agent's is.
        if asks_user
            && actor.under_session_policy()
            && let Decided::Found {
                decision: GuardDecision::Ask(asked),
                tool,
                ..
            } = &decided
            && for_actor(tool, actor)
            && offered(tool.tool().as_ref())
        {
            let asked = asked.clone();
            decided = match super::child_ask::ask_and_wait(
                core,
                turn_id,
                (call, call_fingerprint(call)),
                asked,
                &ctx.cancel,
            )
            .await?
            {
                Some(answer) => {
                    let given = Some((QuestionnaireKind::Permission, &answer));
                    match decide(core, api, actor, turn_id, call, given, ctx).await? {
                        Decided::Found {
                            tool,
                            decision,
                            ctx,
                            changes,
                        } => Decided::Found {
                            decision: super::policy::narrowed(
                                decision, None, given, call, &changes, &tool,
                            ),
                            tool,
                            ctx,
                            changes,
                        },
                        other => other,
                    }
                }
                None => Decided::UnknownTool(
                    "Not run: the user stopped the work before answering its permission question."
                        .into(),
                ),
            };
        }
        match decided {
            Decided::UnknownTool(msg) => (ToolStatus::Error, msg),
            Decided::Found {
                tool,
                decision,
                ctx,
                changes: to_change,
            } => match decision {
                GuardDecision::Deny(msg) => (ToolStatus::Denied, msg),
                // A tool that acts on the session itself (plan mode, the goal, a question
                // or a form for the user) is the session's agent's alone.
                GuardDecision::Allow if !for_actor(&tool, actor) => (
                    ToolStatus::Denied,
                    format!(
                        "`{}` acts on the session itself (its mode, its goal or the user's attention); only the session's agent may call it.",
                        crate::display::escape_line(&call.name)
                    ),
                ),
                GuardDecision::Ask(_) => (ToolStatus::Denied, when_asked.to_string()),
                // Judged by the guards first, so their reasons stay what the model is told.
                GuardDecision::Allow if !offered(tool.tool().as_ref()) => (
                    ToolStatus::Denied,
                    format!(
                        "`{}` is not offered to this run; use the tools it was given.",
                        crate::display::escape_line(&call.name)
                    ),
                ),
                GuardDecision::Allow => {
                    // A subagent's write is the agent's work: a checkpoint comes first, as
                    // for any of the turn's (the verifier writes nothing of the workspace).
                    if actor.under_session_policy() {
                        let writes = tool.effects().writes && ctx.sandbox.is_none();
                        core.hooks().before_run(api, turn_id, call, writes).await?;
                    }
                    match execute(core, api, &tool, &ctx, call).await {
                        Executed::Done {
                            status, content, ..
                        } => {
                            if status == ToolStatus::Ok {
                                changes = to_change;
                            }
                            // A subagent's results are reviewed as its parent's are.
                            let content = if actor.under_session_policy() {
                                reviewed(core, api, (turn_id, actor), call, status, content).await
                            } else {
                                content
                            };
                            (status, content)
                        }
                        Executed::Fatal(m) => (ToolStatus::Error, m),
                        Executed::Abandoned => (ToolStatus::Error, abandoned(&call.name)),
                    }
                }
            },
        }
    };
    api.write(|tx| {
        Ok(tx.emit(
            &sid,
            EventKind::ToolResult {
                turn_id,
                call_id: call.id.clone(),
                name: call.name.clone(),
                status,
                content: content.clone(),
                actor,
                changes,
                images: Vec::new(),
            },
        )?)
    })?;
    // Every extension hears of a subagent's result, as of the turn's own (a goal keeps
    // count of test files written).
    if actor.under_session_policy() {
        core.hooks().after_tool(api, turn_id, call, status)?;
    }
    Ok((status, content))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, command: &str) -> ToolCallRecord {
        ToolCallRecord {
            id: id.into(),
            wire_id: None,
            name: "bash".into(),
            arguments: json!({ "command": command }),
        }
    }

    fn asked(question: waymark_protocol::Question) -> store::QuestionnaireRow {
        store::QuestionnaireRow {
            id: "q".into(),
            session_id: "s".into(),
            turn_id: Some(1),
            question,
            status: waymark_protocol::QuestionnaireStatus::Answered,
            answer: Some(waymark_protocol::Answer::AllowOnce),
        }
    }

    fn permission(c: &ToolCallRecord) -> waymark_protocol::Question {
        waymark_protocol::Question::Permission(waymark_protocol::PermissionQuestion {
            tool: c.name.clone(),
            shell: true,
            scope: None,
            arguments: c.arguments.clone(),
            summary: String::new(),
            command: None,
            files: Vec::new(),
            git: false,
            grants: Default::default(),
            call_id: c.id.clone(),
            call_sha256: call_fingerprint(c),
        })
    }

    #[test]
    fn an_answer_binds_to_the_call_id_and_its_exact_arguments() {
        let asked_call = call("tc_1_0_0", "ls");
        let q = asked(permission(&asked_call));
        assert!(asked_about(&q, &asked_call));
        // Same id, other arguments: not this answer.
        assert!(!asked_about(&q, &call("tc_1_0_0", "rm -rf ~")));
        // Same arguments, another call: not this answer either.
        assert!(!asked_about(&q, &call("tc_1_1_0", "ls")));
        // Only permission questions answer calls.
        let other = asked(waymark_protocol::Question::PlanEntry(
            waymark_protocol::PlanEntryQuestion { reason: None },
        ));
        assert!(!asked_about(&other, &asked_call));
    }

    #[test]
    fn provider_ids_shaped_like_ours_or_odd_are_not_used_on_the_wire() {
        assert!(usable_wire_id("call_abc-1"));
        assert!(!usable_wire_id("tc_9_0_0"));
        assert!(!usable_wire_id("tv_9_0_0"));
        assert!(!usable_wire_id("ta-mxc6_9_0_0"));
        assert!(usable_wire_id("tab_1"));
        assert!(!usable_wire_id(""));
        assert!(!usable_wire_id("a b"));
        assert!(!usable_wire_id(&"x".repeat(65)));
    }
}

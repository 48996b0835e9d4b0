//! The completion check (G-18, G-19): a read-only reviewer on the same model route. The
//! subagent may read, list, search and run sandboxed commands — through the same guard
//! chain as the agent, under a read-only policy and the budget guard, every call logged
//! with actor `verifier`; the evaluator is one call without tools. Both must end with a
//! `VERDICT:` line.

use super::prompts::verifier_brief;
use super::rules::VERIFIER_TOOLS;
use super::settlement::{Mode, Verdict, parse_verdict};
use crate::db::GoalRow;
use crate::db::GoalWrites;
use tokio_util::sync::CancellationToken;
use waymark_extension::SessionApi;
use waymark_extension::error::{Error, Result};
use waymark_protocol::{CallActor, ToolStatus};
use waymark_provider::{CallPurpose, ModelMessage, ModelRequest, StreamEvent, ToolSpec};
use waymark_store::HistoryItem;
use waymark_tools::{ToolContext, truncate_head};

/// Model calls the subagent may make before it must answer.
const MAX_STEPS: usize = 8;

/// A short account of recent work on the goal, for the reviewer.
fn evidence(api: &SessionApi) -> String {
    api.with_history(recent_work)
        .unwrap_or_else(|e| format!("(the session history could not be read: {e})"))
}

fn recent_work(items: &[(Option<i64>, HistoryItem)]) -> String {
    let mut lines = Vec::new();
    for (_, item) in items.iter().rev().take(40) {
        match item {
            HistoryItem::Assistant {
                text, tool_calls, ..
            } => {
                for c in tool_calls {
                    lines.push(format!(
                        "called {} {}",
                        c.name,
                        truncate_head(&c.arguments.to_string(), 160, "")
                    ));
                }
                if !text.trim().is_empty() {
                    lines.push(format!("said: {}", truncate_head(text.trim(), 300, "")));
                }
            }
            HistoryItem::ToolResult {
                name,
                status,
                content,
                ..
            } => {
                lines.push(format!(
                    "{name} → {}: {}",
                    status.as_str(),
                    truncate_head(content.lines().next().unwrap_or(""), 160, "")
                ));
            }
            HistoryItem::User { .. } => {}
        }
    }
    lines.reverse();
    lines.join("\n")
}

/// The model a check runs on: `goal.evaluator_model` for the `evaluator` check when it is
/// set, else the session's (G-43). A spec that cannot be used is said, so the goal pauses as
/// the reviewer could not check it.
fn evaluator_route(api: &SessionApi, mode: Mode) -> Result<waymark_provider::Route> {
    match api.config().goal.evaluator_model.as_deref().map(str::trim) {
        Some(spec) if mode == Mode::Evaluator && !spec.is_empty() => {
            api.route_for(spec).map_err(|e| {
                Error::Refused(format!(
                    "the evaluator model `{spec}` (goal.evaluator_model) cannot be used: {e}"
                ))
            })
        }
        _ => Ok(api.route()),
    }
}

/// Keeps the reviewer's verdict on each plan step it named (steps it did not name keep their
/// last verdict): the Goal tab's "steps met n/m". Returns whether it found a step not met.
fn record_steps(api: &SessionApi, g: &GoalRow, reply: &str) -> Result<bool> {
    if g.steps.is_empty() {
        return Ok(false);
    }
    // A step with a check of its own is judged by it, not by the reviewer's reading.
    let verdicts: Vec<Option<bool>> = super::parse_steps(reply, g.steps.len())
        .into_iter()
        .zip(&g.steps)
        .map(|(v, s)| if s.check.is_some() { None } else { v })
        .collect();
    let unmet = verdicts.contains(&Some(false));
    api.write(|tx| {
        let Some(now) = crate::db::current_goal(tx.conn(), api.id())?
            .filter(|now| now.id == g.id && now.steps.len() == verdicts.len())
        else {
            return Ok(());
        };
        let steps: Vec<_> = now
            .steps
            .into_iter()
            .zip(&verdicts)
            .map(|(mut s, v)| {
                if v.is_some() {
                    s.met = *v;
                }
                s
            })
            .collect();
        tx.set_goal_steps(&g.id, &steps)
    })?;
    Ok(unmet)
}

/// How a verification ended besides a verdict.
pub(crate) enum Checked {
    Verdict(Verdict),
    /// Stop came while the verifier ran.
    Stopped,
    /// The day's spending cap was reached before the verifier's next call (G-33).
    Capped(waymark_protocol::ErrorInfo),
}

/// The most of the test files' diff the reviewer is given.
const TEST_DIFF_CHARS: usize = 20_000;

/// Runs the check through the turn engine's call path — the same guard chain as the
/// agent's calls, under the verifier's read-only policy and the goal's budget guard — and
/// logs every call and result with actor `verifier`. Its tokens and time are added to the
/// goal as they are spent; Stop ends it at once.
pub(crate) async fn verify(
    api: &SessionApi,
    turn_id: i64,
    g: &GoalRow,
    claim: &str,
    mode: Mode,
    cancel: &CancellationToken,
) -> Result<Checked> {
    api.sandbox().probe_async().await;
    let shell = api
        .sandbox()
        .spec(
            Vec::new(),
            waymark_config::ShellNetwork::Deny,
            &api.config().sandbox,
        )
        .is_some();
    let mut tools: Vec<ToolSpec> = Vec::new();
    if mode == Mode::Subagent {
        for t in api
            .tools()
            .iter()
            .filter(|t| VERIFIER_TOOLS.contains(&t.name()) || (t.effects().processes && shell))
        {
            tools.push(ToolSpec {
                name: t.name().into(),
                description: t.description().into(),
                parameters: t.schema(),
            });
        }
    }
    let ctx = ToolContext {
        workspace: api.workspace().to_path_buf(),
        session_dir: api.session_dir().to_path_buf(),
        artifacts: api.artifacts().to_path_buf(),
        cancel: cancel.clone(),
        output_limit: api.config().turn.tool_output_limit as usize,
        timeouts: waymark_tools::Timeouts::from_config(&api.config().turn),
        turn_id,
        call_id: String::new(),
        sandbox: None,
        protected: Default::default(),
        live: None,
        redactor: None,
        env: api.tool_env(),
    };
    // The test files' diff since the goal started (G-51): a weakened test is not progress.
    let diff = super::baseline::test_diff(api, &g.id, TEST_DIFF_CHARS)?;
    let mut messages = vec![ModelMessage::User {
        text: super::prompts::with_test_diff(verifier_brief(g, &evidence(api), claim), &diff),
    }];
    let mut clock = api.now_ms();
    // Tokens and time spent since the last call, added to the goal as they accrue.
    let account = |tokens: u64, clock: &mut i64| -> Result<()> {
        let now = api.now_ms();
        let ms = (now - *clock).max(0) as u64;
        *clock = now;
        api.write(|tx| tx.add_goal_usage(&g.id, tokens, 0, ms))
    };
    // What a call cost: charged to the turn it checks (and its day), and to the goal (G-31),
    // by the model it went to.
    let charge = |route: &waymark_provider::Route,
                  usage: &waymark_protocol::Usage,
                  hold: Option<waymark_store::spend::Hold>|
     -> Result<()> {
        let charge = api.charge_for(route, usage, hold);
        let spend = waymark_protocol::cost::Spend {
            micros: charge.micros.unwrap_or(0),
            unpriced_calls: u64::from(charge.micros.is_none()),
        };
        api.write(|tx| {
            tx.charge(Some(turn_id), &charge)?;
            tx.add_goal_cost(&g.id, spend)
        })
    };
    let steps = if mode == Mode::Subagent { MAX_STEPS } else { 1 };
    for step in 0..steps {
        if cancel.is_cancelled() {
            account(0, &mut clock)?;
            return Ok(Checked::Stopped);
        }
        let last = step + 1 == steps;
        let mut request = ModelRequest {
            system: "You review whether a coding goal is achieved. You cannot change anything."
                .into(),
            messages: messages.clone(),
            tools: if last { Vec::new() } else { tools.clone() },
            max_output_tokens: 4096,
            purpose: CallPurpose::Verifier,
        };
        // The spending limits hold the reviewer's calls too (G-33): the day's cap reached, or
        // the goal's budget unable to pay for the call, limits the goal; an unpriced model
        // under a limit is an error.
        let route = match evaluator_route(api, mode) {
            Ok(r) => r,
            Err(why) => {
                tracing::warn!("{why}");
                account(0, &mut clock)?;
                return Ok(Checked::Verdict(Verdict::Error(why.to_string())));
            }
        };
        let hold = match api.gate_call(Some(turn_id), &route, &mut request)? {
            waymark_extension::Gate::Refused(refused) => {
                account(0, &mut clock)?;
                return Ok(
                    if matches!(refused.code.as_str(), "spend_cap" | "cost_budget") {
                        Checked::Capped(refused)
                    } else {
                        Checked::Verdict(Verdict::Error(refused.message))
                    },
                );
            }
            waymark_extension::Gate::Go(hold) => hold,
        };
        // How far the reply has come: a call that went out and failed while answering, or
        // was stopped, is billed for what had streamed or been reported.
        let progress = std::sync::Mutex::new(waymark_provider::Progress::default());
        let sink = |ev: StreamEvent| {
            if let StreamEvent::Progress(p) = ev {
                *progress.lock().unwrap_or_else(|p| p.into_inner()) = p;
            }
        };
        let unanswered = || {
            progress.lock().unwrap_or_else(|p| p.into_inner()).charge(
                request.estimated_tokens(),
                u64::from(request.max_output_tokens),
            )
        };
        let reply = tokio::select! {
            r = tracing::Instrument::instrument(
                route.provider.call(&request, &sink),
                tracing::info_span!("model_call", step, purpose = "verifier"),
            ) => r,
            _ = cancel.cancelled() => {
                let usage = unanswered();
                account(usage.total(), &mut clock)?;
                charge(&route, &usage, hold)?;
                return Ok(Checked::Stopped);
            }
        };
        let mut reply = match reply {
            Ok(r) => r,
            Err(e) => {
                if e.streamed {
                    let usage = unanswered();
                    account(usage.total(), &mut clock)?;
                    charge(&route, &usage, hold)?;
                } else {
                    api.write(|tx| Ok(hold.map(|h| tx.release(h)).transpose()?))?;
                    account(0, &mut clock)?;
                }
                return Ok(Checked::Verdict(Verdict::Error(format!(
                    "the verifier's model call failed: {e}"
                ))));
            }
        };
        account(reply.usage.total(), &mut clock)?;
        charge(&route, &reply.usage, hold)?;
        if reply.tool_calls.is_empty() {
            let verdict = parse_verdict(&reply.text);
            if matches!(verdict, Verdict::Error(_)) {
                return Ok(Checked::Verdict(verdict));
            }
            let unmet = record_steps(api, g, &reply.text)?;
            // A pass that leaves a step unmet contradicts itself: it is no pass.
            return Ok(Checked::Verdict(if unmet && verdict == Verdict::Pass {
                Verdict::Partial
            } else {
                verdict
            }));
        }
        api.identify_calls(
            CallActor::Verifier,
            turn_id,
            step as u32,
            &mut reply.tool_calls,
        )?;
        messages.push(ModelMessage::Assistant {
            text: reply.text.clone(),
            reasoning: None,
            tool_calls: reply.tool_calls.clone(),
        });
        for call in &reply.tool_calls {
            let (status, content) = api
                .run_unattended(
                    CallActor::Verifier,
                    turn_id,
                    call,
                    &ctx,
                    "the reviewer cannot ask the user; use the read-only tools",
                )
                .await?;
            messages.push(ModelMessage::ToolResult {
                call_id: call.wire().to_string(),
                name: call.name.clone(),
                content,
                is_error: status != ToolStatus::Ok,
                images: Vec::new(),
            });
        }
        account(0, &mut clock)?;
    }
    Ok(Checked::Verdict(Verdict::Error(
        "the verifier did not reach a verdict".into(),
    )))
}

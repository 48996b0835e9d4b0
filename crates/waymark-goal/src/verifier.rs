//! The completion check (G-18, G-19): a read-only reviewer on the same model route, run on
//! the engine's agent loop. The subagent may read, list, search and run sandboxed commands —
//! through the same guard chain as the agent, under a read-only policy and the budget
//! guard, every call logged with actor `verifier`; the evaluator is one call without tools.
//! Both must end with a `VERDICT:` line.

use super::prompts::verifier_brief;
use super::rules::VERIFIER_TOOLS;
use super::settlement::{Mode, Verdict, parse_verdict};
use crate::db::GoalRow;
use crate::db::GoalWrites;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use waymark_extension::SessionApi;
use waymark_extension::agent::{AgentEnd, AgentRole, AgentSpec, Meter, ToolFilter};
use waymark_extension::error::{Error, Result};
use waymark_provider::{CallPurpose, ModelMessage};
use waymark_store::HistoryItem;
use waymark_tools::{Tool, truncate_head};

/// Model calls the subagent may make before it must answer.
const MAX_STEPS: u32 = 8;

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
                Error::refused(format!(
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

/// Runs the check on the engine's agent loop (`SessionApi::run_agent`) as the verifier: its
/// calls go through the same policies and guard chain as the agent's, under the verifier's
/// read-only policy and the goal's budget guard, and are logged with actor `verifier`. Its
/// tokens, time and cost are added to the goal as they are spent; Stop ends it at once.
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
    // The evaluator is one call without tools; the subagent may read, search and run the
    // sandboxed shell where there is one.
    let subagent = mode == Mode::Subagent;
    let tools: ToolFilter = Arc::new(move |t: &dyn Tool| {
        subagent && (VERIFIER_TOOLS.contains(&t.name()) || (t.effects().processes && shell))
    });
    // The test files' diff since the goal started (G-51): a weakened test is not progress.
    let diff = super::baseline::test_diff(api, &g.id, TEST_DIFF_CHARS)?;
    let brief = vec![ModelMessage::user(super::prompts::with_test_diff(
        verifier_brief(g, &evidence(api), claim),
        &diff,
    ))];
    let route = match evaluator_route(api, mode) {
        Ok(r) => r,
        Err(_) if cancel.is_cancelled() => return Ok(Checked::Stopped),
        Err(why) => {
            tracing::warn!("{why}");
            return Ok(Checked::Verdict(Verdict::Error(why.to_string())));
        }
    };
    let end = api
        .run_agent(AgentSpec {
            role: AgentRole::Verifier,
            turn_id,
            system: "You review whether a coding goal is achieved. You cannot change anything."
                .into(),
            brief,
            tools,
            max_steps: if subagent { MAX_STEPS } else { 1 },
            answer_last: true,
            route,
            purpose: CallPurpose::Verifier,
            max_output_tokens: 4096,
            cancel: cancel.clone(),
            when_asked: "the reviewer cannot ask the user; use the read-only tools".into(),
            asks_user: false,
            meter: Some(goal_meter(api, &g.id)),
            parent: None,
        })
        .await?;
    Ok(match end {
        AgentEnd::Answered(text) => {
            let verdict = parse_verdict(&text);
            if matches!(verdict, Verdict::Error(_)) {
                return Ok(Checked::Verdict(verdict));
            }
            let unmet = record_steps(api, g, &text)?;
            // A pass that leaves a step unmet contradicts itself: it is no pass.
            Checked::Verdict(if unmet && verdict == Verdict::Pass {
                Verdict::Partial
            } else {
                verdict
            })
        }
        AgentEnd::Stopped => Checked::Stopped,
        // The spending limits hold the reviewer's calls too (G-33): the day's cap reached, or
        // the goal's budget unable to pay for the call, limits the goal; an unpriced model
        // under a limit is an error.
        AgentEnd::Refused(refused)
            if matches!(refused.code.as_str(), "spend_cap" | "cost_budget") =>
        {
            Checked::Capped(refused)
        }
        AgentEnd::Refused(refused) => Checked::Verdict(Verdict::Error(refused.message)),
        AgentEnd::Failed(e) => Checked::Verdict(Verdict::Error(format!(
            "the verifier's model call failed: {e}"
        ))),
        AgentEnd::StepCapped => Checked::Verdict(Verdict::Error(
            "the verifier did not reach a verdict".into(),
        )),
    })
}

/// Adds what the reviewer spends to its goal as it goes: the tokens of each call and the
/// time since the last report, and each call's cost by the model it went to (G-31).
fn goal_meter(api: &SessionApi, goal_id: &str) -> Meter {
    let goal_id = goal_id.to_string();
    let clock = api.clock().clone();
    let since = Mutex::new(clock.now_ms());
    Box::new(move |tx, tokens, charge| {
        let now = clock.now_ms();
        let ms = {
            let mut since = since.lock().unwrap_or_else(|p| p.into_inner());
            let ms = (now - *since).max(0) as u64;
            *since = now;
            ms
        };
        tx.add_goal_usage(&goal_id, tokens, 0, ms)?;
        if let Some(charge) = charge {
            tx.add_goal_cost(
                &goal_id,
                waymark_protocol::cost::Spend {
                    micros: charge.micros.unwrap_or(0),
                    unpriced_calls: u64::from(charge.micros.is_none()),
                },
            )?;
        }
        Ok(())
    })
}

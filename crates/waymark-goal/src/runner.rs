//! Where goals meet the runtime: marking goal turns, adding usage in the turn's
//! transaction, running settlement after the turn, re-checking a continuation before it is
//! dequeued (G-23), keeping an active goal moving, and pausing goals when the app closes.

use super::prompts::{self, Nudge};
use super::settlement::{Limits, Mode, Pipeline, Proposal, TurnFacts, Verdict};
use super::{Dimension, exhausted, report};
use crate::db::GoalTurnWrites;
use crate::db::GoalWrites;
use crate::db::{GoalRow, TurnGoal, current_goal, turn_goal};
use crate::lifecycle::{
    CONTINUATION_KEY, SUMMARY_KEY, auto_resume_at, cancel_auto_resume, continue_goal, enqueue,
    transition,
};
use crate::lifecycle::{is_summary, push_snapshot};
use crate::turn_goal::{remember_turn_goal, turn_goal_of};
use std::time::Duration;
use waymark_config::Verification;
use waymark_extension::Dequeue;
use waymark_extension::SessionApi;
use waymark_extension::error::Result;
use waymark_protocol::GoalUpdateKind;
use waymark_protocol::{GoalActor, GoalReason, GoalStatus, MessageSource, RouteKind};
use waymark_store::{self as store, HistoryItem, MessageRow, Tx};

/// At the start of a turn: remember which goal (and revision) it works for.
pub(crate) fn on_turn_start(
    tx: &mut Tx<'_>,
    api: &SessionApi,
    turn_id: i64,
    m: &MessageRow,
) -> Result<()> {
    if !api.config().beta.thread_goal {
        return Ok(());
    }
    let mut tg = TurnGoal::default();
    if let Some(mut g) = current_goal(tx.conn(), api.id())? {
        // A turn that starts while the goal waits is the user's message: it wakes the goal,
        // and that message is its next turn (G-47).
        if g.wait.is_some() && g.status == GoalStatus::Active {
            let now = tx.now();
            super::wait::wake(tx, &mut g, now, GoalActor::User, "your message", false)?;
        }
        let summary = is_summary(m);
        if g.status == GoalStatus::Active || summary {
            tx.set_turn_goal(turn_id, &g.id, g.revision, summary)?;
            tg = TurnGoal {
                goal_id: Some(g.id),
                revision: Some(g.revision),
                proposal: None,
                summary,
            };
        }
    }
    // Remembered even when rolled back: the turn id then never runs, so it is never asked.
    remember_turn_goal(api, turn_id, tg);
    Ok(())
}

/// Stage 1 of settlement, in the turn's own transaction: the turn's tokens, one main turn and
/// its active time are added to the goal it worked for.
pub(crate) fn add_turn_usage(
    tx: &mut Tx<'_>,
    turn: &store::TurnRow,
    recovered: bool,
) -> Result<()> {
    let tg = turn_goal(tx.conn(), turn.id)?;
    let Some(goal_id) = tg.goal_id else {
        return Ok(());
    };
    // A turn found interrupted after a crash gets no time: the app was not running (G-6).
    let active_ms = if recovered {
        0
    } else {
        turn.active_ms(tx.now())
    };
    tx.add_goal_usage(&goal_id, turn.usage.total(), 1, active_ms)?;
    tx.add_goal_cost(&goal_id, turn.spend)
}

/// Whether a goal turn must make no further model call: its budget is used up, or it is
/// the summary turn, which is exactly one call. A spent budget still allows the model its
/// grace (G-22): once the budget guard has refused a call with "reply now with a short
/// summary", the model is called again to answer, until `grace_steps` calls have been
/// refused; a budget found spent with no call refused yet (the time ran out during a
/// command) gets no further call, and the summary turn follows.
pub(crate) fn budget_spent(api: &SessionApi, turn_id: i64) -> Result<bool> {
    let tg = turn_goal_of(api, turn_id)?;
    if tg.goal_id.is_none() {
        return Ok(false);
    }
    if tg.summary {
        return Ok(true);
    }
    api.read(|c| {
        // The turn's own goal: one that replaced it meanwhile (cleared, the next queued one
        // started) is not this turn's to spend.
        let (Some(g), Some(t)) = (
            current_goal(c, api.id())?.filter(|g| tg.goal_id.as_deref() == Some(g.id.as_str())),
            store::turns::get(c, turn_id)?,
        ) else {
            return Ok(false);
        };
        let elapsed = t.active_ms(api.now_ms());
        let extra = super::Extra {
            tokens: t.usage.total(),
            ms: elapsed,
            cost: t.spend,
            ..Default::default()
        };
        if exhausted(&report(&g, extra)).is_none() {
            return Ok(false);
        }
        let grace = g.counters.grace_used;
        Ok(!(grace > 0 && grace <= api.config().goal.budget.grace_steps))
    })
}

/// What the next model call of goal turn `turn_id` may still spend under the goal's cost
/// budget (G-32, G-33), or `None` when it works for no goal with one, or is the goal's
/// summary turn (the one call allowed past a spent budget, G-22). The calls of a turn still
/// open are not on the goal yet, so they count here; a closed turn's (the reviewer checks
/// it) already are.
pub(crate) fn cost_left(api: &SessionApi, turn_id: Option<i64>) -> Result<Option<u64>> {
    let Some(turn_id) = turn_id else {
        return Ok(None);
    };
    let tg = turn_goal_of(api, turn_id)?;
    let Some(goal_id) = tg.goal_id.filter(|_| !tg.summary) else {
        return Ok(None);
    };
    api.read(|c| {
        let (Some(g), Some(t)) = (current_goal(c, api.id())?, store::turns::get(c, turn_id)?)
        else {
            return Ok(None);
        };
        let Some(budget) = g.cost_budget.filter(|_| g.id == goal_id) else {
            return Ok(None);
        };
        let open = if t.status == store::TurnStatus::Finished {
            0
        } else {
            t.spend.micros
        };
        Ok(Some(
            budget.saturating_sub(g.cost.micros.saturating_add(open)),
        ))
    })
}

/// Whether tools are offered in this turn (not in the summary turn).
pub(crate) fn tools_offered(api: &SessionApi, turn_id: i64) -> Result<bool> {
    Ok(!turn_goal_of(api, turn_id)?.summary)
}

/// The verification mode (G-16): the setting, else by the route of the model.
/// A goal that implements a plan has its steps checked unless verification is turned off
/// by name (PM-27): with the route's default of none, the evaluator checks them.
pub(crate) fn mode(api: &SessionApi, g: &GoalRow) -> Mode {
    match api.config().goal.verification {
        Some(Verification::None) => Mode::None,
        Some(Verification::Subagent) => Mode::Subagent,
        Some(Verification::Evaluator) => Mode::Evaluator,
        None => match api.provider().route() {
            RouteKind::OwnKey if g.steps.is_empty() => Mode::None,
            RouteKind::OwnKey => Mode::Evaluator,
            RouteKind::Managed => Mode::Subagent,
        },
    }
}

fn facts(api: &SessionApi, turn_id: i64, revision_at_start: u32) -> Result<Option<TurnFacts>> {
    // The turn's items are the newest of the conversation the session already holds.
    let (final_reply, used_tools, ended_with_reply) = api.with_history(|items| {
        let mut final_reply: Option<&str> = None;
        let mut used_tools = false;
        // The newest step: a reply with no tool call ends the turn by the model's choice.
        let mut ended_with_reply = None;
        for (_, item) in items
            .iter()
            .rev()
            .skip_while(|(t, _)| *t != Some(turn_id))
            .take_while(|(t, _)| *t == Some(turn_id))
        {
            if let HistoryItem::Assistant {
                text, tool_calls, ..
            } = item
            {
                final_reply.get_or_insert(text);
                ended_with_reply.get_or_insert(tool_calls.is_empty() && !text.trim().is_empty());
                used_tools |= !tool_calls.is_empty();
            }
        }
        (
            final_reply.unwrap_or_default().to_string(),
            used_tools,
            ended_with_reply.unwrap_or(false),
        )
    })?;
    api.read(|c| {
        let Some(t) = store::turns::get(c, turn_id)? else {
            return Ok(None);
        };
        let Some(reason) = t.reason else {
            return Ok(None);
        };
        let (error_code, resets_in_ms) = store::turns::error(c, turn_id)?.unzip();
        let source = store::messages::get(c, t.message_id)?.map(|m| m.source);
        let tg = turn_goal(c, turn_id)?;
        Ok(Some(TurnFacts {
            reason,
            error_code,
            resets_in_ms: resets_in_ms.flatten(),
            now_ms: api.now_ms(),
            final_reply,
            used_tools,
            ended_with_reply,
            user_started: source == Some(MessageSource::User),
            proposal: tg
                .proposal
                .as_deref()
                .and_then(|p| serde_json::from_str::<Proposal>(p).ok()),
            revision_at_start,
            pending_questionnaire: store::questionnaires::pending(c, api.id())?.is_some(),
        }))
    })
}

/// Settles the goal after a finished turn (stages 2–10; stage 1 ran in the turn's
/// transaction). Stop (`cancel`) during verification pauses the goal as the user's stop.
pub(crate) async fn settle(
    api: &SessionApi,
    turn_id: i64,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<()> {
    let tg = turn_goal_of(api, turn_id)?;
    let Some(goal_id) = tg.goal_id else {
        return Ok(());
    };
    let Some(goal) = api
        .read(|c| current_goal(c, api.id()))?
        .filter(|g| g.id == goal_id)
    else {
        return Ok(());
    };
    if tg.summary || goal.status != GoalStatus::Active {
        // The summary turn only adds usage; a goal stopped during the turn stays stopped.
        push_snapshot(api);
        return Ok(());
    }
    // The turn began a wait (G-47): nothing to verify, no progress to count, no continuation,
    // unless its budget is spent, which ends the wait and settles as usual.
    let goal = if goal.wait.is_some() {
        if exhausted(&report(&goal, super::Extra::default())).is_none() {
            push_snapshot(api);
            return Ok(());
        }
        api.write(|tx| {
            tx.set_goal_wait(&goal.id, None)?;
            Ok(GoalRow {
                wait: None,
                wait_command: None,
                ..goal
            })
        })?
    } else {
        goal
    };
    let Some(facts) = facts(api, turn_id, tg.revision.unwrap_or(goal.revision))? else {
        return Ok(());
    };
    let limits = Limits {
        repeated_reply_limit: api.config().goal.breaker.repeated_reply_limit,
        repeated_not_met_limit: api.config().goal.verifier.repeated_not_met_limit,
        auto_resumes: api.config().goal.usage_limit.auto_resumes,
    };
    let mode = mode(api, &goal);
    let checks = api.read(|c| super::check_records::checks_of(c, &goal.id))?;
    let mut p = Pipeline::new(goal, facts);
    // A turn that did not wait ends a run of waits.
    p.counters.waits_in_row = 0;
    // Stages 1–6 decide whether stage 7 needs a verdict; the verifier runs outside any
    // transaction, adding its tokens and time to the goal as it goes.
    let mut probe = p.clone();
    let mut checks_passed;
    // What the claim's comparison with the baseline found, when the checks ran and passed.
    let mut findings: Option<Vec<String>> = None;
    let verdict: Option<Verdict> = {
        for f in [
            Pipeline::usage,
            Pipeline::staleness,
            Pipeline::anomaly,
            Pipeline::budget_wrap_up,
            Pipeline::dependencies,
            Pipeline::blocked,
        ] {
            if f(&mut probe) == super::settlement::Flow::Stop {
                break;
            }
        }
        let claimed = probe.outcome.is_none() && !probe.suspended && probe.claims_complete();
        // The goal's own checks come first (G-49): a failing one is the verdict, with no
        // reviewer call; when they all pass, the reviewer (if any) judges the rest.
        // Every N goal turns the checks run for the gauge alone (`goal.check_every_turns`).
        let every = u64::from(api.config().goal.check_every_turns.unwrap_or(0));
        if !claimed
            && !checks.is_empty()
            && probe.outcome.is_none()
            && every > 0
            && p.goal.turns_used > 0
            && p.goal.turns_used.is_multiple_of(every)
        {
            super::checks::run_all(api, &p.goal.id, &checks, cancel, false).await?;
            if cancel.is_cancelled() {
                api.write(|tx| stop_for_user(tx, api.id()))?;
                push_snapshot(api);
                return Ok(());
            }
        }
        let mut before = super::baseline::Hashes::new();
        let mut touched = std::collections::BTreeSet::new();
        let ran = if claimed && !checks.is_empty() {
            before = super::baseline::hashes_now(api, &checks).await?;
            let during = super::during::During::start(api.workspace(), before.keys());
            let runs = super::checks::run_all(api, &p.goal.id, &checks, cancel, false).await?;
            touched = during
                .map(super::during::During::touched)
                .unwrap_or_default();
            if cancel.is_cancelled() {
                api.write(|tx| stop_for_user(tx, api.id()))?;
                push_snapshot(api);
                return Ok(());
            }
            Some(runs)
        } else {
            None
        };
        let mut checks_verdict = ran.as_ref().map(|runs| {
            if let Some(r) = runs.iter().find(|r| r.unjudged()) {
                Verdict::Error(format!(
                    "the check `{}` {}",
                    r.command,
                    r.note.as_deref().unwrap_or("did not run")
                ))
            } else if runs.iter().all(super::checks::CheckRun::passed) {
                Verdict::Pass
            } else {
                Verdict::Fail {
                    gaps: super::checks::gaps(runs),
                }
            }
        });
        // Passing checks are compared with the goal's baseline (G-51): weakened ones do not
        // complete it.
        if let (Some(Verdict::Pass), Some(runs)) = (&checks_verdict, &ran) {
            let found = super::baseline::weakened(
                api,
                &p.goal.id,
                &checks,
                runs,
                std::mem::take(&mut before),
                std::mem::take(&mut touched),
            )
            .await?;
            if !found.is_empty() {
                checks_verdict = Some(Verdict::Weakened {
                    findings: found.clone(),
                });
            }
            findings = Some(found);
        }
        checks_passed = checks_verdict == Some(Verdict::Pass);
        if checks_verdict.is_some() && !checks_passed {
            checks_verdict
        } else if claimed && probe.wants_verdict(mode) {
            let claim = probe
                .proposal
                .as_ref()
                .map(|x| x.message.clone())
                .unwrap_or_default();
            let checked = tracing::Instrument::instrument(
                super::verifier::verify(api, turn_id, &p.goal, &claim, mode, cancel),
                tracing::info_span!("verifier", goal = %p.goal.id),
            )
            .await?;
            // The verifier's usage is in the store now: settle on the goal as it stands.
            if let Some(g) = api
                .read(|c| current_goal(c, api.id()))?
                .filter(|g| g.id == p.goal.id)
            {
                p.goal.tokens_used = g.tokens_used;
                p.goal.active_ms = g.active_ms;
                p.goal.cost = g.cost;
            }
            match checked {
                super::verifier::Checked::Verdict(v) => Some(v),
                super::verifier::Checked::Stopped => {
                    api.write(|tx| stop_for_user(tx, api.id()))?;
                    push_snapshot(api);
                    return Ok(());
                }
                // The day's cap stopped the reviewer: the goal settles as if the turn had
                // met the cap, `usage_limited(spend_cap)`, and resumes when it lifts (the
                // completion claim is checked again then).
                super::verifier::Checked::Capped(info) => {
                    let mut facts = p.facts.clone();
                    facts.reason = waymark_protocol::TurnEndReason::Error;
                    facts.error_code = Some(info.code);
                    facts.resets_in_ms = info.resets_in_ms;
                    p = Pipeline::new(p.goal.clone(), facts);
                    checks_passed = false;
                    None
                }
            }
        } else {
            checks_verdict
        }
    };
    // Checks give a verdict even where no reviewer is configured.
    let mode = if checks.is_empty() || mode != Mode::None {
        mode
    } else {
        Mode::Subagent
    };
    p.run(mode, verdict, limits);
    if checks_passed && p.outcome.is_some_and(|(r, _)| r == GoalReason::VerifierMet) {
        p.outcome = Some((GoalReason::ChecksPassed, GoalActor::Runtime));
    }
    // Stopped while the turn ended: whatever the limit, nothing resumes by itself.
    if cancel.is_cancelled()
        && let Some(l) = p.usage_limit.as_mut()
    {
        l.auto_resume = false;
    }
    api.write(|tx| {
        // The goal may have moved while the turn settled (paused by the user, stopped by the
        // app closing, replaced): its word stands.
        match current_goal(tx.conn(), api.id())? {
            Some(now) if now.id == p.goal.id && now.status == GoalStatus::Active => {}
            _ => return Ok(()),
        }
        if let Some(found) = &findings {
            super::check_records::set_findings(tx, &p.goal.id, found)?;
        }
        let mut g = super::settlement::commit(tx, &p)?;
        super::settlement::continuation(tx, &mut g, &p)?;
        if g.status == GoalStatus::Complete {
            super::checks::drop_layer(api, &g.id);
            super::commands::start_next_goal(tx, api)?;
        }
        Ok(())
    })?;
    push_snapshot(api);
    Ok(())
}

/// The final recheck of a goal continuation before it runs.
pub(crate) fn recheck(api: &SessionApi, m: &MessageRow) -> Result<Dequeue> {
    let Some(key) = m
        .idempotency_key
        .as_deref()
        .filter(|k| m.source == MessageSource::Goal && k.starts_with(CONTINUATION_KEY))
    else {
        return Ok(Dequeue::Run);
    };
    let mut parts = key[CONTINUATION_KEY.len()..].split(':');
    let (goal_id, revision) = (
        parts.next().unwrap_or(""),
        parts.next().and_then(|r| r.parse::<u32>().ok()),
    );
    api.write(|tx| {
        let Some(mut g) = current_goal(tx.conn(), api.id())? else {
            return Ok(Dequeue::Drop("the goal was cleared".into()));
        };
        if g.id != goal_id || Some(g.revision) != revision {
            return Ok(Dequeue::Drop(
                "the goal changed since this continuation was queued".into(),
            ));
        }
        if g.status != GoalStatus::Active {
            return Ok(Dequeue::Drop(format!("the goal is {}", g.status.as_str())));
        }
        // Queued before the agent began to wait: the wait decides when the goal goes on.
        if g.wait.is_some() {
            return Ok(Dequeue::Drop("the goal waits".into()));
        }
        if store::messages::queued_user_count(tx.conn(), api.id())? > 0 {
            return Ok(Dequeue::Drop("the user's message goes first".into()));
        }
        if let Some(d) = exhausted(&report(&g, super::Extra::default())) {
            transition(
                tx,
                &mut g,
                d.reason(),
                GoalActor::Runtime,
                GoalUpdateKind::Completion,
            )?;
            if !g.counters.summary_due {
                g.counters.summary_due = true;
                tx.set_goal_counters(&g.id, &g.counters)?;
                enqueue(
                    tx,
                    &g,
                    &prompts::continuation_summary(),
                    &format!("{SUMMARY_KEY}{}:{}", g.id, g.revision),
                )?;
            }
            return Ok(Dequeue::Drop(format!(
                "the {} budget is used up",
                dimension_name(d)
            )));
        }
        Ok(Dequeue::Run)
    })
}

fn dimension_name(d: Dimension) -> &'static str {
    match d {
        Dimension::Tokens => "token",
        Dimension::MainTurns => "turn",
        Dimension::ActiveSeconds => "time",
        Dimension::Cost => "cost",
    }
}

/// [`auto_resume_at`], while the settings still allow it: lowering
/// `goal.usage_limit.auto_resumes` also stops a resume already scheduled.
fn scheduled(api: &SessionApi, g: &GoalRow) -> Option<i64> {
    let cap = api.config().goal.usage_limit.auto_resumes;
    auto_resume_at(g).filter(|_| g.usage_limit.is_some_and(|l| l.auto_resumes_used < cap))
}

/// When the session should look at its goal again: the scheduled automatic resume.
pub(crate) fn wake_at(api: &SessionApi) -> Result<Option<i64>> {
    if !api.config().beta.thread_goal {
        return Ok(None);
    }
    api.read(|c| {
        Ok(current_goal(c, api.id())?
            .and_then(|g| scheduled(api, &g).or_else(|| super::wait::wake_at(api, &g))))
    })
}

/// Keeps an active goal moving when the session would otherwise go idle (after a suspended
/// settlement or a resume), and resumes a rate-limited goal whose limit has reset (actor
/// `system`). Returns whether a continuation was queued.
pub(crate) fn ensure_continuation(api: &SessionApi) -> Result<bool> {
    if !api.config().beta.thread_goal {
        return Ok(false);
    }
    // A waiting goal wakes (or gives up) by its own rules, and never continues while it waits.
    if super::wait::look(api)? {
        return Ok(true);
    }
    let now = api.now_ms();
    // Read first: going idle must not cost a write transaction when there is nothing to do.
    let due = |g: &GoalRow| {
        (g.status == GoalStatus::Active && g.wait.is_none())
            || scheduled(api, g).is_some_and(|at| now >= at)
    };
    if !api.read(|c| Ok(current_goal(c, api.id())?.is_some_and(|g| due(&g))))? {
        return Ok(false);
    }
    api.write(|tx| {
        let Some(mut g) = current_goal(tx.conn(), api.id())? else {
            return Ok(false);
        };
        if !due(&g) || store::messages::queued_count(tx.conn(), api.id())? > 0 {
            return Ok(false);
        }
        let mut nudge = Nudge::Plain;
        if g.status == GoalStatus::UsageLimited {
            super::check_transition(&g, GoalReason::Resumed, GoalActor::System, None)
                .map_err(|e| waymark_extension::error::Error::refused(e.to_string()))?;
            g.counters.limit_resumes = g.counters.limit_resumes.saturating_add(1);
            transition(
                tx,
                &mut g,
                GoalReason::Resumed,
                GoalActor::System,
                GoalUpdateKind::Lifecycle,
            )?;
            nudge = Nudge::Resumed;
        }
        continue_goal(tx, &mut g, nudge)?;
        Ok(true)
    })
}

/// Moves an active goal to `reason` outside settlement (no effect on a goal that is not
/// active).
fn end_active(
    tx: &mut Tx<'_>,
    session_id: &str,
    reason: GoalReason,
    actor: GoalActor,
    kind: GoalUpdateKind,
) -> Result<()> {
    if let Some(mut g) = current_goal(tx.conn(), session_id)?
        && g.status == GoalStatus::Active
    {
        transition(tx, &mut g, reason, actor, kind)?;
    }
    Ok(())
}

/// The process holding the session stops, or a new one opens it: an automatic resume the
/// goal was waiting for is called off. Only the process that scheduled it makes it; a later
/// start never resumes a goal by itself.
pub(crate) fn cancel_schedule(tx: &mut Tx<'_>, session_id: &str) -> Result<()> {
    if let Some(g) = current_goal(tx.conn(), session_id)? {
        cancel_auto_resume(tx, g, GoalActor::System)?;
    }
    Ok(())
}

/// The app closed (or crashed) while a goal was active: it stays paused until resumed (G-24).
pub(crate) fn pause_for_close(tx: &mut Tx<'_>, session_id: &str) -> Result<()> {
    // A waiting goal is not running: its wait survives the restart, its time counted so far.
    if let Some(mut g) = current_goal(tx.conn(), session_id)?
        && g.status == GoalStatus::Active
        && g.wait.is_some()
    {
        return super::wait::on_close(tx, &mut g);
    }
    end_active(
        tx,
        session_id,
        GoalReason::AppClosed,
        GoalActor::System,
        GoalUpdateKind::Lifecycle,
    )
}

/// The user stopped a turn that had to be dropped (it did not wind down): an active goal
/// is paused as settlement would have paused it (`user_requested`).
pub(crate) fn stop_for_user(tx: &mut Tx<'_>, session_id: &str) -> Result<()> {
    end_active(
        tx,
        session_id,
        GoalReason::UserRequested,
        GoalActor::User,
        GoalUpdateKind::Completion,
    )
}

/// The user rewound the session: an active goal pauses (`user_requested`, by the user) so
/// it does not carry on from a state it did not reach; what it spent stays spent.
pub(crate) fn pause_for_rewind(tx: &mut Tx<'_>, session_id: &str) -> Result<()> {
    end_active(
        tx,
        session_id,
        GoalReason::UserRequested,
        GoalActor::User,
        GoalUpdateKind::Lifecycle,
    )
}

/// A turn failed outside settlement (its task panicked): an active goal stops as
/// `turn_error` so it does not continue into the same failure.
pub(crate) fn stop_after_turn_error(tx: &mut Tx<'_>, session_id: &str) -> Result<()> {
    end_active(
        tx,
        session_id,
        GoalReason::TurnError,
        GoalActor::Runtime,
        GoalUpdateKind::Completion,
    )
}

/// Under a goal with a time budget: the time left, counting the running turn's time so
/// far (a finished turn's time is in the goal already).
pub(crate) fn time_left(api: &SessionApi, turn_id: i64) -> Result<Option<Duration>> {
    Ok(goal_of_turn(api, turn_id)?.and_then(|(g, t)| {
        let budget = g.time_budget_ms?;
        let used = g.active_ms.saturating_add(t.ms);
        Some(Duration::from_millis(budget.saturating_sub(used)))
    }))
}

/// Usage of the turn so far, for the budget guard.
pub(crate) fn turn_report(
    api: &SessionApi,
    turn_id: i64,
) -> Result<Option<(GoalRow, waymark_protocol::BudgetReport)>> {
    Ok(goal_of_turn(api, turn_id)?.map(|(g, t)| {
        let r = report(&g, t);
        (g, r)
    }))
}

/// The goal a turn works for and what the turn has spent so far (nothing once it has
/// finished: its usage is in the goal then; the verifier runs after it).
fn goal_of_turn(api: &SessionApi, turn_id: i64) -> Result<Option<(GoalRow, super::Extra)>> {
    let Some(goal_id) = turn_goal_of(api, turn_id)?.goal_id else {
        return Ok(None);
    };
    api.read(|c| {
        // Only the turn's own goal: a goal that took its place meanwhile is not charged.
        let (Some(g), Some(t)) = (
            current_goal(c, api.id())?.filter(|g| g.id == goal_id),
            store::turns::get(c, turn_id)?,
        ) else {
            return Ok(None);
        };
        let spent = if t.status == store::TurnStatus::Finished {
            super::Extra::default()
        } else {
            super::Extra {
                tokens: t.usage.total(),
                ms: t.active_ms(api.now_ms()),
                cost: t.spend,
                ..Default::default()
            }
        };
        Ok(Some((g, spent)))
    })
}

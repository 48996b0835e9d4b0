//! Running a session from the terminal: an op submitted, then the session followed to its
//! rest through the runtime's client seam (`waymark_runtime::client`), its events printed as
//! they come and the rest turned into the exit code; Ctrl-C and the signals stop the turn.
//! Also the ops sent to a held session, where nothing runs.

use crate::exit::{self, EXIT_USAGE_LIMIT, EXIT_WAITING};
use crate::limits::{
    GoalWaiting, LimitWait, goal_stopped_line, goal_waiting, left_until, limit_wait, now_ms,
};
use crate::render::{self, Printer};
use crate::term::{errln, outln};
use std::process::ExitCode;
use waymark_protocol::{Event, EventKind, Op};
use waymark_runtime::client::{Progress, Settled};
use waymark_runtime::session::OpOutcome;
use waymark_runtime::{Runtime, SessionHandle, SessionSpec};

/// How long a run waits for a usage limit to reset unless `--wait-limit` says otherwise.
pub(crate) const DEFAULT_WAIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Prints the session's events after `after` that `keep` selects, one JSON object per line,
/// reading the log in pages.
pub(crate) fn print_events(
    runtime: &Runtime,
    session: &str,
    mut after: u64,
    keep: impl Fn(&Event) -> bool,
) -> anyhow::Result<()> {
    loop {
        let batch = runtime.events(session, after, 1000)?;
        let Some(last) = batch.last() else {
            return Ok(());
        };
        after = last.seq;
        for e in batch.iter().filter(|e| keep(e)) {
            crate::term::json(e, false)?;
        }
    }
}

pub(crate) async fn submit_without_running(
    runtime: &Runtime,
    session: &str,
    op: Op,
) -> anyhow::Result<()> {
    submit_without_running_for(runtime, session, op)
        .await
        .map(|_| ())
}

/// Opens session `session` held: its queued work does not start (an op that only changes
/// it, a draft, a rewind); refused while another process drives it.
pub(crate) fn open_held(runtime: &Runtime, session: &str) -> anyhow::Result<SessionHandle> {
    Ok(runtime.open_session(
        session,
        SessionSpec {
            hold: true,
            ..SessionSpec::default()
        },
    )?)
}

/// Sends `op` to a held session (nothing runs) and returns what it said.
pub(crate) async fn submit_without_running_for(
    runtime: &Runtime,
    session: &str,
    op: Op,
) -> anyhow::Result<String> {
    let handle = crate::follow::open_held(runtime, session)?;
    let r = handle.submit(op).await;
    handle.shutdown().await?;
    Ok(match r? {
        OpOutcome::Command { output } => output,
        _ => String::new(),
    })
}

/// Sends `op` (if any), then runs the session until it is idle (exit 0) or waits on a
/// questionnaire (exit 3). Ctrl-C stops the running turn; a second Ctrl-C quits.
pub(crate) async fn drive(
    runtime: &Runtime,
    handle: SessionHandle,
    op: Option<Op>,
    json: bool,
    wait_limit: std::time::Duration,
) -> anyhow::Result<ExitCode> {
    let mut printer = Printer::new(json);
    if !json {
        printer.remember(&runtime.recent_events_of_type(handle.id(), "tool.call", 50)?);
    }
    for e in &handle.startup {
        printer.print(e);
    }
    let resuming = matches!(&op, Some(Op::Goal { .. }))
        || matches!(&op, Some(Op::Submit { text, .. }) if text.trim_start().starts_with("/goal"));
    if !json
        && !resuming
        && let Some(line) = goal_stopped_line(runtime, handle.id())?
    {
        outln!("{line}");
    }
    // Followed from before the op goes in, so nothing it causes is missed.
    let mut follow = match waymark_runtime::client::submit_and_follow(&handle, op).await {
        Ok((follow, _)) => follow,
        Err((mut follow, e)) => {
            // Print what happened so far (a command's output), then fail clearly.
            for ev in follow.drain() {
                printer.print(&ev);
            }
            handle.shutdown().await?;
            return Err(anyhow::Error::new(e));
        }
    };
    let goal_of = runtime.goal_of();
    let mut interrupts = 0;
    // SIGTERM and SIGHUP (a process manager, a closed terminal, `timeout`) stop the turn as
    // Ctrl-C does, so a call under way is charged and the turn closes before the process
    // ends; a second one quits at once.
    let mut terminate = unix_signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hangup = unix_signal(tokio::signal::unix::SignalKind::hangup())?;
    // The usage-limit reset the run waits for, and whether a limit stopped the goal during
    // this run (the last goal update said so).
    let mut waiting: Option<i64> = None;
    let mut limited_here = false;
    // The goal's own wait (the agent's `wait`): when this run began waiting with it, the
    // latest it waits to, and the newest check result printed.
    let mut goal_wait: Option<(i64, i64)> = None;
    // How long this run has waited with the goal in earlier waits: `--wait-limit` bounds the
    // run's waiting in all, so a model cannot hold it open by waiting again and again.
    let mut waited_ms: i64 = 0;
    let mut check_seen: Option<i64> = None;
    let countdown_every = std::time::Duration::from_secs(30);
    let mut countdown = tokio::time::interval(countdown_every);
    let code = loop {
        tokio::select! {
            p = follow.next(&goal_of) => match p? {
                Progress::Event(ev) => {
                    printer.print(&ev);
                    match &ev.kind {
                        // A tool server's form, or a subagent's permission question: its call
                        // waits on it while the turn runs, so it is shown now, with how to
                        // answer it from another terminal.
                        EventKind::QuestionnaireOpened { id, question }
                            if !json && (question.kind() == waymark_protocol::QuestionnaireKind::Elicitation
                                || matches!(&**question, waymark_protocol::Question::Permission(p) if p.call_id.starts_with("ta-"))) =>
                        {
                            let q = waymark_protocol::QuestionnaireInfo {
                                id: id.clone(),
                                question: (**question).clone(),
                                status: waymark_protocol::QuestionnaireStatus::Pending,
                                answer: None,
                            };
                            outln!("{}", render::questionnaire(handle.id(), &q));
                        }
                        // A usage limit this run met: the run waits for its reset (one the
                        // goal was already under when the run began ends it at once, exit 4).
                        EventKind::GoalUpdate { status, .. } => {
                            limited_here = *status == waymark_protocol::GoalStatus::UsageLimited;
                        }
                        EventKind::TurnStarted { .. } => {
                            waiting = None;
                            if let Some((since, _)) = goal_wait.take() {
                                waited_ms = now_ms().saturating_sub(since).max(0);
                            }
                        }
                        // Each run of a waiting goal's check: its outcome and last line.
                        EventKind::GoalUpdated { goal } if !json => {
                            if let Some(c) = goal.wait.as_ref().and_then(|w| w.last_check.as_ref())
                                && check_seen != Some(c.at)
                            {
                                check_seen = Some(c.at);
                                let how = match (c.passed, c.exit_code) {
                                    (true, _) => "passed".to_string(),
                                    (false, Some(code)) => format!("exit {code}"),
                                    (false, None) => "did not finish".to_string(),
                                };
                                errln!("[wait check {how}: {}]", render::safe(&c.line));
                            }
                        }
                        _ => {}
                    }
                }
                Progress::Settled(Settled::Waiting { questionnaire_id }) => {
                    if !json
                        && let Some(q) = runtime.questionnaire(handle.id(), &questionnaire_id)?
                    {
                        outln!("{}", render::questionnaire(handle.id(), &q));
                    }
                    break ExitCode::from(EXIT_WAITING);
                }
                // A usage limit stopped the goal: wait for its reset within the wait limit.
                Progress::Settled(Settled::Limited { .. }) if !limited_here => {
                    break exit::at_idle(runtime, handle.id(), follow.failure())?;
                }
                Progress::Settled(Settled::Limited { .. }) => {
                    match limit_wait(runtime, handle.id(), wait_limit)? {
                        Some(LimitWait::Until(at)) => {
                            if waiting != Some(at) {
                                waiting = Some(at);
                                errln!(
                                    "[usage limit: waiting until {} (in {}) for it to reset; the goal then resumes. Ctrl-C stops waiting.]",
                                    waymark_runtime::clock::utc_label(at),
                                    left_until(at)
                                );
                                countdown.reset_after(countdown_every);
                            }
                        }
                        Some(LimitWait::Exit(line)) => {
                            errln!("{line}");
                            break ExitCode::from(EXIT_USAGE_LIMIT);
                        }
                        None => break exit::at_idle(runtime, handle.id(), follow.failure())?,
                    }
                }
                // The goal waits (the agent's `wait`): wait with it within the wait limit.
                Progress::Settled(Settled::GoalWaiting { .. }) => {
                    let since = goal_wait
                        .map_or_else(|| now_ms().saturating_sub(waited_ms), |(s, _)| s);
                    match goal_waiting(runtime, handle.id(), wait_limit, since)? {
                        Some(GoalWaiting::Until(at, said)) => {
                            if goal_wait.is_none() {
                                errln!("[{said}. Waiting with it (Ctrl-C stops waiting; the goal keeps waiting).]");
                                countdown.reset_after(countdown_every);
                            }
                            goal_wait = Some((since, at));
                        }
                        Some(GoalWaiting::Exit(line)) => {
                            errln!("{line}");
                            break ExitCode::from(exit::EXIT_GOAL_WAITING);
                        }
                        None => break exit::at_idle(runtime, handle.id(), follow.failure())?,
                    }
                }
                Progress::Settled(Settled::Idle { .. } | Settled::Finished { .. }) => {
                    break exit::at_idle(runtime, handle.id(), follow.failure())?;
                }
                Progress::Lagged(n) => errln!("[{n} events were skipped: the terminal could not keep up]"),
                Progress::Closed => break ExitCode::FAILURE,
            },
            _ = async {
                match goal_wait {
                    Some((_, at)) => {
                        let left = at.saturating_sub(now_ms()).max(0) as u64;
                        // A little after: the session's own wake-up at that time goes first.
                        tokio::time::sleep(std::time::Duration::from_millis(left + 1_000)).await
                    }
                    None => std::future::pending().await,
                }
            } => {
                if let Some((since, at)) = goal_wait {
                    // Past the latest this run waits: the goal waits on without it.
                    if now_ms() >= at {
                        match goal_waiting(runtime, handle.id(), wait_limit, since)? {
                            Some(GoalWaiting::Exit(line)) => {
                                errln!("{line}");
                                break ExitCode::from(exit::EXIT_GOAL_WAITING);
                            }
                            // Woken meanwhile, or its time is now: the session runs it.
                            Some(GoalWaiting::Until(at, _)) => {
                                goal_wait = Some((since, at.max(now_ms() + 5_000)));
                            }
                            // It no longer waits: woken (a turn is under way, whose end is
                            // awaited), or stopped with no turn (paused past its longest
                            // wait, its time budget spent), which ends the run by its state.
                            None => {
                                goal_wait = None;
                                let running = runtime
                                    .goal(handle.id())?
                                    .is_some_and(|g| g.status == waymark_protocol::GoalStatus::Active);
                                if !running {
                                    break exit::at_idle(runtime, handle.id(), follow.failure())?;
                                }
                            }
                        }
                    }
                }
            }
            _ = countdown.tick(), if waiting.is_some() => {
                if let Some(at) = waiting {
                    // Two minutes past the reset and nothing ran: something is wrong (the
                    // errors are above); waiting on would be forever.
                    if now_ms() > at.saturating_add(120_000) {
                        errln!("[usage limit: the goal did not resume at its reset time; exit code {EXIT_USAGE_LIMIT}]");
                        break ExitCode::from(EXIT_USAGE_LIMIT);
                    }
                    errln!("[usage limit: the goal resumes in {}]", left_until(at));
                }
            }
            code = async {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => 130u8,
                    _ = terminate.recv() => 143,
                    _ = hangup.recv() => 129,
                }
            } => {
                if waiting.is_some() {
                    errln!("\n[stopped waiting for the usage limit; the goal stays usage-limited until you resume it]");
                    break ExitCode::from(code);
                }
                if goal_wait.is_some() {
                    errln!("\n[stopped waiting with the goal; it keeps waiting, and `waymark exec --session {}` waits on]", handle.id());
                    break ExitCode::from(code);
                }
                interrupts += 1;
                if interrupts > 1 {
                    break ExitCode::from(code);
                }
                errln!("\n[stopping the turn; press Ctrl-C again (or signal again) to quit at once]");
                handle.submit(Op::Stop).await?;
            }
        }
    };
    handle.shutdown().await?;
    Ok(code)
}

/// A stream of signal `kind` (the run loop's, `waymark acp`'s).
pub(crate) fn unix_signal(
    kind: tokio::signal::unix::SignalKind,
) -> anyhow::Result<tokio::signal::unix::Signal> {
    Ok(tokio::signal::unix::signal(kind)?)
}

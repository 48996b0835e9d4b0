//! What a run says and does about a goal a usage limit stopped or a closed process left
//! paused: the line naming it when the session opens again, and whether to wait.

use crate::exit::EXIT_USAGE_LIMIT;
use waymark_runtime::Runtime;

/// A goal whose run ended with its process (the app closed, a crash, a killed `exec`) is
/// named when its session opens again, with how to carry on: it never resumes by itself.
pub(crate) fn goal_stopped_line(runtime: &Runtime, id: &str) -> anyhow::Result<Option<String>> {
    let Some(g) = runtime.goal(id)? else {
        return Ok(None);
    };
    if let Some(line) = waymark_runtime::goal::limit_line(&g, now_ms()) {
        return Ok(Some(format!(
            "[goal \"{}\" is stopped by the provider's usage limit. {line}]",
            g.objective
        )));
    }
    Ok((g.status == waymark_protocol::GoalStatus::Paused
        && g.reason == waymark_protocol::GoalReason::AppClosed)
        .then(|| {
            format!(
                "[goal paused: its run ended when the process running it stopped (app closed, crash or kill) — \"{}\". It does not resume by itself: send `/goal resume` to carry on.]",
                g.objective
            )
        }))
}

/// The time now, in Unix ms (the clock the runtime uses).
pub(crate) fn now_ms() -> i64 {
    use waymark_runtime::clock::Clock;
    waymark_runtime::clock::SystemClock.now_ms()
}

/// How long until `at` (Unix ms), as people read it.
pub(crate) fn left_until(at: i64) -> String {
    waymark_runtime::clock::span_label(at.saturating_sub(now_ms()).max(0) as u64)
}

/// What a run does about a goal that waits (the agent's `wait`, G-47), once the session is
/// idle: wait with it while that is within the wait limit (counted from `since`: when the
/// run began waiting, less what it waited in earlier waits), else say when it wakes and
/// exit 7.
pub(crate) enum GoalWaiting {
    /// Wait on, until this time at the latest (Unix ms); the line says what for.
    Until(i64, String),
    /// Say this and exit 7.
    Exit(String),
}

pub(crate) fn goal_waiting(
    runtime: &Runtime,
    id: &str,
    wait_limit: std::time::Duration,
    since: i64,
) -> anyhow::Result<Option<GoalWaiting>> {
    use crate::exit::EXIT_GOAL_WAITING;
    use waymark_runtime::clock::utc_label;
    let Some(w) = runtime
        .goal(id)?
        .filter(|g| g.status == waymark_protocol::GoalStatus::Active)
        .and_then(|g| g.wait)
    else {
        return Ok(None);
    };
    let now = now_ms();
    let said = waymark_runtime::goal::wait_line(&w, now);
    let limit_at = since.saturating_add(i64::try_from(wait_limit.as_millis()).unwrap_or(i64::MAX));
    // It wakes at a known time (or gives up at its deadline) unless a check passes first.
    let latest = w.until.map_or(w.deadline, |t| t.min(w.deadline));
    if latest <= limit_at {
        return Ok(Some(GoalWaiting::Until(latest, said)));
    }
    if w.check.is_some() && now < limit_at {
        return Ok(Some(GoalWaiting::Until(limit_at, said)));
    }
    Ok(Some(GoalWaiting::Exit(format!(
        "[goal waiting, past --wait-limit: {said}. It wakes by {} at the latest. Exit code {EXIT_GOAL_WAITING}; `waymark exec --session {id}` waits on (and runs its check at once).]",
        utc_label(latest)
    ))))
}

/// What a run does about a goal a usage limit stopped, once the session is idle.
pub(crate) enum LimitWait {
    /// The goal resumes by itself at this time (Unix ms), within the wait limit.
    Until(i64),
    /// It resumes later than the wait limit, or never by itself: say so and exit 4.
    Exit(String),
}

pub(crate) fn limit_wait(
    runtime: &Runtime,
    id: &str,
    wait_limit: std::time::Duration,
) -> anyhow::Result<Option<LimitWait>> {
    use waymark_runtime::clock::{span_label, utc_label};
    let Some(g) = runtime
        .goal(id)?
        .filter(|g| g.status == waymark_protocol::GoalStatus::UsageLimited)
    else {
        return Ok(None);
    };
    let now = now_ms();
    if let Some(l) = g.usage_limit.filter(|l| l.auto_resume) {
        let left = l.resets_at.saturating_sub(now).max(0) as u64;
        if u128::from(left) <= wait_limit.as_millis() {
            return Ok(Some(LimitWait::Until(l.resets_at)));
        }
        return Ok(Some(LimitWait::Exit(format!(
            "[usage limit: the provider's limit resets at {} (in {}), later than --wait-limit {}. \
             Exit code {EXIT_USAGE_LIMIT}; after that time, carry on with: waymark exec --session {id} \"/goal resume\"]",
            utc_label(l.resets_at),
            span_label(left),
            span_label(u64::try_from(wait_limit.as_millis()).unwrap_or(u64::MAX)),
        ))));
    }
    let line = waymark_runtime::goal::limit_line(&g, now).unwrap_or_default();
    Ok(Some(LimitWait::Exit(format!(
        "[{line} Exit code {EXIT_USAGE_LIMIT}.]"
    ))))
}

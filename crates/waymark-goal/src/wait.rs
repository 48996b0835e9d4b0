//! Waiting that spends nothing (G-47): the agent's `wait` tool, what the idle session looks
//! at while a goal waits (the time, the check, the longest wait, the time budget), and the
//! check command the runtime runs itself in the read-only sandbox. No model call happens
//! while a goal waits; it wakes at its time, when its check exits 0, on "Wake now" or on the
//! user's message.

use super::enabled::check_enabled;
use super::lifecycle::{continue_goal, count_wait, end_wait, push_snapshot, transition};
use super::prompts::Nudge;
use super::turn_goal::turn_goal_of;
use super::wait_terms::utc;
pub use super::wait_terms::{
    CHECK_TIMEOUT, DEFAULT_EVERY_SECONDS, MAX_WAITS_IN_ROW, MIN_EVERY_SECONDS, MIN_WAIT_SECONDS,
    describe,
};
use crate::db::{GoalRow, GoalWrites, current_goal};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;
use waymark_config::Config;
use waymark_extension::error::{Error, Result};
use waymark_extension::{SessionApi, SessionTool, tool_error};
use waymark_protocol::{
    GoalActor, GoalReason, GoalStatus, GoalUpdateKind, GoalWait, InteractionMode, WaitCheck,
};
use waymark_store::Tx;
use waymark_tools::{FreeTool, Tool, ToolContext, ToolError, ToolOutput, parse_args};

/// The longest a wait's reason (kept, after redaction), a check's shown line and a check
/// command may be.
const REASON_MAX: usize = 300;
const REASON_IN_MAX: usize = 4000;
const LINE_MAX: usize = 300;
const CHECK_MAX: usize = 2000;

pub(crate) struct WaitTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    seconds: Option<u64>,
    #[serde(default)]
    check: Option<String>,
    #[serde(default)]
    every: Option<u64>,
    reason: String,
}

impl Tool for WaitTool {
    fn name(&self) -> &'static str {
        "wait"
    }
    fn description(&self) -> &'static str {
        "Pause work on the goal until something outside your control is ready, instead of polling: until a time (`until`, RFC 3339 such as 2026-12-06T06:00:00Z), for `seconds`, or until the shell command `check` exits 0 (run read-only by the runtime every `every` seconds, at least 30, each run at most 60 s). Give a short `reason`. Your turn ends at once; no turn runs until the wait is over, and the next one says why it ended."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "until": {"type": "string", "description": "RFC 3339 time to wake at"},
            "seconds": {"type": "integer", "minimum": 1},
            "check": {"type": "string", "description": "shell command; exit 0 wakes the goal"},
            "every": {"type": "integer", "minimum": MIN_EVERY_SECONDS},
            "reason": {"type": "string"}
        }, "required": ["reason"]})
    }
    fn effects(&self) -> waymark_tools::Effects {
        waymark_tools::Effects::READS
    }
    fn offered(&self, _mode: InteractionMode, config: &Config) -> bool {
        config.beta.thread_goal
    }
}

impl SessionTool for WaitTool {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, std::result::Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: WaitArgs = parse_args(self.name(), args)?;
            check_enabled(api).map_err(tool_error)?;
            let now = api.now_ms();
            let config = api.config();
            let wait = shape(&a, now, config.goal.max_wait_seconds()).map_err(tool_error)?;
            if wait.check.is_some() && check_context(api, &config).await.is_none() {
                return Err(ToolError::Model("a check needs the read-only sandbox, which this machine does not have: wait for a time instead (`until` or `seconds`)".into()));
            }
            let goal_id = turn_goal_of(api, ctx.turn_id).map_err(tool_error)?.goal_id;
            let said = api
                .write(|tx| {
                    let Some(mut g) = current_goal(tx.conn(), api.id())?.filter(|g| {
                        g.status == GoalStatus::Active && goal_id.as_deref() == Some(g.id.as_str())
                    }) else {
                        return Err(Error::refused(
                            "wait is only for a turn working on an active goal".into(),
                        ));
                    };
                    if g.counters.waits_in_row >= MAX_WAITS_IN_ROW {
                        return Err(Error::refused(format!(
                            "you began {MAX_WAITS_IN_ROW} waits in a row with no other turn between them: wait once with a `check` or a later `until`, report blocked with update_goal, or go on with the goal"
                        )));
                    }
                    g.counters.waits_in_row += 1;
                    tx.set_goal_counters(&g.id, &g.counters)?;
                    let mut wait = wait.clone();
                    // Shown redacted, the reason cut to size after; the command runs as given.
                    wait.reason = tx.redact(&wait.reason).chars().take(REASON_MAX).collect();
                    let command = wait.check.clone();
                    wait.check = command.as_deref().map(|c| tx.redact(c).into_owned());
                    tx.set_goal_wait(&g.id, Some(&wait))?;
                    tx.set_goal_wait_command(&g.id, command.as_deref())?;
                    g.wait = Some(wait.clone());
                    transition(
                        tx,
                        &mut g,
                        GoalReason::Waiting,
                        GoalActor::Model,
                        GoalUpdateKind::Lifecycle,
                    )?;
                    Ok(describe(&wait, now))
                })
                .map_err(tool_error)?;
            push_snapshot(api);
            Ok(ToolOutput {
                content: format!(
                    "{said}. Your turn ends now; the next one says why the wait ended."
                ),
                terminate: true,
                images: Vec::new(),
            })
        })
    }
}

/// The wait the arguments ask for, begun at `now`, or why they ask for none.
fn shape(a: &WaitArgs, now: i64, max_wait_seconds: u64) -> Result<GoalWait> {
    // Cut to size only after redaction (a secret cut in two would no longer be found).
    let reason = a.reason.trim().to_string();
    if reason.is_empty() {
        return Err(Error::refused("give a short `reason` for the wait".into()));
    }
    if reason.chars().count() > REASON_IN_MAX {
        return Err(Error::refused(format!(
            "`reason` is longer than {REASON_IN_MAX} characters"
        )));
    }
    let soon = now.saturating_add(MIN_WAIT_SECONDS as i64 * 1000);
    let until = match (&a.until, a.seconds) {
        (Some(_), Some(_)) => {
            return Err(Error::refused("give `until` or `seconds`, not both".into()));
        }
        (Some(t), None) => {
            let at: jiff::Timestamp = t.trim().parse().map_err(|e| {
                Error::refused(format!(
                    "`until` must be an RFC 3339 time such as 2026-12-06T06:00:00Z ({e})"
                ))
            })?;
            let ms = at.as_millisecond();
            if ms <= now {
                return Err(Error::refused(format!(
                    "`until` ({t}) is already past: it is {} now",
                    utc(now)
                )));
            }
            if ms < soon {
                return Err(Error::refused(format!(
                    "`until` must be at least {MIN_WAIT_SECONDS} s away: for less, just go on"
                )));
            }
            Some(ms)
        }
        (None, Some(s)) if s < MIN_WAIT_SECONDS => {
            return Err(Error::refused(format!(
                "`seconds` must be at least {MIN_WAIT_SECONDS}: for less, just go on"
            )));
        }
        (None, Some(s)) => {
            Some(now.saturating_add(i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX)))
        }
        (None, None) => None,
    };
    let check = match a.check.as_deref().map(str::trim) {
        None => None,
        Some("") => return Err(Error::refused("`check` is empty".into())),
        Some(c) if c.chars().count() > CHECK_MAX => {
            return Err(Error::refused(format!(
                "`check` is longer than {CHECK_MAX} characters"
            )));
        }
        Some(c) => Some(c.to_string()),
    };
    if until.is_none() && check.is_none() {
        return Err(Error::refused(
            "say what to wait for: `until`, `seconds` or `check`".into(),
        ));
    }
    let every = match a.every {
        None => DEFAULT_EVERY_SECONDS,
        Some(e) if e < u64::from(MIN_EVERY_SECONDS) => {
            return Err(Error::refused(format!(
                "`every` must be at least {MIN_EVERY_SECONDS} seconds"
            )));
        }
        Some(e) => u32::try_from(e.min(max_wait_seconds)).unwrap_or(u32::MAX),
    };
    let deadline = now
        .saturating_add(i64::try_from(max_wait_seconds.saturating_mul(1000)).unwrap_or(i64::MAX));
    Ok(GoalWait {
        reason,
        since: now,
        until,
        every_seconds: if check.is_some() { every } else { 0 },
        check,
        deadline,
        last_check: None,
        next_check: now.saturating_add(i64::from(every) * 1000),
        counted_to: now,
    })
}

/// The check a session runs in the background, by session id: kept beside the sessions
/// (not in one), so closing a session stops its check wherever the close comes from.
struct Running {
    /// The wait it belongs to, and when it started (the session clock's ms).
    since: i64,
    started: i64,
    cancel: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

static CHECKS: LazyLock<Mutex<HashMap<String, Running>>> = LazyLock::new(Default::default);

fn checks() -> std::sync::MutexGuard<'static, HashMap<String, Running>> {
    CHECKS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether the wait begun at `since` has its check running now.
fn running_for(session: &str, since: i64) -> bool {
    checks()
        .get(session)
        .is_some_and(|r| r.since == since && !r.task.is_finished())
}

/// Whether a check of the wait begun at `since` may start at `now`: none runs, and the last
/// one started at least the least interval ago, whatever the store says (a failed write of
/// its result must not make checks run back to back).
fn may_start(session: &str, since: i64, now: i64) -> bool {
    checks().get(session).is_none_or(|r| {
        r.task.is_finished()
            && (r.since != since
                || now
                    >= r.started
                        .saturating_add(i64::from(MIN_EVERY_SECONDS) * 1000))
    })
}

/// The earliest the next check of the wait begun at `since` may start, by the last start
/// this process made (the least interval after it).
fn not_before(session: &str, since: i64) -> i64 {
    checks()
        .get(session)
        .filter(|r| r.since == since)
        .map_or(i64::MIN, |r| {
            r.started
                .saturating_add(i64::from(MIN_EVERY_SECONDS) * 1000)
        })
}

/// The session closes: its check, if one runs, is stopped (its process group killed) and
/// its result is not recorded.
pub(crate) fn stop_checks(session: &str) {
    if let Some(r) = checks().remove(session) {
        // The shell tool, told to stop, kills the check's process group; the task then ends
        // without recording anything. (Aborting it instead would drop the command unkilled.)
        r.cancel.cancel();
    }
}

/// What the idle session does about a waiting goal (called before the usual continuation):
/// wakes it when its time came or its check passed, pauses it past the longest wait, stops
/// it when the time budget is used up, or starts the check when one is due. Returns whether
/// a continuation was queued.
pub(crate) fn look(api: &SessionApi) -> Result<bool> {
    let now = api.now_ms();
    let Some(g) = api.read(|c| current_goal(c, api.id()))? else {
        return Ok(false);
    };
    let Some(w) = g.wait.clone().filter(|_| g.status == GoalStatus::Active) else {
        return Ok(false);
    };
    let passed = w.last_check.as_ref().is_some_and(|c| c.passed);
    let timed_out = time_budget_spent_at(&g, &w).is_some_and(|at| now >= at);
    // A check with no command to run (a wait begun before the command was kept apart) can
    // never pass: the goal wakes rather than waiting a day for nothing.
    let orphan = w.check.is_some() && g.wait_command.is_none();
    if passed
        || orphan
        || w.until.is_some_and(|t| now >= t && t <= w.deadline)
        || now >= w.deadline
        || timed_out
    {
        let woke = api.write(|tx| {
            let Some(mut g) = current_goal(tx.conn(), api.id())?.filter(|x| x.id == g.id) else {
                return Ok(false);
            };
            if g.wait.as_ref().is_none_or(|x| x.since != w.since) || g.status != GoalStatus::Active
            {
                return Ok(false);
            }
            if timed_out {
                end_wait(tx, &mut g, now)?;
                transition(
                    tx,
                    &mut g,
                    GoalReason::ActiveSeconds,
                    GoalActor::Runtime,
                    GoalUpdateKind::Completion,
                )?;
                return Ok(false);
            }
            if passed || orphan || w.until.is_some_and(|t| now >= t && t <= w.deadline) {
                let why = if passed {
                    format!("its check `{}` succeeded", w.check.as_deref().unwrap_or(""))
                } else if orphan {
                    "its check could not be run after an update; wait again if you still need to"
                        .to_string()
                } else {
                    "the time it waited for came".to_string()
                };
                wake(tx, &mut g, now, GoalActor::Runtime, &why, true)?;
                return Ok(true);
            }
            end_wait(tx, &mut g, now)?;
            transition(
                tx,
                &mut g,
                GoalReason::WaitExpired,
                GoalActor::Runtime,
                GoalUpdateKind::Completion,
            )?;
            Ok(false)
        })?;
        push_snapshot(api);
        return Ok(woke);
    }
    if let Some(command) = g.wait_command.as_ref().filter(|_| w.check.is_some())
        && now >= w.next_check
        && may_start(api.id(), w.since, now)
    {
        start_check(api, &g.id, w.since, command.clone());
    }
    Ok(false)
}

/// When the session should look at a waiting goal again: its time, its deadline, its next
/// check, or when its time budget runs out, whichever comes first.
pub(crate) fn wake_at(api: &SessionApi, g: &GoalRow) -> Option<i64> {
    let w = g.wait.as_ref().filter(|_| g.status == GoalStatus::Active)?;
    let mut at = w.deadline;
    if let Some(t) = w.until {
        at = at.min(t);
    }
    if w.check.is_some() && g.wait_command.is_some() {
        // A check running now pokes the session when it ends; this is the backstop. The next
        // one is never sooner than the least interval after the last one started, whatever
        // the store says (its result may not have been written).
        let next = if running_for(api.id(), w.since) {
            api.now_ms()
                .saturating_add(CHECK_TIMEOUT.as_millis() as i64 + 5_000)
        } else {
            w.next_check.max(not_before(api.id(), w.since))
        };
        at = at.min(next);
    } else if w.check.is_some() {
        // A check with no command: looked at once, now, and woken (see `look`).
        at = at.min(api.now_ms());
    }
    if let Some(t) = time_budget_spent_at(g, w) {
        at = at.min(t);
    }
    Some(at)
}

/// When the goal's time budget runs out while it waits (waiting counts toward it).
fn time_budget_spent_at(g: &GoalRow, w: &GoalWait) -> Option<i64> {
    let budget = g.time_budget_ms?;
    let left = budget.saturating_sub(g.active_ms);
    Some(
        w.counted_to
            .saturating_add(i64::try_from(left).unwrap_or(i64::MAX)),
    )
}

/// Wakes a waiting goal: the wait ends, the goal says it woke (`woke`, by `actor`), and
/// unless the user's own message is the next turn (`continue_now` false) a continuation
/// saying why is queued.
pub(crate) fn wake(
    tx: &mut Tx<'_>,
    g: &mut GoalRow,
    now: i64,
    actor: GoalActor,
    why: &str,
    continue_now: bool,
) -> Result<()> {
    end_wait(tx, g, now)?;
    transition(tx, g, GoalReason::Woke, actor, GoalUpdateKind::Lifecycle)?;
    if continue_now {
        continue_goal(tx, g, Nudge::Woke(why.to_string()))?;
    }
    Ok(())
}

/// The process holding the session stops: the waited time so far is counted, and the wait
/// stays (it survives a restart; the time the session is closed is not counted).
pub(crate) fn on_close(tx: &mut Tx<'_>, g: &mut GoalRow) -> Result<()> {
    count_wait(tx, g, tx.now())
}

/// A process opens the session: the wait counts its time from now on, and its check runs
/// at once (whatever changed while it was closed is seen now).
pub(crate) fn on_open(tx: &mut Tx<'_>, g: &mut GoalRow) -> Result<()> {
    if let Some(w) = g.wait.as_mut() {
        w.counted_to = tx.now();
        if w.check.is_some() {
            w.next_check = tx.now();
        }
        tx.set_goal_wait(&g.id, g.wait.as_ref())?;
    }
    Ok(())
}

/// What the check runs with: the agent's shell tool, confined read-only, with plan mode's
/// network rule. None when this machine has no complete sandbox (a check then is refused).
async fn check_context(
    api: &SessionApi,
    config: &Config,
) -> Option<(Arc<dyn FreeTool>, ToolContext)> {
    api.sandbox().probe_async().await;
    let spec = api
        .sandbox()
        .spec(Vec::new(), config.plan.shell_network, &config.sandbox)?;
    let tool = crate::runtime_shell::shell_tool(api)?;
    let ctx = crate::runtime_shell::context(
        api,
        spec,
        CHECK_TIMEOUT,
        16 * 1024,
        tokio_util::sync::CancellationToken::new(),
    );
    Some((tool, ctx))
}

/// Runs the check in the background; its result is stored on the wait it belongs to (if
/// that wait still stands) and the session is poked to look again.
fn start_check(api: &SessionApi, goal_id: &str, since: i64, check: String) {
    let (api2, goal_id) = (api.clone(), goal_id.to_string());
    let cancel = tokio_util::sync::CancellationToken::new();
    let stopped = cancel.clone();
    let task = tokio::spawn(async move {
        let config = api2.config();
        let ran = match check_context(&api2, &config).await {
            None => (
                false,
                None,
                "the read-only sandbox is not available here".to_string(),
            ),
            Some((tool, mut ctx)) => {
                ctx.cancel = stopped.clone();
                let args =
                    json!({"command": check, "timeout_ms": CHECK_TIMEOUT.as_millis() as u64});
                let run = tokio::time::timeout(
                    CHECK_TIMEOUT + Duration::from_secs(5),
                    tool.handle(&ctx, args),
                )
                .await;
                match run {
                    Ok(Ok(out)) => (true, Some(0), out.content),
                    Ok(Err(e)) => {
                        let text = e.to_string();
                        (false, exit_code(&text), text)
                    }
                    Err(_) => (false, None, "the check took longer than 60 s".to_string()),
                }
            }
        };
        // The session closed meanwhile: nothing is recorded for it.
        if stopped.is_cancelled() {
            return;
        }
        let stored = api2.write(|tx| {
            let Some(mut g) = current_goal(tx.conn(), api2.id())?.filter(|g| g.id == goal_id)
            else {
                return Ok(());
            };
            if g.status != GoalStatus::Active || g.wait.as_ref().is_none_or(|w| w.since != since) {
                return Ok(());
            }
            let now = tx.now();
            let line: String = tx
                .redact(last_line(&ran.2))
                .chars()
                .take(LINE_MAX)
                .collect();
            if let Some(w) = g.wait.as_mut() {
                w.next_check =
                    now.saturating_add(i64::from(w.every_seconds.max(MIN_EVERY_SECONDS)) * 1000);
                w.last_check = Some(WaitCheck {
                    at: now,
                    passed: ran.0,
                    exit_code: ran.1,
                    line,
                });
            }
            count_wait(tx, &mut g, now)
        });
        if let Err(e) = stored {
            tracing::warn!("a goal's wait check could not be recorded: {e}");
        }
        push_snapshot(&api2);
        api2.poke();
    });
    let started = api.now_ms();
    checks().insert(
        api.id().to_string(),
        Running {
            since,
            started,
            cancel,
            task,
        },
    );
}

/// The exit code the shell tool reports at the end of its output.
fn exit_code(text: &str) -> Option<i32> {
    let tail = text.rsplit("[exit code: ").next()?;
    tail.split(']').next()?.trim().parse().ok()
}

/// The last line a check printed (its exit-code line left out).
fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("[exit code:"))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> WaitArgs {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_wait_is_for_a_time_a_span_or_a_check_and_never_nothing() {
        let now = 1_800_000_000_000;
        let w = shape(&args(json!({"seconds": 60, "reason": "CI"})), now, 86_400).unwrap();
        assert!(
            shape(&args(json!({"seconds": 29, "reason": "CI"})), now, 86_400)
                .unwrap_err()
                .to_string()
                .contains("at least 30")
        );
        assert!(
            shape(
                &args(json!({"until": "2027-01-15T08:00:10Z", "reason": "CI"})),
                now,
                86_400
            )
            .unwrap_err()
            .to_string()
            .contains("at least 30 s away")
        );
        assert_eq!(
            (w.until, w.deadline),
            (Some(now + 60_000), now + 86_400_000)
        );
        // `now` is 2027-01-15T08:00:00Z; an offset is honoured.
        let w = shape(
            &args(json!({"until": "2027-01-15T10:00:00Z", "reason": "x"})),
            now,
            86_400,
        )
        .unwrap();
        assert_eq!(w.until, Some(now + 7_200_000));
        let w = shape(
            &args(json!({"until": "2027-01-15T11:00:00+01:00", "reason": "x"})),
            now,
            86_400,
        )
        .unwrap();
        assert_eq!(w.until, Some(now + 7_200_000));
        let w = shape(
            &args(json!({"check": "gh run view 1", "reason": "CI"})),
            now,
            86_400,
        )
        .unwrap();
        assert_eq!((w.until, w.every_seconds), (None, DEFAULT_EVERY_SECONDS));
        for (bad, says) in [
            (json!({"reason": "x"}), "say what to wait for"),
            (
                json!({"seconds": 5, "until": "2030-01-01T00:00:00Z", "reason": "x"}),
                "not both",
            ),
            (json!({"until": "tomorrow", "reason": "x"}), "RFC 3339"),
            (
                json!({"until": "2001-01-01T00:00:00Z", "reason": "x"}),
                "already past",
            ),
            (json!({"seconds": 0, "reason": "x"}), "at least 30"),
            (
                json!({"check": "true", "every": 5, "reason": "x"}),
                "at least 30",
            ),
            (json!({"check": "  ", "reason": "x"}), "empty"),
            (json!({"seconds": 5, "reason": "  "}), "reason"),
        ] {
            let e = shape(&args(bad.clone()), now, 86_400)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // Absurd numbers saturate rather than wrap.
        let w = shape(
            &args(json!({"seconds": u64::MAX, "reason": "x"})),
            now,
            86_400,
        )
        .unwrap();
        assert_eq!(w.until, Some(i64::MAX));
    }

    #[test]
    fn the_last_line_and_exit_code_of_a_check_are_read_from_the_shell_output() {
        let out = "building\nrun 123: in progress\n\n[exit code: 1]";
        assert_eq!(
            (last_line(out), exit_code(out)),
            ("run 123: in progress", Some(1))
        );
        assert_eq!((last_line(""), exit_code("timed out")), ("", None));
    }
}

//! A goal's checks (G-49): the commands that define it done. The runtime runs them, never
//! the model: at a completion claim, in the goal's scratch shell (the workspace writable
//! through a throwaway layer kept for the goal, unchanged underneath; G-50), each under its
//! time limit, with the network only as `goal.check_network` allows. Each run is a
//! `goal.check` event; the failing ones' output becomes the next continuation's gaps.

use crate::check_counts::{TestCounts, counts};
pub use crate::check_records::checks_of;
use std::time::{Duration, Instant};
use waymark_extension::SessionApi;
use waymark_extension::error::{Error, Result};
use waymark_protocol::EventKind;
use waymark_store::Tx;

/// The most of a check's output kept: its end, where runners put the failures and the
/// summary.
const TAIL_CHARS: usize = 4000;

/// The scratch layer a goal's checks and reviewer share.
pub fn scratch_owner(goal_id: &str) -> String {
    format!("goal-{goal_id}")
}

/// Drops the goal's scratch layer once it has ended (off this thread: a check or review
/// still running there holds the layer until it ends).
pub(crate) fn drop_layer(api: &SessionApi, goal_id: &str) {
    let (sandbox, owner) = (api.sandbox().clone(), scratch_owner(goal_id));
    std::thread::spawn(move || {
        if let Err(e) = sandbox.discard_scratch(&owner) {
            tracing::warn!("the scratch layer {owner} was not removed: {e}");
        }
    });
}

/// One run of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckRun {
    pub command: String,
    /// `None`: killed at its time limit, stopped, or never ran (`note` says which).
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub counts: Option<TestCounts>,
    pub note: Option<String>,
    /// The end of its output, redacted.
    pub tail: String,
}

impl CheckRun {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// Whether the check could not be judged at all (no sandbox here, stopped).
    pub fn unjudged(&self) -> bool {
        self.exit_code.is_none() && !self.timed_out()
    }

    fn timed_out(&self) -> bool {
        self.note
            .as_deref()
            .is_some_and(|n| n.starts_with("killed"))
    }
}

/// The exit code the shell tool reported at the end of its text.
fn exit_code(text: &str) -> Option<i32> {
    let tail = text.rsplit("[exit code: ").next()?;
    tail.split(']').next()?.trim().parse().ok()
}

/// The last `max` characters of `text`, from a line start where one is near.
fn tail(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let cut: String = text.chars().skip(n - max).collect();
    match cut.split_once('\n') {
        Some((_, rest)) if rest.len() > max / 2 => format!("…\n{rest}"),
        _ => format!("…{cut}"),
    }
}

/// Runs every check of the goal in order, in its scratch shell, logging each as a
/// `goal.check` event and storing it (as the baseline when `baseline`). Stop ends the run:
/// the checks not run yet are left out.
pub(crate) async fn run_all(
    api: &SessionApi,
    goal_id: &str,
    checks: &[String],
    cancel: &tokio_util::sync::CancellationToken,
    baseline: bool,
) -> Result<Vec<CheckRun>> {
    let config = api.config();
    let limit = Duration::from_secs(config.goal.check_timeout_seconds());
    api.sandbox().probe_async().await;
    let shell = async {
        let scratch = api
            .sandbox()
            .scratch_async(&scratch_owner(goal_id), &config.sandbox)
            .await
            .map_err(|e| e.to_string())?;
        let mut spec = api
            .sandbox()
            .spec(Vec::new(), config.goal.check_network, &config.sandbox)
            .ok_or_else(|| "the sandbox is incomplete on this machine".to_string())?;
        // The baseline builds (the user's code as the goal found it: its build output is
        // then frozen as the layer's base); every later check starts from that base alone,
        // so nothing code from an earlier state of the workspace wrote reaches it (G-51).
        spec.scratch = Some(waymark_sandbox::scratch::Scratch {
            keep: if baseline {
                waymark_sandbox::scratch::Keep::BuildOutput
            } else {
                waymark_sandbox::scratch::Keep::Nothing
            },
            ..scratch
        });
        let tool = crate::runtime_shell::shell_tool(api)
            .ok_or_else(|| "no shell tool is loaded".to_string())?;
        Ok::<_, String>((tool, spec))
    }
    .await;
    let mut runs = Vec::new();
    for command in checks {
        if cancel.is_cancelled() {
            break;
        }
        let started = Instant::now();
        let run = match &shell {
            Err(why) => CheckRun {
                command: command.clone(),
                exit_code: None,
                duration_ms: 0,
                counts: None,
                note: Some(format!(
                    "did not run: the scratch shell is not available ({why})"
                )),
                tail: String::new(),
            },
            Ok((tool, spec)) => {
                let ctx = crate::runtime_shell::context(
                    api,
                    spec.clone(),
                    limit,
                    256 * 1024,
                    cancel.clone(),
                );
                let args = serde_json::json!({
                    "command": command,
                    "timeout_ms": limit.as_millis() as u64,
                });
                let text = match tool.handle(&ctx, args).await {
                    Ok(out) => out.content,
                    Err(e) => e.to_string(),
                };
                // Secrets go before the cut (a cut secret is no longer recognised).
                let text = api.write(|tx| Ok(tx.redact(&text).into_owned()))?;
                let code = exit_code(&text);
                let note = if code.is_some() {
                    None
                } else if text.contains("[timed out after") {
                    Some(format!(
                        "killed at its time limit of {} s (goal.check_timeout), with everything it started",
                        limit.as_secs()
                    ))
                } else if text.contains("[stopped by the user") {
                    Some("stopped by the user".into())
                } else {
                    Some("ended without an exit code (killed, or the sandbox refused it)".into())
                };
                CheckRun {
                    command: command.clone(),
                    exit_code: code,
                    duration_ms: started.elapsed().as_millis() as u64,
                    counts: counts(&text),
                    note,
                    tail: tail(&text, TAIL_CHARS),
                }
            }
        };
        api.write(|tx| {
            tx.emit(
                api.id(),
                EventKind::GoalCheck {
                    goal_id: goal_id.to_string(),
                    command: tx.redact(&run.command).into_owned(),
                    exit_code: run.exit_code,
                    duration_ms: run.duration_ms,
                    passed: run
                        .counts
                        .map(|c| u32::try_from(c.passed).unwrap_or(u32::MAX)),
                    failed: run
                        .counts
                        .map(|c| u32::try_from(c.failed).unwrap_or(u32::MAX)),
                    note: run.note.clone(),
                    tail: run.tail.clone(),
                    baseline,
                },
            )?;
            record_run(tx, goal_id, &run, baseline)?;
            Ok(())
        })?;
        runs.push(run);
    }
    record_steps(api, goal_id, &runs)?;
    Ok(runs)
}

/// Each plan step with a check of its own takes that check's result as its verdict.
fn record_steps(api: &SessionApi, goal_id: &str, runs: &[CheckRun]) -> Result<()> {
    use crate::db::GoalWrites;
    api.write(|tx| {
        let Some(now) = crate::db::current_goal(tx.conn(), api.id())?.filter(|g| g.id == goal_id)
        else {
            return Ok(());
        };
        if !now.steps.iter().any(|s| s.check.is_some()) {
            return Ok(());
        }
        let steps: Vec<_> = now
            .steps
            .into_iter()
            .map(|mut s| {
                if let Some(r) = s
                    .check
                    .as_ref()
                    .and_then(|c| runs.iter().find(|r| &r.command == c))
                    .filter(|r| !r.unjudged())
                {
                    s.met = Some(r.passed());
                }
                s
            })
            .collect();
        tx.set_goal_steps(goal_id, &steps)
    })
}

/// What the next continuation is told about the failing checks: a first line naming them
/// (the same failing set gives the same line, which the no-progress count compares), then
/// each one's output.
pub(crate) fn gaps(runs: &[CheckRun]) -> String {
    let failing: Vec<&CheckRun> = runs.iter().filter(|r| !r.passed()).collect();
    let names: Vec<String> = failing.iter().map(|r| format!("`{}`", r.command)).collect();
    let mut text = format!("{CHECKS_FAIL}, and these fail: {}.", names.join(", "));
    for r in failing {
        let status = match (r.exit_code, &r.note) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(n)) => n.clone(),
            (None, None) => "no exit code".into(),
        };
        let counted = r
            .counts
            .map(|c| format!("; {} passed, {} failed", c.passed, c.failed))
            .unwrap_or_default();
        text.push_str(&format!(
            "\n\n`{}` ({status}{counted}); the end of its output:\n{}",
            r.command, r.tail
        ));
    }
    text
}

/// How the gaps of failing checks begin.
const CHECKS_FAIL: &str = "The goal is not complete: its checks must all pass";

/// The key the no-progress count compares: for failing checks, which ones fail (their
/// output varies run to run, their names do not); a reviewer's gaps whole.
pub(crate) fn failing_key(gaps: &str) -> &str {
    if gaps.starts_with(CHECKS_FAIL) {
        gaps.lines().next().unwrap_or("")
    } else {
        gaps
    }
}

/// An error for a check list the goal cannot take.
pub(crate) fn refuse_checks(checks: &[String]) -> Result<()> {
    if checks.len() > waymark_config::budget::MAX_CHECKS {
        return Err(Error::refused(format!(
            "a goal carries at most {} checks",
            waymark_config::budget::MAX_CHECKS
        )));
    }
    for c in checks {
        waymark_config::budget::check_command(c).map_err(|e| Error::refused(e.to_string()))?;
    }
    Ok(())
}

/// Stores one run of a check (the gauge's pass counts; the baseline's when `baseline`).
pub(crate) fn record_run(
    tx: &mut Tx<'_>,
    goal_id: &str,
    run: &CheckRun,
    baseline: bool,
) -> Result<()> {
    let now = tx.now();
    tx.conn().execute(
        "INSERT INTO goal_check_runs (goal_id, command, at, baseline, exit_code, passed, failed) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        rusqlite::params![
            goal_id,
            run.command,
            now,
            baseline,
            run.exit_code,
            run.counts.map(|c| c.passed as i64),
            run.counts.map(|c| c.failed as i64),
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str, exit_code: Option<i32>, tail: &str) -> CheckRun {
        CheckRun {
            command: command.into(),
            exit_code,
            duration_ms: 5,
            counts: counts(tail),
            note: None,
            tail: tail.into(),
        }
    }

    #[test]
    fn the_gaps_name_the_failing_checks_first_and_keep_their_output() {
        let runs = [
            run(
                "cargo test",
                Some(101),
                "test result: FAILED. 3 passed; 1 failed; 0 ignored",
            ),
            run("npm test", Some(0), "ok"),
        ];
        let g = gaps(&runs);
        assert_eq!(
            failing_key(&g),
            "The goal is not complete: its checks must all pass, and these fail: `cargo test`."
        );
        assert!(g.contains("exit code 101; 3 passed, 1 failed"), "{g}");
        assert!(g.contains("test result: FAILED"));
        assert!(!g.contains("npm test"));
    }

    #[test]
    fn exit_codes_and_tails_are_read_from_the_shell_tools_text() {
        assert_eq!(exit_code("out\n[exit code: 101]"), Some(101));
        assert_eq!(exit_code("out\n[timed out after 5 ms]"), None);
        let long = format!("{}\nlast line", "x".repeat(10_000));
        let t = tail(&long, 100);
        assert!(t.ends_with("last line") && t.chars().count() <= 102, "{t}");
    }
}

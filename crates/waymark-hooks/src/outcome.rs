//! What a hook's run says, read as Claude Code reads it: exit 0 proceeds (its stdout may be
//! JSON with `decision: "block"` and a `reason`, `hookSpecificOutput.permissionDecision`
//! `allow | deny | ask`, or `additionalContext`); exit 2 blocks, with stderr for the model;
//! any other exit code is an error shown to the user, and the run proceeds. A hook that timed
//! out, crashed or could not start is a failure: the caller decides whether that blocks
//! (before a tool call it does) or proceeds with a warning.

use crate::run::{Ended, Run};
use serde_json::Value;

/// The most of a hook's words passed on to the model or the user.
const MAX_SAID: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// Go on; with context for the model when the hook gave some.
    Proceed { context: Option<String> },
    /// Stop what was about to happen, with why (for the model).
    Block(String),
    /// Have the user asked, with why.
    Ask(String),
    /// A non-blocking error (an exit code other than 0 and 2), for the user.
    Error(String),
    /// It timed out, crashed or never started: what happened, for the user and the model.
    Failed(String),
}

impl Said {
    /// The outcome in a few words, for the `hook.ran` event; `None` for a plain proceed.
    pub fn outcome(&self) -> Option<String> {
        match self {
            Said::Proceed { context: None } => None,
            Said::Proceed { context: Some(_) } => Some("added context".into()),
            Said::Block(_) => Some("blocked".into()),
            Said::Ask(_) => Some("asked the user".into()),
            Said::Error(e) => Some(format!("error: {}", clip(e, 200))),
            Said::Failed(e) => Some(format!("failed: {e}")),
        }
    }
}

/// Reads a run. `plain_stdout_is_context`: the event takes a hook's plain stdout as context
/// for the model (`UserPromptSubmit`, `SessionStart`, as in Claude Code).
pub fn read(run: &Run, plain_stdout_is_context: bool) -> Said {
    match &run.ended {
        Ended::Exited(0) if run.cut => Said::Failed(format!(
            "its output was longer than {} KiB, so what it decided cannot be read",
            crate::run::MAX_OUTPUT / 1024
        )),
        Ended::Exited(0) => read_stdout(&run.stdout, plain_stdout_is_context),
        Ended::Exited(2) => Said::Block(clip(
            if run.stderr.trim().is_empty() {
                "the hook blocked it (exit 2) without saying why"
            } else {
                run.stderr.trim()
            },
            MAX_SAID,
        )),
        // The shell could not find or run the hook's program, or it died of a signal: a
        // crash, not an answer.
        Ended::Exited(code @ (126 | 127)) => Said::Failed(format!(
            "its command could not be run (exit {code}){}",
            if run.stderr.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", clip(run.stderr.trim(), 500))
            }
        )),
        Ended::Exited(code) if *code >= 128 => {
            Said::Failed(format!("it crashed (exit {code}, killed by a signal)"))
        }
        Ended::Exited(code) => Said::Error(format!(
            "exit {code}{}",
            if run.stderr.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", clip(run.stderr.trim(), MAX_SAID))
            }
        )),
        Ended::Signalled => Said::Failed("it crashed (killed by a signal)".into()),
        Ended::TimedOut => {
            Said::Failed("it did not finish within its timeout and was killed".into())
        }
        Ended::Stopped => Said::Failed("stopped by the user".into()),
        Ended::NotStarted(e) => Said::Failed(format!("it could not be started: {e}")),
    }
}

fn read_stdout(stdout: &str, plain_is_context: bool) -> Said {
    let trimmed = stdout.trim();
    let Ok(Value::Object(json)) = serde_json::from_str::<Value>(trimmed) else {
        let context = (plain_is_context && !trimmed.is_empty()).then(|| clip(trimmed, MAX_SAID));
        return Said::Proceed { context };
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(|s| clip(s.trim(), MAX_SAID));
    let specific = json.get("hookSpecificOutput").and_then(Value::as_object);
    let reason = text(json.get("reason"))
        .or_else(|| specific.and_then(|s| text(s.get("permissionDecisionReason"))));
    if json.get("continue") == Some(&Value::Bool(false)) {
        return Said::Block(
            text(json.get("stopReason"))
                .or(reason)
                .unwrap_or_else(|| "the hook said not to continue".into()),
        );
    }
    match specific
        .and_then(|s| s.get("permissionDecision"))
        .and_then(Value::as_str)
    {
        Some("deny") => {
            return Said::Block(reason.unwrap_or_else(|| "the hook denied it".into()));
        }
        Some("ask") => return Said::Ask(reason.unwrap_or_else(|| "a hook asks".into())),
        _ => {}
    }
    if json.get("decision").and_then(Value::as_str) == Some("block") {
        return Said::Block(reason.unwrap_or_else(|| "the hook blocked it".into()));
    }
    let context = specific
        .and_then(|s| text(s.get("additionalContext")))
        .or_else(|| text(json.get("additionalContext")))
        .filter(|c| !c.is_empty());
    Said::Proceed { context }
}

fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Several hooks' words on one event, together: a block over a question over proceeding;
/// contexts joined.
pub fn combine(all: Vec<Said>) -> Said {
    let mut blocks = Vec::new();
    let mut asks = Vec::new();
    let mut contexts = Vec::new();
    for s in all {
        match s {
            Said::Block(why) | Said::Failed(why) => blocks.push(why),
            Said::Ask(why) => asks.push(why),
            Said::Proceed { context: Some(c) } => contexts.push(c),
            Said::Proceed { context: None } | Said::Error(_) => {}
        }
    }
    if !blocks.is_empty() {
        return Said::Block(blocks.join("\n"));
    }
    if !asks.is_empty() {
        return Said::Ask(asks.join("; "));
    }
    Said::Proceed {
        context: (!contexts.is_empty()).then(|| contexts.join("\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ran(ended: Ended, stdout: &str, stderr: &str) -> Run {
        Run {
            ended,
            stdout: stdout.into(),
            stderr: stderr.into(),
            cut: false,
            took: Duration::ZERO,
        }
    }

    #[test]
    fn exit_codes_read_as_claude_code_reads_them() {
        assert_eq!(
            read(&ran(Ended::Exited(0), "", ""), false),
            Said::Proceed { context: None }
        );
        assert_eq!(
            read(&ran(Ended::Exited(2), "", "no rm here\n"), false),
            Said::Block("no rm here".into())
        );
        assert!(
            matches!(read(&ran(Ended::Exited(1), "", "oops"), false), Said::Error(e) if e.contains("oops"))
        );
        assert!(matches!(
            read(&ran(Ended::TimedOut, "", ""), false),
            Said::Failed(_)
        ));
        assert!(matches!(
            read(&ran(Ended::Signalled, "", ""), false),
            Said::Failed(_)
        ));
        // A hook whose program is missing, not executable, or killed by a signal crashed.
        for code in [126, 127, 137] {
            assert!(
                matches!(
                    read(&ran(Ended::Exited(code), "", ""), false),
                    Said::Failed(_)
                ),
                "{code}"
            );
        }
        // A deny cut off in the middle is not a proceed.
        let mut long = ran(
            Ended::Exited(0),
            r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "xxx"#,
            "",
        );
        long.cut = true;
        assert!(matches!(read(&long, false), Said::Failed(_)));
    }

    #[test]
    fn json_output_decides() {
        let deny = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not on main"}}"#;
        assert_eq!(
            read(&ran(Ended::Exited(0), deny, ""), false),
            Said::Block("not on main".into())
        );
        let ask = r#"{"hookSpecificOutput": {"permissionDecision": "ask"}}"#;
        assert!(matches!(
            read(&ran(Ended::Exited(0), ask, ""), false),
            Said::Ask(_)
        ));
        let allow = r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#;
        assert_eq!(
            read(&ran(Ended::Exited(0), allow, ""), false),
            Said::Proceed { context: None }
        );
        let block = r#"{"decision": "block", "reason": "tests fail"}"#;
        assert_eq!(
            read(&ran(Ended::Exited(0), block, ""), false),
            Said::Block("tests fail".into())
        );
        let ctx = r#"{"hookSpecificOutput": {"additionalContext": "today is Monday"}}"#;
        assert_eq!(
            read(&ran(Ended::Exited(0), ctx, ""), false),
            Said::Proceed {
                context: Some("today is Monday".into())
            }
        );
        assert_eq!(
            read(&ran(Ended::Exited(0), "plain words\n", ""), true),
            Said::Proceed {
                context: Some("plain words".into())
            }
        );
        assert_eq!(
            read(&ran(Ended::Exited(0), "plain words\n", ""), false),
            Said::Proceed { context: None }
        );
    }

    #[test]
    fn the_strictest_word_wins() {
        let all = vec![
            Said::Proceed {
                context: Some("a".into()),
            },
            Said::Ask("check".into()),
            Said::Error("x".into()),
        ];
        assert_eq!(combine(all), Said::Ask("check".into()));
        let all = vec![Said::Ask("check".into()), Said::Failed("timed out".into())];
        assert_eq!(combine(all), Said::Block("timed out".into()));
    }
}

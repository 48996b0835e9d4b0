//! The `before_tool_call` chain: every tool call passes each guard in order (plan guard,
//! permission, goal budget); the first guard that does not allow decides. A guard may allow,
//! deny with a message for the model, or ask the user through a questionnaire.

use crate::store::SessionRow;
use crate::tools::Tool;
use serde_json::{Value, json};
use std::path::Path;
use waymark_protocol::{Answer, PermissionMode, QuestionnaireKind};

/// What a guard sees of a call.
pub struct GuardCall<'a> {
    pub tool: &'a dyn Tool,
    pub call_id: &'a str,
    pub arguments: &'a Value,
    pub session: &'a SessionRow,
    /// Canonical workspace and session artifacts folders.
    pub workspace: &'a Path,
    pub artifacts: &'a Path,
    /// Whether a shell command of this call would run in the read-only sandbox.
    pub shell_sandboxed: bool,
    /// "Allow for session" grants: `(tool, prefix)`.
    pub grants: &'a [(String, String)],
    /// The user's answer to a questionnaire this call raised earlier, if any.
    pub answer: Option<(QuestionnaireKind, &'a Answer)>,
    /// The turn the call belongs to.
    pub turn_id: i64,
    /// The session, for the runtime's own guards (the goal budget).
    pub(crate) core: Option<&'a crate::session::SessionCore>,
}

/// A guard's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum GuardDecision {
    Allow,
    /// Refuse; the message goes to the model as the tool result.
    Deny(String),
    /// Ask the user; the turn parks until the questionnaire is answered.
    Ask {
        kind: QuestionnaireKind,
        payload: Value,
    },
}

/// One link of the chain.
pub trait ToolGuard: Send + Sync {
    fn name(&self) -> &'static str;
    fn before_tool_call(&self, call: &GuardCall<'_>) -> GuardDecision;
}

/// Runs the chain: the first verdict other than `Allow` wins.
pub fn run_chain(guards: &[std::sync::Arc<dyn ToolGuard>], call: &GuardCall<'_>) -> GuardDecision {
    for g in guards {
        match g.before_tool_call(call) {
            GuardDecision::Allow => continue,
            other => return other,
        }
    }
    GuardDecision::Allow
}

/// Shell control characters after which a command prefix no longer describes the command.
const SHELL_META: &[char] = &[
    ';', '&', '|', '`', '$', '>', '<', '(', ')', '\n', '\\', '*', '?', '{', '}',
];

/// Programs whose first argument names a subcommand, so `cargo test` and `cargo publish` are
/// granted separately.
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "apt", "brew", "bun", "cargo", "deno", "docker", "dotnet", "gh", "git", "go", "gradle",
    "kubectl", "make", "mvn", "npm", "npx", "pip", "pip3", "pnpm", "poetry", "rustup", "uv",
    "yarn",
];

/// The prefix an "allow for session" answer grants for a shell command: its first word, and
/// the second too when the program takes subcommands (`cargo test`, `git status`). `None`
/// when the command chains or redirects, since a prefix would then say nothing about what runs.
pub fn command_prefix(command: &str) -> Option<String> {
    let c = command.trim();
    if c.is_empty() || c.contains(SHELL_META) {
        return None;
    }
    let mut words = c.split_whitespace();
    let first = words.next()?;
    match words.next() {
        Some(second)
            if SUBCOMMAND_PROGRAMS.contains(&first)
                && !second.starts_with('-')
                && second
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_') =>
        {
            Some(format!("{first} {second}"))
        }
        _ => Some(first.to_string()),
    }
}

fn prefix_covers(prefix: &str, command: &str) -> bool {
    let c = command.trim();
    if c.contains(SHELL_META) {
        return false;
    }
    c == prefix || c.starts_with(&format!("{prefix} "))
}

/// The permission-mode guard: writes and shell commands ask, are allowed or refused
/// according to the session's permission mode and the user's grants.
pub struct PermissionGuard;

impl ToolGuard for PermissionGuard {
    fn name(&self) -> &'static str {
        "permission"
    }

    fn before_tool_call(&self, call: &GuardCall<'_>) -> GuardDecision {
        let tool = call.tool;
        let mode = call.session.permission_mode;
        let shell = tool.is_shell();
        if !shell && !tool.is_mutating() {
            return GuardDecision::Allow;
        }
        let needs_asking = match mode {
            PermissionMode::Auto => false,
            PermissionMode::AutoEdit => shell,
            PermissionMode::Ask => true,
            PermissionMode::ReadOnly => {
                return GuardDecision::Deny(format!(
                    "`{}` is not allowed: the session is in read-only permission mode. Use read-only tools, or ask the user to change the permission mode.",
                    tool.name()
                ));
            }
        };
        if !needs_asking {
            return GuardDecision::Allow;
        }
        // The session's own artifacts folder (the plan file) is not the user's project.
        if !shell
            && let Some(p) = call.arguments.get("path").and_then(Value::as_str)
            && crate::tools::fs_policy::resolve_target(call.workspace, p)
                .is_ok_and(|t| t.starts_with(call.artifacts))
        {
            return GuardDecision::Allow;
        }
        if let Some(decision) = permission_answered(
            call,
            "call",
            "Do not retry it; ask or take another approach.",
        ) {
            return decision;
        }
        let command = call
            .arguments
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or("");
        let granted = call.grants.iter().any(|(t, prefix)| {
            t == tool.name()
                && (prefix.is_empty() && !shell
                    || shell && !prefix.is_empty() && prefix_covers(prefix, command))
        });
        if granted {
            return GuardDecision::Allow;
        }
        let (summary, prefix) = if shell {
            (format!("run `{command}`"), command_prefix(command))
        } else {
            let path = call
                .arguments
                .get("path")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| "files named in a patch".into());
            (format!("{} {path}", tool.name()), Some(String::new()))
        };
        GuardDecision::Ask {
            kind: QuestionnaireKind::Permission,
            payload: json!({
                "tool": tool.name(),
                "call_id": call.call_id,
                "arguments": call.arguments,
                "summary": summary,
                "prefix": prefix,
            }),
        }
    }
}

/// What the user's answer to this call's permission question decides, if it was answered:
/// allowed, or denied with their message (else "The user denied this `what`. `otherwise`").
pub(crate) fn permission_answered(
    call: &GuardCall<'_>,
    what: &str,
    otherwise: &str,
) -> Option<GuardDecision> {
    let Some((QuestionnaireKind::Permission, answer)) = call.answer else {
        return None;
    };
    Some(match answer {
        Answer::AllowOnce | Answer::AllowForSession => GuardDecision::Allow,
        Answer::Deny { message } => GuardDecision::Deny(match message {
            Some(m) if !m.trim().is_empty() => format!("The user denied this {what}: {m}"),
            _ => format!("The user denied this {what}. {otherwise}"),
        }),
        // Answers of other kinds are refused at answer time; treat as not granted.
        Answer::Approve { .. }
        | Answer::Defer
        | Answer::Revise { .. }
        | Answer::Reject
        | Answer::Withdraw => GuardDecision::Deny("The permission request was not granted.".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Bash, ReadFile, Write};
    use waymark_protocol::InteractionMode;

    fn session(mode: PermissionMode) -> SessionRow {
        SessionRow {
            id: "s".into(),
            workspace: "/ws".into(),
            title: None,
            model: None,
            interaction_mode: InteractionMode::Default,
            permission_mode: mode,
            created_at: 0,
            updated_at: 0,
        }
    }

    fn decide(
        tool: &dyn Tool,
        mode: PermissionMode,
        args: Value,
        grants: &[(String, String)],
        answer: Option<&Answer>,
    ) -> GuardDecision {
        let s = session(mode);
        PermissionGuard.before_tool_call(&GuardCall {
            tool,
            call_id: "c1",
            arguments: &args,
            session: &s,
            workspace: Path::new("/nonexistent-ws"),
            artifacts: Path::new("/nonexistent-artifacts"),
            shell_sandboxed: false,
            grants,
            answer: answer.map(|a| (QuestionnaireKind::Permission, a)),
            turn_id: 1,
            core: None,
        })
    }

    #[test]
    fn modes_decide_writes_and_shell() {
        let w = json!({"path": "a", "content": ""});
        let b = json!({"command": "ls"});
        assert_eq!(
            decide(
                &ReadFile,
                PermissionMode::ReadOnly,
                json!({"path": "a"}),
                &[],
                None
            ),
            GuardDecision::Allow
        );
        assert!(matches!(
            decide(&Write, PermissionMode::Ask, w.clone(), &[], None),
            GuardDecision::Ask { .. }
        ));
        assert_eq!(
            decide(&Write, PermissionMode::AutoEdit, w.clone(), &[], None),
            GuardDecision::Allow
        );
        assert!(matches!(
            decide(&Bash, PermissionMode::AutoEdit, b.clone(), &[], None),
            GuardDecision::Ask { .. }
        ));
        assert_eq!(
            decide(&Bash, PermissionMode::Auto, b.clone(), &[], None),
            GuardDecision::Allow
        );
        assert!(matches!(
            decide(&Write, PermissionMode::ReadOnly, w, &[], None),
            GuardDecision::Deny(_)
        ));
        assert!(matches!(
            decide(&Bash, PermissionMode::ReadOnly, b, &[], None),
            GuardDecision::Deny(_)
        ));
    }

    #[test]
    fn answers_and_grants() {
        let b = json!({"command": "cargo test -p x"});
        assert_eq!(
            decide(
                &Bash,
                PermissionMode::Ask,
                b.clone(),
                &[],
                Some(&Answer::AllowOnce)
            ),
            GuardDecision::Allow
        );
        let denied = decide(
            &Bash,
            PermissionMode::Ask,
            b.clone(),
            &[],
            Some(&Answer::Deny {
                message: Some("use nextest".into()),
            }),
        );
        assert_eq!(
            denied,
            GuardDecision::Deny("The user denied this call: use nextest".into())
        );
        let grants = vec![("bash".to_string(), "cargo test".to_string())];
        assert_eq!(
            decide(&Bash, PermissionMode::Ask, b, &grants, None),
            GuardDecision::Allow
        );
        let chained = json!({"command": "cargo test; rm -rf /"});
        assert!(matches!(
            decide(&Bash, PermissionMode::Ask, chained, &grants, None),
            GuardDecision::Ask { .. }
        ));
        let other = json!({"command": "cargo testify"});
        assert!(matches!(
            decide(&Bash, PermissionMode::Ask, other, &grants, None),
            GuardDecision::Ask { .. }
        ));
        let wgrant = vec![("write".to_string(), String::new())];
        assert_eq!(
            decide(
                &Write,
                PermissionMode::Ask,
                json!({"path": "a", "content": ""}),
                &wgrant,
                None
            ),
            GuardDecision::Allow
        );
    }

    #[test]
    fn prefixes() {
        assert_eq!(
            command_prefix("cargo test -p core").as_deref(),
            Some("cargo test")
        );
        assert_eq!(command_prefix("ls -la").as_deref(), Some("ls"));
        assert_eq!(command_prefix("echo one").as_deref(), Some("echo"));
        assert_eq!(command_prefix("make && rm x"), None);
        assert_eq!(command_prefix("echo $(id)"), None);
    }
}

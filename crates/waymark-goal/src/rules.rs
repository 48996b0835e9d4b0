//! What goals add to the permission guard: the reviewer's read-only policy, and the model
//! raising its own goal's budget, which is the user's decision.

use serde_json::Value;
use waymark_extension::guard::{GuardCall, GuardDecision, permission_answered};
use waymark_extension::rules::PermissionRule;
use waymark_protocol::display::escape_line;
use waymark_protocol::{CallActor, GrantOffer, PermissionMode, PermissionQuestion};

/// Tools the goal's reviewer may use besides the sandboxed shell.
pub const VERIFIER_TOOLS: &[&str] = &["read_file", "list_dir", "glob", "grep"];

pub struct GoalRules;

impl PermissionRule for GoalRules {
    fn name(&self) -> &'static str {
        "goal"
    }

    fn decide(&self, call: &GuardCall<'_>) -> Option<GuardDecision> {
        if call.actor == CallActor::Verifier {
            return Some(verifier_policy(call));
        }
        if let Some(check) = wait_check(call) {
            return Some(check_decision(call, call.session.permission_mode, check));
        }
        budget_change(call).map(|b| budget_decision(call, call.session.permission_mode, b))
    }

    fn protects(&self, call: &GuardCall<'_>, target: &std::path::Path) -> Option<String> {
        if !call.actor.under_session_policy() {
            return None;
        }
        let api = call.api?;
        // `/`-separated with no `.` parts, however the path was spelled.
        let rel: Vec<&str> = target
            .strip_prefix(call.workspace)
            .ok()?
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => n.to_str(),
                _ => None,
            })
            .collect();
        crate::baseline::protected_now(api, &rel.join("/"))
    }
}

/// The command a `wait` call asks the runtime to run as its check (G-47), if it gives one.
fn wait_check(call: &GuardCall<'_>) -> Option<String> {
    (call.tool.name() == "wait")
        .then(|| call.arguments.get("check").and_then(Value::as_str))
        .flatten()
        .map(str::to_string)
}

/// A wait's check is a command run again and again while nobody watches: it is allowed as
/// a command would be. It runs in `auto`; read-only mode refuses it; otherwise the user is
/// asked once, shown the command (no grant covers it).
fn check_decision(call: &GuardCall<'_>, mode: PermissionMode, check: String) -> GuardDecision {
    match mode {
        PermissionMode::Auto => return GuardDecision::Allow,
        PermissionMode::ReadOnly => {
            return GuardDecision::Deny(
                "A wait's check runs a command, which read-only permission mode does not allow. Wait for a time instead (`until` or `seconds`).".into(),
            );
        }
        PermissionMode::Ask | PermissionMode::AutoEdit => {}
    }
    if let Some(decision) = permission_answered(
        call,
        "wait check",
        "Wait for a time instead (`until` or `seconds`), or go on without waiting.",
    ) {
        return decision;
    }
    let every = call
        .arguments
        .get("every")
        .and_then(Value::as_u64)
        .unwrap_or(u64::from(super::wait_terms::DEFAULT_EVERY_SECONDS));
    GuardDecision::Ask(Box::new(PermissionQuestion {
        tool: call.tool.name().to_string(),
        shell: false,
        scope: None,
        arguments: call.arguments.clone(),
        summary: format!(
            "wait, running `{}` read-only every {every} s until it succeeds",
            escape_line(&check)
        ),
        command: Some(check),
        files: Vec::new(),
        git: false,
        grants: GrantOffer::default(),
        call_id: String::new(),
        call_sha256: String::new(),
    }))
}

/// The reviewer's read-only policy, whatever the session's permission mode: reading and
/// searching, and the shell only when it runs sandboxed. Nothing else, and it never asks.
fn verifier_policy(call: &GuardCall<'_>) -> GuardDecision {
    let tool = call.tool;
    let allowed =
        VERIFIER_TOOLS.contains(&tool.name()) || (tool.effects().processes && call.shell_sandboxed);
    if allowed && !tool.effects().network {
        return GuardDecision::Allow;
    }
    GuardDecision::Deny(format!(
        "`{}` is not available to the reviewer: it may only read, search and run sandboxed commands.",
        tool.name()
    ))
}

/// The token budget a call asks to set, when it is the model changing its goal's budget
/// (`update_goal` in mode `token_budget`).
fn budget_change(call: &GuardCall<'_>) -> Option<String> {
    (call.tool.name() == "update_goal"
        && call.arguments.get("mode").and_then(Value::as_str) == Some("token_budget"))
    .then(|| {
        call.arguments
            .get("token_budget")
            .map(|b| escape_line(&b.to_string()))
            .unwrap_or_else(|| "(none given)".into())
    })
}

/// The model changing its own goal's budget is the user's decision: it asks in every mode
/// but `auto` (refused in read-only), is answered once, and no grant covers it.
fn budget_decision(call: &GuardCall<'_>, mode: PermissionMode, budget: String) -> GuardDecision {
    match mode {
        PermissionMode::Auto => return GuardDecision::Allow,
        PermissionMode::ReadOnly => {
            return GuardDecision::Deny(
                "The goal's budget cannot change in read-only permission mode; the user can change it with /goal tokens=…".into(),
            );
        }
        PermissionMode::Ask | PermissionMode::AutoEdit => {}
    }
    if let Some(decision) = permission_answered(
        call,
        "budget change",
        "Keep working within the current budget.",
    ) {
        return decision;
    }
    GuardDecision::Ask(Box::new(PermissionQuestion {
        tool: call.tool.name().to_string(),
        shell: false,
        scope: None,
        arguments: call.arguments.clone(),
        summary: format!("set the goal's token budget to {budget}"),
        command: None,
        files: Vec::new(),
        git: false,
        grants: GrantOffer::default(),
        call_id: String::new(),
        call_sha256: String::new(),
    }))
}

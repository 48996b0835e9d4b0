//! The hard layer of plan mode (PM-13, PM-14): before every tool call in plan mode, writes
//! are refused unless `write` or `edit` targets exactly the canonical plan file, and the shell
//! runs only sandboxed — or, where the sandbox is unavailable, only with the user's consent.

use serde_json::Value;
use waymark_extension::guard::{
    GuardCall, GuardDecision, ToolGuard, permission_answered, shell_question,
};
use waymark_protocol::InteractionMode;
use waymark_tools::fs_policy::resolve_target;

pub(crate) struct PlanGuard;

/// Tools that may touch the plan file (and nothing else) in plan mode.
const PLAN_WRITERS: &[&str] = &["write", "edit"];

impl ToolGuard for PlanGuard {
    fn name(&self) -> &'static str {
        "plan"
    }

    fn before_tool_call(&self, call: &GuardCall<'_>) -> GuardDecision {
        if call.session.interaction_mode != InteractionMode::Plan {
            return GuardDecision::Allow;
        }
        let tool = call.tool;
        let plan = super::plan_path(call.artifacts);
        // Nothing leaves the machine from plan mode but what the sandboxed shell may send
        // and a read of the web (investigation, asked about as the permission mode says);
        // judged first: a tool that runs programs and reaches the network is not a shell.
        let effects = tool.effects();
        let reads_the_web =
            effects.network && !effects.writes && !effects.processes && !effects.external;
        if reads_the_web {
            return GuardDecision::Allow;
        }
        if effects.network {
            return GuardDecision::Deny(format!(
                "Plan mode: `{}` is not allowed: it reaches the network. Keep investigating with the read-only tools.",
                tool.name()
            ));
        }
        if tool.effects().processes {
            if call.shell_sandboxed {
                return GuardDecision::Allow;
            }
            if let Some(decision) =
                permission_answered(call, "command", "Use the read-only tools instead.")
            {
                return decision;
            }
            let command = call
                .arguments
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or("");
            let mut q = shell_question(call, command);
            q.summary = format!(
                "{} in plan mode (the shell sandbox is incomplete here — missing: {} — so the command is not confined)",
                q.summary,
                missing_layers(call)
            );
            // Every unconfined command in plan mode is asked about: nothing to grant.
            q.scope = Some(crate::mode::PLAN_SCOPE.to_string());
            return GuardDecision::Ask(Box::new(q));
        }
        if !tool.effects().writes {
            return GuardDecision::Allow;
        }
        let refusal = || {
            GuardDecision::Deny(format!(
                "Plan mode: `{}` is not allowed. Nothing may be created, changed or deleted except the plan file, which you write with `write` or `edit` at exactly {}. Keep investigating with read-only tools.",
                tool.name(),
                plan.display()
            ))
        };
        if !PLAN_WRITERS.contains(&tool.name()) {
            return refusal();
        }
        let Some(raw) = call.arguments.get("path").and_then(Value::as_str) else {
            return refusal();
        };
        match resolve_target(call.workspace, raw) {
            Ok(target) if target == plan => GuardDecision::Allow,
            Ok(_) | Err(_) => refusal(),
        }
    }
}

/// The sandbox layers that do not hold in this session, for the question.
fn missing_layers(call: &GuardCall<'_>) -> String {
    match call.api {
        Some(api) => api
            .sandbox()
            .probe()
            .layers
            .missing()
            .iter()
            .map(|l| l.describe())
            .collect::<Vec<_>>()
            .join("; "),
        None => "unknown".into(),
    }
}

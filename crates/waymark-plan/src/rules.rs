//! What plan mode adds to the permission guard: the plan file is written without asking, and
//! grants given while planning end with plan mode (their scope, [`PLAN_SCOPE`]).

use crate::mode::PLAN_SCOPE;
use std::path::PathBuf;
use waymark_extension::guard::GuardCall;
use waymark_extension::rules::PermissionRule;
use waymark_protocol::InteractionMode;
use waymark_store::SessionRow;

pub struct PlanRules;

impl PermissionRule for PlanRules {
    fn name(&self) -> &'static str {
        "plan"
    }

    fn allows_write(&self, call: &GuardCall<'_>, targets: &[PathBuf]) -> bool {
        // Only the tools plan mode writes its plan with, and only that file.
        let plan_file = crate::mode::plan_path(call.artifacts);
        call.session.interaction_mode == InteractionMode::Plan
            && matches!(call.tool.name(), "write" | "edit")
            && targets.iter().all(|t| *t == plan_file)
    }

    fn scope(&self, session: &SessionRow) -> Option<&'static str> {
        (session.interaction_mode == InteractionMode::Plan).then_some(PLAN_SCOPE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use waymark_protocol::PermissionMode;
    use waymark_tools::{Append, MultiEdit, Tool, Write};

    /// The allowance covers the plan file, in plan mode, through `write` and `edit` only.
    #[test]
    fn only_the_plan_file_through_the_plan_tools_in_plan_mode() {
        let artifacts = std::path::Path::new("/s/artifacts");
        let plan = crate::mode::plan_path(artifacts);
        let row = |mode| SessionRow {
            id: "s".into(),
            workspace: "/ws".into(),
            title: None,
            model: None,
            interaction_mode: mode,
            permission_mode: PermissionMode::Ask,
            created_at: 0,
            updated_at: 0,
        };
        let args = serde_json::json!({});
        let allows = |tool: &dyn Tool, mode, targets: &[PathBuf]| {
            let s = row(mode);
            PlanRules.allows_write(
                &GuardCall {
                    tool,
                    call_id: "c",
                    arguments: &args,
                    session: &s,
                    workspace: std::path::Path::new("/ws"),
                    artifacts,
                    shell_sandboxed: false,
                    grants: &[],
                    answer: None,
                    turn_id: 1,
                    actor: waymark_protocol::CallActor::Main,
                    api: None,
                    protected: &Default::default(),
                },
                targets,
            )
        };
        let only_plan = [plan.clone()];
        assert!(allows(&Write, InteractionMode::Plan, &only_plan));
        assert!(!allows(&Write, InteractionMode::Default, &only_plan));
        assert!(!allows(&Append, InteractionMode::Plan, &only_plan));
        assert!(!allows(&MultiEdit, InteractionMode::Plan, &only_plan));
        let with_other = [plan, artifacts.join("notes.md")];
        assert!(!allows(&Write, InteractionMode::Plan, &with_other));
    }
}

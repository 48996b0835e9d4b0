//! What plan mode adds to the permission guard: the plan file is written without asking, and
//! grants given while planning end with plan mode (their scope, [`PLAN_SCOPE`]).

use std::path::PathBuf;
use waymark_extension::guard::GuardCall;
use waymark_extension::rules::PermissionRule;
use waymark_protocol::InteractionMode;
use waymark_store::SessionRow;

/// The scope of grants given in plan mode; cleared when plan mode ends.
pub const PLAN_SCOPE: &str = "plan";

pub struct PlanRules;

impl PermissionRule for PlanRules {
    fn name(&self) -> &'static str {
        "plan"
    }

    fn allows_write(&self, call: &GuardCall<'_>, targets: &[PathBuf]) -> bool {
        let plan_file = super::plan_path(call.artifacts);
        call.session.interaction_mode == InteractionMode::Plan
            && targets.iter().all(|t| *t == plan_file)
    }

    fn scope(&self, session: &SessionRow) -> Option<&'static str> {
        (session.interaction_mode == InteractionMode::Plan).then_some(PLAN_SCOPE)
    }
}

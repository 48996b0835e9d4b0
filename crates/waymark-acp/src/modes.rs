//! ACP session modes: Waymark's permission modes, and plan mode beside them. The editor shows
//! one selector; Waymark keeps plan mode (what the agent may do: investigate and write a plan)
//! apart from the permission mode (what asks first), so "plan" switches plan mode on and any
//! other mode switches it off and sets the permission mode.

use agent_client_protocol::v1::schema as acp;
use waymark_protocol::{InteractionMode, PermissionMode};

/// The mode id of plan mode.
pub(crate) const PLAN: &str = "plan";
/// The mode id of Waymark's `ask` permission mode: the default one.
const DEFAULT: &str = "default";

/// The modes the editor offers.
pub(crate) fn all() -> Vec<acp::SessionMode> {
    vec![
        acp::SessionMode::new(DEFAULT, "Ask").description("Writes and shell commands ask first"),
        acp::SessionMode::new(PermissionMode::AutoEdit.as_str(), "Accept edits")
            .description("Writes go ahead; shell commands ask"),
        acp::SessionMode::new(PLAN, "Plan")
            .description("Investigate read-only and write a plan for your review"),
        acp::SessionMode::new(PermissionMode::ReadOnly.as_str(), "Read only")
            .description("Writes and shell commands are refused"),
        acp::SessionMode::new(PermissionMode::Auto.as_str(), "Allow everything")
            .description("Nothing asks first"),
    ]
}

/// The mode a session is in.
pub(crate) fn current(interaction: InteractionMode, permission: PermissionMode) -> &'static str {
    match (interaction, permission) {
        (InteractionMode::Plan, _) => PLAN,
        (_, PermissionMode::Ask) => DEFAULT,
        (_, p) => p.as_str(),
    }
}

/// The modes, with `current` selected.
pub(crate) fn state(current: &str) -> acp::SessionModeState {
    acp::SessionModeState::new(current.to_string(), all())
}

/// What choosing mode `id` asks of Waymark: plan mode on, or plan mode off and a permission
/// mode. `None` for a mode Waymark does not have.
pub(crate) fn parse(id: &str) -> Option<Option<PermissionMode>> {
    match id {
        PLAN => Some(None),
        DEFAULT => Some(Some(PermissionMode::Ask)),
        _ => PermissionMode::parse(id).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_offered_is_one_waymark_has() {
        for m in all() {
            assert!(parse(&m.id.0).is_some(), "{}", m.id.0);
        }
        assert_eq!(parse("yolo"), None);
        assert_eq!(
            current(InteractionMode::Default, PermissionMode::Ask),
            "default"
        );
        assert_eq!(current(InteractionMode::Plan, PermissionMode::Auto), PLAN);
        assert_eq!(
            current(InteractionMode::Default, PermissionMode::AutoEdit),
            "auto-edit"
        );
    }
}

//! Permission rules: what an extension adds to the engine's permission guard. The guard
//! knows the permission modes, grants, private places and the files no grant covers; every
//! policy tied to a feature (the plan file, a budget raise, the reviewer's read-only tools)
//! comes from the extension that owns the feature, as a rule.
//!
//! The guard asks the rules, in the extensions' order, at three points:
//! 1. [`PermissionRule::decide`], before the permission mode: of the rules that decide, the
//!    strictest verdict wins (a refusal over a question over an allowance), so the order of
//!    the extensions never widens what one of them refuses. A call by the session's agent or
//!    a subagent it started goes on to the permission mode (a rule written for the agent
//!    holds a subagent too: check `CallActor::under_session_policy`, not `Main`); one by
//!    another actor (the reviewer) that no rule decides is refused.
//! 2. [`PermissionRule::allows_write`], for a write whose every target is inside the
//!    workspace or the artifacts folder and is no file that always asks: any rule may let it
//!    go without asking.
//!    Before that, [`PermissionRule::protects`] may name a target as protected: the write
//!    then asks in every mode, `auto` included, and no grant covers it.
//! 3. [`PermissionRule::scope`], when a question is asked or answered: the scope the grant
//!    belongs to. The owner clears a scope's grants when it ends
//!    (`Tx::drop_scoped_grants`); while a scope is in force, reading a private place asks
//!    even in `auto`.

use crate::guard::{GuardCall, GuardDecision};
use std::path::PathBuf;
use waymark_store::SessionRow;

pub trait PermissionRule: Send + Sync {
    /// A short name for logs and tests.
    fn name(&self) -> &'static str;
    /// Decides `call` before the permission mode does; `None` leaves it to the next rule.
    fn decide(&self, _call: &GuardCall<'_>) -> Option<GuardDecision> {
        None
    }
    /// Whether writing `targets` may go without asking in any permission mode that writes.
    fn allows_write(&self, _call: &GuardCall<'_>, _targets: &[PathBuf]) -> bool {
        false
    }
    /// Why writing `target` (canonical, inside the workspace) must be the user's decision in
    /// every permission mode, `auto` included, with no grant covering it: a goal's protected
    /// files (G-52). `None`: this rule does not protect it.
    fn protects(&self, _call: &GuardCall<'_>, _target: &std::path::Path) -> Option<String> {
        None
    }
    /// The scope grants given now belong to (`None`: the session's).
    fn scope(&self, _session: &SessionRow) -> Option<&'static str> {
        None
    }
}

/// The first scope any rule puts grants under now.
pub fn scope_of(
    rules: &[std::sync::Arc<dyn PermissionRule>],
    session: &SessionRow,
) -> Option<&'static str> {
    rules.iter().find_map(|r| r.scope(session))
}

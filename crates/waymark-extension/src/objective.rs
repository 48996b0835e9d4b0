//! The contract by which plan mode hands an approved plan to goals: an objective, and the
//! service that starts pursuing it (offered by the goal extension through
//! [`crate::services::Services`]).

use crate::SessionApi;
use crate::error::Result;
use waymark_protocol::BudgetChange;
use waymark_store::Tx;

/// A piece of work to pursue as a persistent objective: what an approved plan hands over.
#[derive(Debug, Clone, Default)]
pub struct Objective {
    /// What to achieve, as the agent reads it.
    pub text: String,
    /// How to tell it is achieved.
    pub criteria: Option<String>,
    /// The steps the reviewer gives a verdict on, in order.
    pub steps: Vec<String>,
    /// Commands that define it done (G-49); none: the folder's `goal.checks`.
    pub checks: Vec<String>,
    /// The budget proposed with it, in the `/goal` syntax.
    pub proposed_budget: Option<String>,
    /// The user's budget; an empty change takes the proposed one.
    pub budget: BudgetChange,
}

/// Starts pursuing an objective in the session (offered by the goal extension). Runs in the
/// caller's transaction; refused when another objective is still unfinished or goals are off.
pub trait StartObjective: Send + Sync {
    fn start(&self, tx: &mut Tx<'_>, api: &SessionApi, objective: Objective) -> Result<()>;
}

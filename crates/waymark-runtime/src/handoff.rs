//! "Approve & pursue as goal" in a new worktree (G-36): the plan a session's user is
//! approving is implemented by a new session in a git worktree of the project (G-34), and the
//! plan session records the approval as handed over. The plan session changed nothing in the
//! checkout while it planned (plan mode is read-only), so the worktree starts where the plan
//! was made.

use crate::error::Result;
use crate::runtime::Runtime;
use crate::session::{SessionHandle, SessionSpec};
use waymark_protocol::{Answer, BudgetChange, Op};

impl Runtime {
    /// Approves the plan under review in `plan`'s pending questionnaire `questionnaire_id`
    /// (with `option`, and as a goal with `as_goal`), to be implemented by a new session in
    /// a new worktree of its project (`name` names the branch `waymark/<name>`; none makes
    /// one from the session's title). Returns the new session, which has not started: send
    /// it `Op::Resume` to run the implementation. Nothing is left behind when a step fails:
    /// the new session and its worktree go, and the review stays open.
    pub async fn approve_in_worktree(
        &self,
        plan: &SessionHandle,
        questionnaire_id: &str,
        option: Option<u32>,
        as_goal: Option<BudgetChange>,
        name: Option<&str>,
    ) -> Result<SessionHandle> {
        let (row, ws, _) = self.stored(plan.id())?;
        let hint = row.title.clone().unwrap_or_else(|| "plan".into());
        let made = self.create_session_in_worktree(
            SessionSpec {
                workspace: Some(ws),
                model: row.model.clone(),
                permission_mode: Some(row.permission_mode),
                hold: true,
            },
            name,
            &hint,
        )?;
        let adopted = made
            .submit(Op::AdoptPlan {
                from_session: plan.id().to_string(),
                questionnaire_id: questionnaire_id.to_string(),
                option,
                as_goal,
            })
            .await;
        let answered = match adopted {
            Ok(_) => {
                plan.submit(Op::Answer {
                    questionnaire_id: questionnaire_id.to_string(),
                    answer: Answer::Approve {
                        option,
                        as_goal,
                        handed_to: Some(made.id().to_string()),
                    },
                })
                .await
            }
            Err(e) => Err(e),
        };
        match answered {
            Ok(_) => {
                // Named after the plan session, so the two read as a pair in the list.
                if let Some(t) = &row.title {
                    let _ = self.rename_session(made.id(), t);
                }
                Ok(made)
            }
            Err(e) => {
                let id = made.id().to_string();
                let _ = made.shutdown().await;
                if let Err(gone) = self
                    .worktree_discard(&id)
                    .and_then(|()| self.delete_session(&id))
                {
                    tracing::warn!(session = %id, "the session made for the plan was not removed: {gone}");
                }
                Err(e)
            }
        }
    }
}

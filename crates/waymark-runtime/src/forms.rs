//! Answering a tool server's form (MCP elicitation) from any process. The form belongs to a
//! call that runs now, most likely in the process holding the session (the app, a `waymark
//! exec`), so the answer cannot go through that session's actor: it is recorded in the store,
//! where the waiting call reads it.

use crate::error::{Error, Result};
use crate::runtime::{Runtime, pid_alive};
use crate::store;
use waymark_protocol::{Answer, EventKind, Question};

impl Runtime {
    /// Records `answer` to the pending form `questionnaire_id` of `session`, checked against
    /// the form. Refused when no live process runs the call it belongs to (the form is then
    /// withdrawn: nothing waits on it).
    pub fn answer_form(
        &self,
        session: &str,
        questionnaire_id: &str,
        answer: &Answer,
    ) -> Result<()> {
        let now = self.options().clock.now_ms();
        let stale = self.options().lease_stale.as_millis() as i64;
        let (answered, _) = self.store().write(now, |tx| {
            let q = store::questionnaires::get(tx.conn(), questionnaire_id)?
                .filter(|q| q.session_id == session)
                .ok_or_else(|| Error::QuestionnaireNotFound(questionnaire_id.to_string()))?;
            if !matches!(q.question, Question::Elicitation(_)) {
                return Err(Error::refused(format!(
                    "{questionnaire_id} is a {} questionnaire, not a tool server's form: answer it with {}",
                    q.kind().as_str(),
                    q.question.answers().join(", ")
                )));
            }
            if !q.is_pending() {
                return Err(Error::refused(format!(
                    "the form {questionnaire_id} is already {}",
                    q.status.as_str()
                )));
            }
            q.question.accepts(answer)?;
            let live = store::sessions::lease(tx.conn(), session)?
                .is_some_and(|l| now - l.heartbeat < stale && pid_alive(l.pid));
            let answer = if live { answer.clone() } else { Answer::Withdraw };
            if live {
                tx.answer_questionnaire(questionnaire_id, &answer)?;
            } else {
                tx.withdraw_questionnaire(questionnaire_id)?;
            }
            tx.emit(
                session,
                EventKind::QuestionnaireAnswered {
                    id: questionnaire_id.to_string(),
                    kind: q.kind(),
                    answer,
                },
            )?;
            Ok(live)
        })?;
        if !answered {
            return Err(Error::refused(format!(
                "no process runs the call the form {questionnaire_id} came from any more (it ended with its process); the form is withdrawn and nothing was sent"
            )));
        }
        Ok(())
    }
}

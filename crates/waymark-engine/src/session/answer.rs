//! Answering a questionnaire: which answers each kind takes, what a permission question
//! offered, and the grant and events an answer records.

use super::{SessionCore, changed};
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::store;
use std::sync::Arc;
use waymark_protocol::{Answer, EventKind};
use waymark_protocol::{PermissionAnswer, Question, TypedAnswer};

pub(super) fn answer_questionnaire(
    core: &Arc<SessionCore>,
    id: &str,
    answer: &Answer,
) -> Result<()> {
    let sid = core.id.as_str();
    let api = SessionApi::new(core.clone());
    let ended = core.write(|tx| {
        let q = store::questionnaires::get(tx.conn(), id)?
            .filter(|q| q.session_id == sid)
            .ok_or_else(|| Error::QuestionnaireNotFound(id.to_string()))?;
        // Each kind takes its own answers; a permission question only the grants it offered
        // (no session grant for `.git/`, no prefix grant for a launcher or a chained command).
        let typed = q.question.accepts(answer)?;
        // A question asked under a scope that has ended (plan mode's rules) is not answered:
        // it is withdrawn, and its call is decided again under the rules in force now.
        let now = match store::sessions::get(tx.conn(), sid)? {
            Some(s) => crate::extension::rules::scope_of(&core.policy.rules, &s),
            None => None,
        };
        if let Question::Permission(p) = &q.question
            && q.is_pending()
            && p.scope.is_some()
            && p.scope.as_deref() != now
        {
            tx.withdraw_questionnaire(id)?;
            tx.emit(
                sid,
                EventKind::QuestionnaireAnswered {
                    id: id.to_string(),
                    kind: q.kind(),
                    answer: Answer::Withdraw,
                },
            )?;
            return Ok(true);
        }
        if let (Question::Permission(p), TypedAnswer::Permission(a)) = (&q.question, &typed)
            && matches!(
                a,
                PermissionAnswer::AllowForSession | PermissionAnswer::AllowPrefix
            )
            && let Some(grant) = crate::permission::grant_for(answer, p)
        {
            // A grant given now belongs to the scope in force (it ends with plan mode).
            tx.add_grant(sid, &grant, now)?;
        }
        tx.answer_questionnaire(id, answer)?;
        tx.emit(
            sid,
            EventKind::QuestionnaireAnswered {
                id: id.to_string(),
                kind: q.kind(),
                answer: answer.clone(),
            },
        )?;
        core.hooks().on_answer(tx, &api, &q, answer)?;
        Ok(false)
    })?;
    changed(core);
    if ended {
        return Err(Error::Store(store::StoreError::QuestionnaireClosed {
            id: id.to_string(),
            status: "withdrawn: it was asked under rules that have ended since".into(),
        }));
    }
    Ok(())
}

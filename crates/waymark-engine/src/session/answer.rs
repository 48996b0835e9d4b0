//! Answering a questionnaire: which answers each kind takes, what a permission question
//! offered, and the grant and events an answer records.

use super::*;
use waymark_protocol::{PermissionAnswer, Question, TypedAnswer};

pub(super) fn answer_questionnaire(
    core: &Arc<SessionCore>,
    id: &str,
    answer: &Answer,
) -> Result<()> {
    let sid = core.id.as_str();
    let api = SessionApi::new(core.clone());
    core.write(|tx| {
        let q = store::questionnaires::get(tx.conn(), id)?
            .filter(|q| q.session_id == sid)
            .ok_or_else(|| Error::QuestionnaireNotFound(id.to_string()))?;
        // Each kind takes its own answers; a permission question only the grants it offered
        // (no session grant for `.git/`, no prefix grant for a launcher or a chained command).
        let typed = q.question.accepts(answer)?;
        if let (Question::Permission(p), TypedAnswer::Permission(a)) = (&q.question, &typed)
            && matches!(
                a,
                PermissionAnswer::AllowForSession | PermissionAnswer::AllowPrefix
            )
            && let Some(grant) = crate::permission::grant_for(answer, p)
        {
            // A grant asked for in a scope (plan mode) ends with it: answered after the scope
            // ended, it covers this one call only.
            let now = match store::sessions::get(tx.conn(), sid)? {
                Some(s) => crate::extension::rules::scope_of(&core.rules, &s),
                None => None,
            };
            if p.scope.is_none() || p.scope.as_deref() == now {
                tx.add_grant(sid, &grant, now)?;
            }
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
        for ext in core
            .extensions
            .iter()
            .filter(|e| e.answers().contains(&q.kind()))
        {
            ext.on_answer(tx, &api, &q, answer)?;
        }
        Ok(())
    })?;
    changed(core);
    Ok(())
}

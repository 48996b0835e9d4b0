//! Answering a questionnaire: which answers each kind takes, what a permission question
//! offered, and the grant and events an answer records.

use super::*;

/// Which answers each questionnaire kind accepts.
fn allowed_answers(kind: QuestionnaireKind) -> &'static [&'static str] {
    match kind {
        QuestionnaireKind::Permission => {
            &["allow_once", "allow_for_session", "allow_prefix", "deny"]
        }
        QuestionnaireKind::PlanEntry | QuestionnaireKind::GoalApproval => &["approve", "reject"],
        QuestionnaireKind::PlanApproval => &["approve", "defer", "revise", "reject", "withdraw"],
    }
}

/// The answers a permission question offers (what its grants allow).
fn offered_answers(payload: &serde_json::Value) -> Vec<&'static str> {
    let offered = |k: &str| {
        payload
            .pointer(&format!("/grants/{k}"))
            .is_some_and(|v| !v.is_null())
    };
    let mut a = vec!["allow_once"];
    if offered("session") {
        a.push("allow_for_session");
    }
    if offered("prefix") {
        a.push("allow_prefix");
    }
    a.push("deny");
    a
}

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
        let allowed = allowed_answers(q.kind);
        if !allowed.contains(&answer.name()) {
            return Err(Error::InvalidAnswer {
                answer: answer.name().to_string(),
                kind: q.kind.as_str().to_string(),
                allowed: allowed.join(", "),
            });
        }
        if q.kind == QuestionnaireKind::Permission
            && matches!(answer, Answer::AllowForSession | Answer::AllowPrefix)
        {
            // Only what the question offered can be granted: no session grant for `.git/`,
            // no prefix grant for a launcher or a chained command.
            let Some(grant) = crate::permission::grant_for(answer, &q.payload) else {
                return Err(Error::InvalidAnswer {
                    answer: answer.name().to_string(),
                    kind: q.kind.as_str().to_string(),
                    allowed: offered_answers(&q.payload).join(", "),
                });
            };
            // A grant asked for in plan mode ends with plan mode: answered after plan mode
            // ended, it covers this one call only.
            let asked_in_plan_mode = q
                .payload
                .get("plan_mode")
                .and_then(serde_json::Value::as_bool)
                == Some(true);
            let planning = store::sessions::get(tx.conn(), sid)?
                .is_some_and(|s| s.interaction_mode == waymark_protocol::InteractionMode::Plan);
            if planning || !asked_in_plan_mode {
                tx.add_grant(sid, &grant, planning)?;
            }
        }
        tx.answer_questionnaire(id, answer)?;
        tx.emit(
            sid,
            EventKind::QuestionnaireAnswered {
                id: id.to_string(),
                kind: q.kind,
                answer: answer.clone(),
            },
        )?;
        for ext in core
            .extensions
            .iter()
            .filter(|e| e.answers().contains(&q.kind))
        {
            ext.on_answer(tx, &api, &q, answer)?;
        }
        Ok(())
    })?;
    changed(core);
    Ok(())
}

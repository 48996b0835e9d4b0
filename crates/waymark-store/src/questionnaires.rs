//! Questionnaires: pending decisions stored as rows; answered exactly once.

use super::{Result, StoreError as Error};
use rusqlite::{Connection, OptionalExtension, params};
use waymark_protocol::{
    Answer, Question, QuestionnaireInfo, QuestionnaireKind, QuestionnaireStatus,
};

/// A questionnaire as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionnaireRow {
    pub id: String,
    pub session_id: String,
    pub turn_id: Option<i64>,
    pub question: Question,
    pub status: QuestionnaireStatus,
    pub answer: Option<Answer>,
}

impl QuestionnaireRow {
    pub fn kind(&self) -> QuestionnaireKind {
        self.question.kind()
    }

    pub fn is_pending(&self) -> bool {
        self.status == QuestionnaireStatus::Pending
    }

    pub fn info(&self) -> QuestionnaireInfo {
        QuestionnaireInfo {
            id: self.id.clone(),
            question: self.question.clone(),
            status: self.status,
            answer: self.answer.clone(),
        }
    }
}

const COLUMNS: &str = "id, session_id, turn_id, kind, payload, status, answer";

/// A row's columns before its JSON is decoded.
struct Raw {
    id: String,
    session_id: String,
    turn_id: Option<i64>,
    kind: String,
    payload: String,
    status: String,
    answer: Option<String>,
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Raw> {
    Ok(Raw {
        id: r.get(0)?,
        session_id: r.get(1)?,
        turn_id: r.get(2)?,
        kind: r.get(3)?,
        payload: r.get(4)?,
        status: r.get(5)?,
        answer: r.get(6)?,
    })
}

/// Decodes a row; anything that is not a known kind, status or payload shape is named.
fn decode(raw: Raw) -> Result<QuestionnaireRow> {
    let corrupt = |what: String| Error::Corrupt(format!("questionnaire {}: {what}", raw.id));
    let payload: serde_json::Value =
        serde_json::from_str(&raw.payload).map_err(|e| corrupt(format!("payload: {e}")))?;
    let question: Question =
        serde_json::from_value(serde_json::json!({"kind": raw.kind, "payload": payload}))
            .map_err(|e| corrupt(format!("{} payload: {e}", raw.kind)))?;
    let status = QuestionnaireStatus::parse(&raw.status)
        .ok_or_else(|| corrupt(format!("unknown status `{}`", raw.status)))?;
    let answer = match &raw.answer {
        Some(a) => Some(serde_json::from_str(a).map_err(|e| corrupt(format!("answer: {e}")))?),
        None => None,
    };
    Ok(QuestionnaireRow {
        id: raw.id,
        session_id: raw.session_id,
        turn_id: raw.turn_id,
        question,
        status,
        answer,
    })
}

/// The payload of `q` as the `payload` column holds it.
fn payload_json(q: &Question) -> Result<String> {
    let v = serde_json::to_value(q).map_err(|e| Error::Corrupt(e.to_string()))?;
    Ok(v.get("payload")
        .map(|p| p.to_string())
        .unwrap_or_else(|| "{}".into()))
}

impl super::Tx<'_> {
    pub fn open_questionnaire(
        &mut self,
        id: &str,
        session_id: &str,
        turn_id: Option<i64>,
        question: &Question,
    ) -> Result<()> {
        let now = self.now();
        let payload = payload_json(question)?;
        self.conn().execute(
            "INSERT INTO questionnaires (id, session_id, turn_id, kind, payload, status, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6)",
            params![
                id,
                session_id,
                turn_id,
                question.kind().as_str(),
                self.redact(&payload),
                now
            ],
        )?;
        Ok(())
    }

    /// Records the answer; only a pending questionnaire can be answered, so of two racing
    /// answers exactly one wins and the other gets `questionnaire_closed`.
    pub fn answer_questionnaire(&mut self, id: &str, answer: &Answer) -> Result<()> {
        let now = self.now();
        let json = serde_json::to_string(answer).map_err(|e| Error::Corrupt(e.to_string()))?;
        // The user's words (a deny reason, revision feedback) may quote a secret.
        let json = self.redact(&json).into_owned();
        let n = self.conn().execute(
            "UPDATE questionnaires SET status = 'answered', answer = ?2, answered_at = ?3
             WHERE id = ?1 AND status = 'pending'",
            params![id, json, now],
        )?;
        self.ensure_closed_once(id, n)
    }

    /// Replaces the payload of a pending questionnaire (a newer plan revision to review).
    pub fn update_question(&mut self, id: &str, question: &Question) -> Result<()> {
        let payload = payload_json(question)?;
        let n = self.conn().execute(
            "UPDATE questionnaires SET payload = ?2 WHERE id = ?1 AND status = 'pending' AND kind = ?3",
            params![id, self.redact(&payload), question.kind().as_str()],
        )?;
        self.ensure_closed_once(id, n)
    }

    /// Withdraws a pending questionnaire (its turn was stopped, or the model retracted it).
    pub fn withdraw_questionnaire(&mut self, id: &str) -> Result<()> {
        let now = self.now();
        let n = self.conn().execute(
            "UPDATE questionnaires SET status = 'withdrawn', answered_at = ?2
             WHERE id = ?1 AND status = 'pending'",
            params![id, now],
        )?;
        self.ensure_closed_once(id, n)
    }

    fn ensure_closed_once(&self, id: &str, changed: usize) -> Result<()> {
        if changed == 1 {
            return Ok(());
        }
        match get(self.conn(), id)? {
            None => Err(Error::QuestionnaireNotFound(id.to_string())),
            Some(q) => Err(Error::QuestionnaireClosed {
                id: id.to_string(),
                status: q.status.as_str().to_string(),
            }),
        }
    }
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<QuestionnaireRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM questionnaires WHERE id = ?1"
    ))?
    .query_row([id], row)
    .optional()?
    .map(decode)
    .transpose()
}

/// The oldest pending questionnaire of the session.
pub fn pending(conn: &Connection, session_id: &str) -> Result<Option<QuestionnaireRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM questionnaires WHERE session_id = ?1 AND status = 'pending'
         ORDER BY created_at, rowid LIMIT 1"
    ))?
    .query_row([session_id], row)
    .optional()?
    .map(decode)
    .transpose()
}

/// The questionnaires of one turn, newest last.
pub fn for_turn(conn: &Connection, turn_id: i64) -> Result<Vec<QuestionnaireRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM questionnaires WHERE turn_id = ?1 ORDER BY created_at, rowid"
    ))?;
    let rows = stmt.query_map([turn_id], row)?;
    rows.map(|r| decode(r?)).collect()
}

/// All questionnaires of a session, oldest first.
pub fn list(conn: &Connection, session_id: &str) -> Result<Vec<QuestionnaireRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM questionnaires WHERE session_id = ?1 ORDER BY created_at, rowid"
    ))?;
    let rows = stmt.query_map([session_id], row)?;
    rows.map(|r| decode(r?)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::super::sessions::tests::make_session;
    use super::*;

    fn ask() -> Question {
        Question::PlanEntry(waymark_protocol::PlanEntryQuestion {
            reason: Some("big change".into()),
        })
    }

    #[test]
    fn answered_once_then_closed() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        store
            .write(1, |tx| tx.open_questionnaire("q1", &s, None, &ask()))
            .unwrap();
        assert_eq!(store.read(|c| pending(c, &s)).unwrap().unwrap().id, "q1");
        store
            .write(2, |tx| tx.answer_questionnaire("q1", &Answer::Reject))
            .unwrap();
        let again = store.write(3, |tx| tx.answer_questionnaire("q1", &Answer::Reject));
        assert_eq!(again.err().unwrap().code(), "questionnaire_closed");
        let missing = store.write(3, |tx| tx.answer_questionnaire("nope", &Answer::Reject));
        assert_eq!(missing.err().unwrap().code(), "questionnaire_not_found");
        let q = store.read(|c| get(c, "q1")).unwrap().unwrap();
        assert_eq!(q.answer, Some(Answer::Reject));
        assert_eq!(q.question, ask());
        assert_eq!(q.status, QuestionnaireStatus::Answered);
        assert!(store.read(|c| pending(c, &s)).unwrap().is_none());
    }

    #[test]
    fn withdrawn_cannot_be_answered() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        store
            .write(1, |tx| {
                tx.open_questionnaire("q2", &s, None, &ask())?;
                tx.withdraw_questionnaire("q2")
            })
            .unwrap();
        let r = store.write(2, |tx| tx.answer_questionnaire("q2", &Answer::Reject));
        assert_eq!(r.err().unwrap().code(), "questionnaire_closed");
        assert_eq!(
            store.read(|c| list(c, &s)).unwrap()[0].status,
            QuestionnaireStatus::Withdrawn
        );
    }

    /// A row whose payload does not fit its kind (or an unknown status) is named as corrupt,
    /// never read as some other question.
    #[test]
    fn a_payload_of_the_wrong_shape_is_corrupt() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        store
            .write(1, |tx| tx.open_questionnaire("q3", &s, None, &ask()))
            .unwrap();
        store
            .read(|c| {
                c.execute(
                    "UPDATE questionnaires SET kind = 'plan_approval' WHERE id = 'q3'",
                    [],
                )?;
                Ok::<_, crate::StoreError>(())
            })
            .unwrap();
        let e = store.read(|c| get(c, "q3")).unwrap_err().to_string();
        assert!(
            e.contains("q3") && e.contains("plan_approval payload"),
            "{e}"
        );
    }
}

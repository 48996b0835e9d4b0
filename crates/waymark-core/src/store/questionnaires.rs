//! Questionnaires: pending decisions stored as rows; answered exactly once.

use crate::error::{Error, Result};
use rusqlite::{Connection, OptionalExtension, params};
use waymark_protocol::{Answer, QuestionnaireInfo, QuestionnaireKind};

/// A questionnaire as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionnaireRow {
    pub id: String,
    pub session_id: String,
    pub turn_id: Option<i64>,
    pub kind: QuestionnaireKind,
    pub payload: serde_json::Value,
    pub status: String,
    pub answer: Option<Answer>,
}

impl QuestionnaireRow {
    pub fn info(&self) -> QuestionnaireInfo {
        QuestionnaireInfo {
            id: self.id.clone(),
            kind: self.kind,
            payload: self.payload.clone(),
            status: self.status.clone(),
            answer: self.answer.clone(),
        }
    }
}

const COLUMNS: &str = "id, session_id, turn_id, kind, payload, status, answer";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(QuestionnaireRow, String, Option<String>)> {
    let kind: String = r.get(3)?;
    let payload: String = r.get(4)?;
    let answer: Option<String> = r.get(6)?;
    Ok((
        QuestionnaireRow {
            id: r.get(0)?,
            session_id: r.get(1)?,
            turn_id: r.get(2)?,
            kind: QuestionnaireKind::parse(&kind).unwrap_or(QuestionnaireKind::Permission),
            payload: serde_json::Value::Null,
            status: r.get(5)?,
            answer: None,
        },
        payload,
        answer,
    ))
}

fn decode(parts: (QuestionnaireRow, String, Option<String>)) -> Result<QuestionnaireRow> {
    let (mut q, payload, answer) = parts;
    q.payload = serde_json::from_str(&payload)
        .map_err(|e| Error::Corrupt(format!("questionnaire {}: payload: {e}", q.id)))?;
    q.answer = match answer {
        Some(a) => Some(
            serde_json::from_str(&a)
                .map_err(|e| Error::Corrupt(format!("questionnaire {}: answer: {e}", q.id)))?,
        ),
        None => None,
    };
    Ok(q)
}

impl super::Tx<'_> {
    pub fn open_questionnaire(
        &mut self,
        id: &str,
        session_id: &str,
        turn_id: Option<i64>,
        kind: QuestionnaireKind,
        payload: &serde_json::Value,
    ) -> Result<()> {
        let now = self.now();
        self.conn().execute(
            "INSERT INTO questionnaires (id, session_id, turn_id, kind, payload, status, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6)",
            params![
                id,
                session_id,
                turn_id,
                kind.as_str(),
                self.redact(&payload.to_string()),
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
        let n = self.conn().execute(
            "UPDATE questionnaires SET status = 'answered', answer = ?2, answered_at = ?3
             WHERE id = ?1 AND status = 'pending'",
            params![id, json, now],
        )?;
        self.ensure_closed_once(id, n)
    }

    /// Replaces the payload of a pending questionnaire (a newer plan revision to review).
    pub fn update_questionnaire_payload(
        &mut self,
        id: &str,
        payload: &serde_json::Value,
    ) -> Result<()> {
        let n = self.conn().execute(
            "UPDATE questionnaires SET payload = ?2 WHERE id = ?1 AND status = 'pending'",
            params![id, self.redact(&payload.to_string())],
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
                status: q.status,
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

    #[test]
    fn answered_once_then_closed() {
        let store = Store::open_test().unwrap();
        let s = make_session(&store);
        let payload = serde_json::json!({"tool": "bash"});
        store
            .write(1, |tx| {
                tx.open_questionnaire("q1", &s, None, QuestionnaireKind::Permission, &payload)
            })
            .unwrap();
        assert_eq!(store.read(|c| pending(c, &s)).unwrap().unwrap().id, "q1");
        store
            .write(2, |tx| tx.answer_questionnaire("q1", &Answer::AllowOnce))
            .unwrap();
        let again = store.write(3, |tx| tx.answer_questionnaire("q1", &Answer::AllowOnce));
        assert_eq!(again.err().unwrap().code(), "questionnaire_closed");
        let missing = store.write(3, |tx| tx.answer_questionnaire("nope", &Answer::AllowOnce));
        assert_eq!(missing.err().unwrap().code(), "questionnaire_not_found");
        let q = store.read(|c| get(c, "q1")).unwrap().unwrap();
        assert_eq!(q.answer, Some(Answer::AllowOnce));
        assert_eq!(q.payload, payload);
        assert!(store.read(|c| pending(c, &s)).unwrap().is_none());
    }

    #[test]
    fn withdrawn_cannot_be_answered() {
        let store = Store::open_test().unwrap();
        let s = make_session(&store);
        store
            .write(1, |tx| {
                tx.open_questionnaire(
                    "q2",
                    &s,
                    None,
                    QuestionnaireKind::PlanApproval,
                    &serde_json::json!({}),
                )?;
                tx.withdraw_questionnaire("q2")
            })
            .unwrap();
        let r = store.write(2, |tx| tx.answer_questionnaire("q2", &Answer::Reject));
        assert_eq!(r.err().unwrap().code(), "questionnaire_closed");
        assert_eq!(store.read(|c| list(c, &s)).unwrap()[0].status, "withdrawn");
    }
}

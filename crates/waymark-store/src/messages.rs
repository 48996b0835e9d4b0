//! The message queue: admission with idempotency keys, head/tail insertion, dequeue order.

use super::{Result, StoreError as Error};
use rusqlite::{Connection, OptionalExtension, params};
use waymark_protocol::{MessageInfo, MessageSource, MessageStatus, Position, ToolImage};

/// A message as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRow {
    pub id: i64,
    pub session_id: String,
    pub source: MessageSource,
    pub text: String,
    pub status: MessageStatus,
    pub idempotency_key: Option<String>,
    /// The images attached (fitted and checked when admitted).
    pub images: Vec<ToolImage>,
}

fn row_to_message(r: &rusqlite::Row<'_>) -> rusqlite::Result<MessageRow> {
    Ok(MessageRow {
        id: r.get(0)?,
        session_id: r.get(1)?,
        source: super::enum_col(r, 2)?,
        text: r.get(3)?,
        status: super::enum_col(r, 4)?,
        idempotency_key: r.get(5)?,
        images: match r.get::<_, Option<String>>(6)? {
            None => Vec::new(),
            Some(json) => serde_json::from_str(&json).map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    6,
                    rusqlite::types::Type::Text,
                    format!("the message's images are not a list of images: {e}").into(),
                )
            })?,
        },
    })
}

const COLUMNS: &str = "id, session_id, source, text, status, idempotency_key, images";

impl super::Tx<'_> {
    /// Queues a message and logs it as `message.admitted` (a repeated idempotency key queues
    /// and logs nothing and returns the existing message, `false`).
    pub fn admit_message(
        &mut self,
        session_id: &str,
        source: MessageSource,
        text: &str,
        position: Position,
        key: Option<&str>,
    ) -> Result<(MessageRow, bool)> {
        self.admit_message_with_images(session_id, source, text, position, key, Vec::new())
    }

    /// [`Self::admit_message`] with images attached (checked and fitted by the caller).
    pub fn admit_message_with_images(
        &mut self,
        session_id: &str,
        source: MessageSource,
        text: &str,
        position: Position,
        key: Option<&str>,
        images: Vec<ToolImage>,
    ) -> Result<(MessageRow, bool)> {
        let (m, created) =
            self.insert_message_with_images(session_id, source, text, position, key, images)?;
        if created {
            self.emit(
                session_id,
                waymark_protocol::EventKind::MessageAdmitted {
                    message_id: m.id,
                    source,
                    text: text.to_string(),
                    position,
                    idempotency_key: key.map(str::to_string),
                    images: m.images.clone(),
                },
            )?;
        }
        Ok((m, created))
    }

    /// Inserts a queued message. With an idempotency key already used in this session, the
    /// existing message is returned and nothing is inserted (`false`).
    pub fn insert_message(
        &mut self,
        session_id: &str,
        source: MessageSource,
        text: &str,
        position: Position,
        key: Option<&str>,
    ) -> Result<(MessageRow, bool)> {
        self.insert_message_with_images(session_id, source, text, position, key, Vec::new())
    }

    fn insert_message_with_images(
        &mut self,
        session_id: &str,
        source: MessageSource,
        text: &str,
        position: Position,
        key: Option<&str>,
        images: Vec<ToolImage>,
    ) -> Result<(MessageRow, bool)> {
        if let Some(k) = key
            && let Some(existing) = by_key(self.conn(), session_id, k)?
        {
            return Ok((existing, false));
        }
        let text = self.redact(text).into_owned();
        let stored = if images.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&images).map_err(|e| Error::Corrupt(e.to_string()))?)
        };
        let now = self.now();
        let c = self.conn();
        let sql = match position {
            Position::Head => {
                "SELECT COALESCE(MIN(queue_pos), 0) - 1 FROM messages WHERE session_id = ?1 AND status = 'queued'"
            }
            Position::Tail => {
                "SELECT COALESCE(MAX(queue_pos), 0) + 1 FROM messages WHERE session_id = ?1"
            }
        };
        let pos: i64 = c
            .prepare_cached(sql)?
            .query_row([session_id], |r| r.get(0))?;
        c.prepare_cached(
            "INSERT INTO messages (session_id, source, text, status, queue_pos, idempotency_key, admitted_at, images)
             VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?7)",
        )?
        .execute(params![session_id, source.as_str(), &text, pos, key, now, stored])?;
        let id = c.last_insert_rowid();
        Ok((
            MessageRow {
                id,
                session_id: session_id.to_string(),
                source,
                text,
                status: MessageStatus::Queued,
                idempotency_key: key.map(str::to_string),
                images,
            },
            true,
        ))
    }

    pub fn set_message_status(&mut self, id: i64, status: MessageStatus) -> Result<()> {
        let n = self
            .conn()
            .prepare_cached("UPDATE messages SET status = ?2 WHERE id = ?1")?
            .execute(params![id, status.as_str()])?;
        if n == 0 {
            return Err(Error::Corrupt(format!("message {id} does not exist")));
        }
        Ok(())
    }
}

fn by_key(conn: &Connection, session_id: &str, key: &str) -> Result<Option<MessageRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages WHERE session_id = ?1 AND idempotency_key = ?2"
        ))?
        .query_row(params![session_id, key], row_to_message)
        .optional()?)
}

/// The message that runs next: lowest queue position among queued ones.
pub fn next_queued(conn: &Connection, session_id: &str) -> Result<Option<MessageRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages WHERE session_id = ?1 AND status = 'queued'
             ORDER BY queue_pos, id LIMIT 1"
        ))?
        .query_row([session_id], row_to_message)
        .optional()?)
}

/// One message by id.
pub fn get(conn: &Connection, id: i64) -> Result<Option<MessageRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM messages WHERE id = ?1"))?
        .query_row([id], row_to_message)
        .optional()?)
}

/// Number of queued messages.
pub fn queued_count(conn: &Connection, session_id: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached(
            "SELECT COUNT(*) FROM messages WHERE session_id = ?1 AND status = 'queued'",
        )?
        .query_row([session_id], |r| r.get(0))?;
    Ok(n as u64)
}

/// Number of queued messages the user sent.
pub fn queued_user_count(conn: &Connection, session_id: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached(
            "SELECT COUNT(*) FROM messages WHERE session_id = ?1 AND status = 'queued' AND source = 'user'",
        )?
        .query_row([session_id], |r| r.get(0))?;
    Ok(n as u64)
}

/// All messages of a session in admission order.
pub fn list(conn: &Connection, session_id: &str) -> Result<Vec<MessageInfo>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM messages WHERE session_id = ?1 ORDER BY id"
    ))?;
    let rows = stmt.query_map([session_id], row_to_message)?;
    let mut out = Vec::new();
    for r in rows {
        let m = r?;
        out.push(MessageInfo {
            id: m.id,
            source: m.source,
            text: m.text,
            status: m.status,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::super::sessions::tests::make_session;
    use super::*;

    #[test]
    fn head_and_tail_order() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        let add = |text: &str, pos| {
            store
                .write(1, |tx| {
                    tx.insert_message(&s, MessageSource::User, text, pos, None)
                })
                .unwrap()
                .0
                .0
        };
        add("a", Position::Tail);
        add("b", Position::Tail);
        add("h", Position::Head);
        store
            .write(1, |tx| {
                tx.insert_message(&s, MessageSource::Goal, "g", Position::Tail, None)
            })
            .unwrap();
        assert_eq!(store.read(|c| queued_count(c, &s)).unwrap(), 4);
        assert_eq!(store.read(|c| queued_user_count(c, &s)).unwrap(), 3);
        let mut order = Vec::new();
        while let Some(m) = store.read(|c| next_queued(c, &s)).unwrap() {
            order.push(m.text.clone());
            store
                .write(1, |tx| tx.set_message_status(m.id, MessageStatus::Done))
                .unwrap();
        }
        assert_eq!(order, vec!["h", "a", "b", "g"]);
        assert_eq!(store.read(|c| queued_count(c, &s)).unwrap(), 0);
    }

    #[test]
    fn idempotency_key_returns_the_existing_message() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        let (first, created) = store
            .write(1, |tx| {
                tx.insert_message(
                    &s,
                    MessageSource::Questionnaire,
                    "x",
                    Position::Head,
                    Some("k"),
                )
            })
            .unwrap()
            .0;
        assert!(created);
        let (again, created) = store
            .write(1, |tx| {
                tx.insert_message(
                    &s,
                    MessageSource::Questionnaire,
                    "y",
                    Position::Head,
                    Some("k"),
                )
            })
            .unwrap()
            .0;
        assert!(!created);
        assert_eq!(again.id, first.id);
        assert_eq!(again.text, "x");
        assert_eq!(store.read(|c| list(c, &s)).unwrap().len(), 1);
    }

    #[test]
    fn a_source_the_store_does_not_know_is_refused_when_read() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        let insert = |source: &str| {
            store.read(|c| {
                Ok::<_, crate::StoreError>(c.execute(
                    "INSERT INTO messages (session_id, source, text, status, queue_pos, admitted_at)
                     VALUES (?1, ?2, 't', 'queued', 1, 1)",
                    [s.as_str(), source],
                )?)
            })
        };
        // The schema checks only the shape; a blank source never gets in.
        assert!(insert("").is_err());
        insert("robot").unwrap();
        let e = store.read(|c| list(c, &s)).unwrap_err().to_string();
        assert!(e.contains("robot"), "{e}");
    }
}

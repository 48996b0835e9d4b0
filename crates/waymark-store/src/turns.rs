//! Turns and the conversation history the model sees.

use super::{Result, StoreError as Error};
use rusqlite::{Connection, OptionalExtension, params};
use waymark_protocol::{ErrorInfo, TurnEndReason, Usage};

/// Lifecycle of a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Running,
    /// Waiting on a questionnaire; resumes when it is answered.
    Parked,
    Finished,
}

/// A turn as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRow {
    pub id: i64,
    pub session_id: String,
    pub message_id: i64,
    pub status: TurnStatus,
    pub reason: Option<TurnEndReason>,
    pub steps: u32,
    pub usage: Usage,
    pub started_at: i64,
}

pub use waymark_protocol::{HistoryItem, ToolCallRecord};

const TURN_COLUMNS: &str = "id, session_id, message_id, status, reason, steps, input_tokens, \
     output_tokens, cached_tokens, started_at";

fn row_to_turn(r: &rusqlite::Row<'_>) -> rusqlite::Result<TurnRow> {
    let reason: Option<String> = r.get(4)?;
    let reason = match reason {
        Some(s) => Some(TurnEndReason::parse(&s).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                4,
                rusqlite::types::Type::Text,
                format!("unknown turn end reason `{s}`").into(),
            )
        })?),
        None => None,
    };
    Ok(TurnRow {
        id: r.get(0)?,
        session_id: r.get(1)?,
        message_id: r.get(2)?,
        status: super::enum_col(r, 3)?,
        reason,
        steps: r.get::<_, i64>(5)? as u32,
        usage: Usage {
            input_tokens: r.get::<_, i64>(6)?.max(0) as u64,
            output_tokens: r.get::<_, i64>(7)?.max(0) as u64,
            cached_tokens: r.get::<_, i64>(8)?.max(0) as u64,
        },
        started_at: r.get(9)?,
    })
}

impl super::Tx<'_> {
    /// Starts a turn for a message (the message becomes `running`).
    pub fn start_turn(&mut self, session_id: &str, message_id: i64) -> Result<i64> {
        let now = self.now();
        let c = self.conn();
        c.prepare_cached("UPDATE messages SET status = 'running' WHERE id = ?1")?
            .execute([message_id])?;
        c.prepare_cached(
            "INSERT INTO turns (session_id, message_id, status, started_at) VALUES (?1, ?2, 'running', ?3)",
        )?
        .execute(params![session_id, message_id, now])?;
        Ok(c.last_insert_rowid())
    }

    /// Adds one model call's usage and counts the step.
    pub fn record_step(&mut self, turn_id: i64, usage: Usage) -> Result<()> {
        self.add_turn_usage(turn_id, usage, 1)
    }

    /// Adds a call's usage to a turn without counting a step (a compaction call): it
    /// counts toward the turn, and so toward a goal's budget.
    pub fn add_usage(&mut self, turn_id: i64, usage: Usage) -> Result<()> {
        self.add_turn_usage(turn_id, usage, 0)
    }

    fn add_turn_usage(&mut self, turn_id: i64, usage: Usage, steps: i64) -> Result<()> {
        self.conn()
            .prepare_cached(
                "UPDATE turns SET steps = steps + ?5, input_tokens = input_tokens + ?2,
                 output_tokens = output_tokens + ?3, cached_tokens = cached_tokens + ?4 WHERE id = ?1",
            )?
            .execute(params![
                turn_id,
                super::clamp_i64(usage.input_tokens),
                super::clamp_i64(usage.output_tokens),
                super::clamp_i64(usage.cached_tokens),
                steps
            ])?;
        Ok(())
    }

    pub fn set_turn_status(&mut self, turn_id: i64, status: TurnStatus) -> Result<()> {
        if status == TurnStatus::Finished {
            return Err(Error::Corrupt("finish a turn with finish_turn".into()));
        }
        let s = waymark_protocol::wire::name(&status);
        self.conn()
            .prepare_cached("UPDATE turns SET status = ?2 WHERE id = ?1 AND status <> 'finished'")?
            .execute(params![turn_id, s])?;
        Ok(())
    }

    /// Ends a turn; its message becomes `done`. Returns the final row.
    pub fn finish_turn(
        &mut self,
        turn_id: i64,
        reason: TurnEndReason,
        error: Option<&ErrorInfo>,
    ) -> Result<TurnRow> {
        let now = self.now();
        let message = error.map(|e| self.redact(&e.message).into_owned());
        let c = self.conn();
        let n = c
            .prepare_cached(
                "UPDATE turns SET status = 'finished', reason = ?2, error_code = ?3, error_message = ?4,
                 ended_at = ?5, error_resets_in_ms = ?6 WHERE id = ?1 AND status <> 'finished'",
            )?
            .execute(params![
                turn_id,
                reason.as_str(),
                error.map(|e| e.code.as_str()),
                message,
                now,
                error.and_then(|e| e.resets_in_ms).map(super::clamp_i64)
            ])?;
        if n == 0 {
            return Err(Error::Corrupt(format!("turn {turn_id} is not open")));
        }
        let turn =
            get(c, turn_id)?.ok_or_else(|| Error::Corrupt(format!("turn {turn_id} vanished")))?;
        c.prepare_cached("UPDATE messages SET status = 'done' WHERE id = ?1")?
            .execute([turn.message_id])?;
        Ok(turn)
    }

    /// Appends one conversation item.
    pub fn append_history(
        &mut self,
        session_id: &str,
        turn_id: Option<i64>,
        item: &HistoryItem,
    ) -> Result<i64> {
        let body = serde_json::to_string(item).map_err(|e| Error::Corrupt(e.to_string()))?;
        let body = self.redact(&body).into_owned();
        let c = self.conn();
        c.prepare_cached(
            "INSERT INTO history (session_id, turn_id, kind, body) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![session_id, turn_id, item.kind(), body])?;
        Ok(c.last_insert_rowid())
    }
}

pub fn get(conn: &Connection, turn_id: i64) -> Result<Option<TurnRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {TURN_COLUMNS} FROM turns WHERE id = ?1"))?
        .query_row([turn_id], row_to_turn)
        .optional()?)
}

/// The session's unfinished turn (running or parked), if any.
pub fn open_turn(conn: &Connection, session_id: &str) -> Result<Option<TurnRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {TURN_COLUMNS} FROM turns WHERE session_id = ?1 AND status <> 'finished'
             ORDER BY id DESC LIMIT 1"
        ))?
        .query_row([session_id], row_to_turn)
        .optional()?)
}

/// All turns with the given status (crash recovery).
pub fn with_status(
    conn: &Connection,
    session_id: &str,
    status: TurnStatus,
) -> Result<Vec<TurnRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {TURN_COLUMNS} FROM turns WHERE session_id = ?1 AND status = ?2 ORDER BY id"
    ))?;
    let rows = stmt.query_map(
        params![session_id, waymark_protocol::wire::name(&status)],
        row_to_turn,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Number of turns and their summed usage.
pub fn totals(conn: &Connection, session_id: &str) -> Result<(u64, Usage)> {
    Ok(conn.query_row(
        "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
                COALESCE(SUM(cached_tokens), 0) FROM turns WHERE session_id = ?1",
        [session_id],
        |r| {
            Ok((
                r.get::<_, i64>(0)? as u64,
                Usage {
                    input_tokens: r.get::<_, i64>(1)? as u64,
                    output_tokens: r.get::<_, i64>(2)? as u64,
                    cached_tokens: r.get::<_, i64>(3)? as u64,
                },
            ))
        },
    )?)
}

/// The whole conversation: `(turn_id, item)` in order.
pub fn history(conn: &Connection, session_id: &str) -> Result<Vec<(Option<i64>, HistoryItem)>> {
    Ok(history_after(conn, session_id, 0)?
        .into_iter()
        .map(|(_, turn, item)| (turn, item))
        .collect())
}

/// Conversation items with a row id above `after`: `(id, turn_id, item)` in order.
pub fn history_after(
    conn: &Connection,
    session_id: &str,
    after: i64,
) -> Result<Vec<(i64, Option<i64>, HistoryItem)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, turn_id, body FROM history WHERE session_id = ?1 AND id > ?2 ORDER BY id",
    )?;
    let rows = stmt.query_map(params![session_id, after], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, Option<i64>>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, turn, body) = row?;
        let item: HistoryItem = serde_json::from_str(&body)
            .map_err(|e| Error::Corrupt(format!("history item {id}: {e}")))?;
        out.push((id, turn, item));
    }
    Ok(out)
}

/// The conversation items of one turn, in order.
pub fn turn_history(conn: &Connection, session_id: &str, turn_id: i64) -> Result<Vec<HistoryItem>> {
    let mut stmt = conn.prepare_cached(
        "SELECT body FROM history WHERE session_id = ?1 AND turn_id = ?2 ORDER BY id",
    )?;
    let rows = stmt.query_map(params![session_id, turn_id], |r| r.get::<_, String>(0))?;
    let mut items = Vec::new();
    for row in rows {
        items.push(
            serde_json::from_str::<HistoryItem>(&row?)
                .map_err(|e| Error::Corrupt(format!("history of turn {turn_id}: {e}")))?,
        );
    }
    Ok(items)
}

/// The error a finished turn ended with: its code, and how long the provider said its usage
/// limit lasts (milliseconds after the turn ended), if it did.
pub fn error(conn: &Connection, turn_id: i64) -> Result<Option<(String, Option<u64>)>> {
    Ok(conn
        .prepare_cached("SELECT error_code, error_resets_in_ms FROM turns WHERE id = ?1")?
        .query_row([turn_id], |r| {
            Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Option<i64>>(1)?))
        })
        .optional()?
        .and_then(|(code, ms)| Some((code?, ms.map(|m| m.max(0) as u64)))))
}

/// Tool calls of the turn's newest assistant item that have no result yet, in order.
pub fn unresolved_calls(
    conn: &Connection,
    session_id: &str,
    turn_id: i64,
) -> Result<Vec<ToolCallRecord>> {
    let mut calls: Vec<ToolCallRecord> = Vec::new();
    for item in turn_history(conn, session_id, turn_id)? {
        match item {
            HistoryItem::Assistant { tool_calls, .. } => calls = tool_calls,
            HistoryItem::ToolResult { call_id, .. } => calls.retain(|c| c.id != call_id),
            HistoryItem::User { .. } => {}
        }
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::super::sessions::tests::make_session;
    use super::*;
    use waymark_protocol::{MessageSource, Position, ToolStatus};

    #[test]
    fn turn_lifecycle_and_unresolved_calls() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        let ((turn, msg), _) = store
            .write(1, |tx| {
                let (m, _) =
                    tx.insert_message(&s, MessageSource::User, "hi", Position::Tail, None)?;
                Ok::<_, crate::StoreError>((tx.start_turn(&s, m.id)?, m.id))
            })
            .unwrap();
        let call = |id: &str| ToolCallRecord {
            id: id.into(),
            wire_id: None,
            name: "bash".into(),
            arguments: serde_json::json!({}),
        };
        store
            .write(2, |tx| {
                tx.append_history(
                    &s,
                    Some(turn),
                    &HistoryItem::Assistant {
                        text: String::new(),
                        reasoning: None,
                        tool_calls: vec![call("a"), call("b")],
                    },
                )?;
                tx.append_history(
                    &s,
                    Some(turn),
                    &HistoryItem::ToolResult {
                        images: Vec::new(),
                        call_id: "a".into(),
                        wire_id: None,
                        name: "bash".into(),
                        status: ToolStatus::Ok,
                        content: "x".into(),
                    },
                )?;
                tx.record_step(
                    turn,
                    Usage {
                        input_tokens: 5,
                        output_tokens: 2,
                        cached_tokens: 0,
                    },
                )
            })
            .unwrap();
        let left = store.read(|c| unresolved_calls(c, &s, turn)).unwrap();
        assert_eq!(
            left.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            vec!["b"]
        );
        assert_eq!(store.read(|c| open_turn(c, &s)).unwrap().unwrap().id, turn);
        let (row, _) = store
            .write(3, |tx| tx.finish_turn(turn, TurnEndReason::Completed, None))
            .unwrap();
        assert_eq!(row.steps, 1);
        assert_eq!(row.usage.total(), 7);
        assert!(store.read(|c| open_turn(c, &s)).unwrap().is_none());
        let m = store
            .read(|c| super::super::messages::get(c, msg))
            .unwrap()
            .unwrap();
        assert_eq!(m.status, crate::MessageStatus::Done);
        // Finishing twice is refused.
        assert!(
            store
                .write(4, |tx| tx.finish_turn(turn, TurnEndReason::Aborted, None))
                .is_err()
        );
        assert_eq!(store.read(|c| history(c, &s)).unwrap().len(), 2);
        assert_eq!(store.read(|c| totals(c, &s)).unwrap().0, 1);
        let all: Vec<HistoryItem> = store
            .read(|c| history(c, &s))
            .unwrap()
            .into_iter()
            .map(|(_, item)| item)
            .collect();
        assert_eq!(store.read(|c| turn_history(c, &s, turn)).unwrap(), all);
        assert!(
            store
                .read(|c| turn_history(c, &s, turn + 1))
                .unwrap()
                .is_empty()
        );
        assert_eq!(store.read(|c| error(c, turn)).unwrap(), None);
    }

    #[test]
    fn finished_requires_a_reason_in_the_schema() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        let r = store.read(|c| {
            c.execute(
                "INSERT INTO messages (id, session_id, source, text, status, queue_pos, admitted_at)
                 VALUES (900, ?1, 'user', 't', 'done', 1, 1)",
                [&s],
            )?;
            Ok::<_, crate::StoreError>(c.execute(
                "INSERT INTO turns (session_id, message_id, status, started_at) VALUES (?1, 900, 'finished', 1)",
                [&s],
            )?)
        });
        assert!(r.is_err());
    }
}

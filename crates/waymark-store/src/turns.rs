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
    /// What its model calls cost (G-31).
    pub spend: waymark_protocol::cost::Spend,
    /// The time it spent parked in waits that ended, in ms.
    pub parked_ms: u64,
    /// When the wait it is parked in began (none while it runs or once it finished).
    pub parked_at: Option<i64>,
}

impl TurnRow {
    /// The time the turn has been at work by `now` (Unix ms): since it started, less every
    /// wait on the user (a turn still parked stops counting when it parked).
    pub fn active_ms(&self, now: i64) -> u64 {
        let waiting = self.parked_at.map_or(0, |p| (now - p).max(0) as u64);
        ((now - self.started_at).max(0) as u64)
            .saturating_sub(self.parked_ms)
            .saturating_sub(waiting)
    }
}

pub use waymark_protocol::{HistoryItem, ToolCallRecord};

const TURN_COLUMNS: &str = "id, session_id, message_id, status, reason, steps, input_tokens, \
     output_tokens, cached_tokens, started_at, cost_micros, unpriced_calls, estimated_calls, \
     parked_ms, parked_at";

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
            estimated: r.get::<_, i64>(12)? > 0,
        },
        started_at: r.get(9)?,
        spend: waymark_protocol::cost::Spend {
            micros: r.get::<_, i64>(10)?.max(0) as u64,
            unpriced_calls: r.get::<_, i64>(11)?.max(0) as u64,
        },
        parked_ms: r.get::<_, i64>(13)?.max(0) as u64,
        parked_at: r.get(14)?,
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

    /// Adds one model call's usage and cost and counts the step.
    pub fn record_step(
        &mut self,
        turn_id: i64,
        usage: Usage,
        charge: &super::spend::Charge,
    ) -> Result<()> {
        self.add_turn_usage(turn_id, usage, 1)?;
        self.charge(Some(turn_id), charge)
    }

    /// Adds a call's usage and cost to a turn without counting a step (a compaction call):
    /// it counts toward the turn, and so toward a goal's budget.
    pub fn add_usage(
        &mut self,
        turn_id: i64,
        usage: Usage,
        charge: &super::spend::Charge,
    ) -> Result<()> {
        self.add_turn_usage(turn_id, usage, 0)?;
        self.charge(Some(turn_id), charge)
    }

    fn add_turn_usage(&mut self, turn_id: i64, usage: Usage, steps: i64) -> Result<()> {
        self.conn()
            .prepare_cached(
                "UPDATE turns SET steps = steps + ?5, input_tokens = input_tokens + ?2,
                 output_tokens = output_tokens + ?3, cached_tokens = cached_tokens + ?4,
                 estimated_calls = estimated_calls + ?6 WHERE id = ?1",
            )?
            .execute(params![
                turn_id,
                super::clamp_i64(usage.input_tokens),
                super::clamp_i64(usage.output_tokens),
                super::clamp_i64(usage.cached_tokens),
                steps,
                i64::from(usage.estimated)
            ])?;
        Ok(())
    }

    pub fn set_turn_status(&mut self, turn_id: i64, status: TurnStatus) -> Result<()> {
        if status == TurnStatus::Finished {
            return Err(Error::Corrupt("finish a turn with finish_turn".into()));
        }
        let s = waymark_protocol::wire::name(&status);
        let now = self.now();
        // Parking starts the clock of a wait (once: parked again stays one wait); running
        // again adds the wait to the turn's parked time.
        self.conn()
            .prepare_cached(
                "UPDATE turns SET
                   parked_ms = parked_ms + CASE WHEN ?2 <> 'parked' AND parked_at IS NOT NULL
                                                THEN max(?3 - parked_at, 0) ELSE 0 END,
                   parked_at = CASE WHEN ?2 = 'parked' THEN coalesce(parked_at, ?3) ELSE NULL END,
                   status = ?2
                 WHERE id = ?1 AND status <> 'finished'",
            )?
            .execute(params![turn_id, s, now])?;
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
                 ended_at = ?5, error_resets_in_ms = ?6,
                 parked_ms = parked_ms + CASE WHEN parked_at IS NOT NULL THEN max(?5 - parked_at, 0) ELSE 0 END,
                 parked_at = NULL
                 WHERE id = ?1 AND status <> 'finished'",
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

    /// Makes exactly the turns `rewound` of the session out of the model's history (and
    /// every other turn of it back in). Ids that are not the session's turns are ignored.
    pub fn set_rewound(&mut self, session_id: &str, rewound: &[i64]) -> Result<()> {
        let list = serde_json::to_string(rewound).map_err(|e| Error::Corrupt(e.to_string()))?;
        self.conn()
            .prepare_cached(
                "UPDATE turns SET rewound = (id IN (SELECT value FROM json_each(?2)))
                 WHERE session_id = ?1",
            )?
            .execute(params![session_id, list])?;
        Ok(())
    }

    /// Replaces the input of call `call_id` in the turn's assistant item that holds it (a
    /// policy rewrote it before it ran), redacted as every stored item is: the input as
    /// stored, or `None` when no stored item of the turn has the call.
    pub fn rewrite_call(
        &mut self,
        session_id: &str,
        turn_id: i64,
        call_id: &str,
        arguments: &serde_json::Value,
    ) -> Result<Option<serde_json::Value>> {
        let rows: Vec<(i64, String)> = self
            .conn()
            .prepare_cached(
                "SELECT id, body FROM history WHERE session_id = ?1 AND turn_id = ?2 AND kind = 'assistant' ORDER BY id DESC",
            )?
            .query_map(params![session_id, turn_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (id, body) in rows {
            let mut item: HistoryItem =
                serde_json::from_str(&body).map_err(|e| Error::Corrupt(e.to_string()))?;
            let HistoryItem::Assistant { tool_calls, .. } = &mut item else {
                continue;
            };
            let Some(call) = tool_calls.iter_mut().find(|c| c.id == call_id) else {
                continue;
            };
            call.arguments = arguments.clone();
            let body = serde_json::to_string(&item).map_err(|e| Error::Corrupt(e.to_string()))?;
            let body = self.redact(&body).into_owned();
            self.conn()
                .prepare_cached("UPDATE history SET body = ?1 WHERE id = ?2")?
                .execute(params![body, id])?;
            let stored: HistoryItem =
                serde_json::from_str(&body).map_err(|e| Error::Corrupt(e.to_string()))?;
            let HistoryItem::Assistant { tool_calls, .. } = stored else {
                return Err(Error::Corrupt(
                    "a rewritten item is no longer a reply".into(),
                ));
            };
            return Ok(tool_calls
                .into_iter()
                .find(|c| c.id == call_id)
                .map(|c| c.arguments));
        }
        Ok(None)
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
                COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(estimated_calls), 0)
         FROM turns WHERE session_id = ?1",
        [session_id],
        |r| {
            Ok((
                r.get::<_, i64>(0)? as u64,
                Usage {
                    input_tokens: r.get::<_, i64>(1)? as u64,
                    output_tokens: r.get::<_, i64>(2)? as u64,
                    cached_tokens: r.get::<_, i64>(3)? as u64,
                    estimated: r.get::<_, i64>(4)? > 0,
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
    // A rewound turn's rows stay for the transcript, out of what the model sees.
    let mut stmt = conn.prepare_cached(
        "SELECT h.id, h.turn_id, h.body FROM history h LEFT JOIN turns t ON t.id = h.turn_id
         WHERE h.session_id = ?1 AND h.id > ?2 AND COALESCE(t.rewound, 0) = 0 ORDER BY h.id",
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

/// The session's turns that are out of the model's history (rewound), in order.
pub fn rewound(conn: &Connection, session_id: &str) -> Result<Vec<i64>> {
    let mut stmt = conn
        .prepare_cached("SELECT id FROM turns WHERE session_id = ?1 AND rewound = 1 ORDER BY id")?;
    let rows = stmt.query_map([session_id], |r| r.get::<_, i64>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The session's turns, oldest first (ids only).
pub fn ids(conn: &Connection, session_id: &str) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached("SELECT id FROM turns WHERE session_id = ?1 ORDER BY id")?;
    let rows = stmt.query_map([session_id], |r| r.get::<_, i64>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The rewound turns among those with a history row at or below `upto`, in order.
pub fn rewound_upto(conn: &Connection, session_id: &str, upto: i64) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT h.turn_id FROM history h JOIN turns t ON t.id = h.turn_id
         WHERE h.session_id = ?1 AND h.id <= ?2 AND t.rewound = 1 ORDER BY h.turn_id",
    )?;
    let rows = stmt.query_map(params![session_id, upto], |r| r.get::<_, i64>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
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
                        estimated: false,
                    },
                    &crate::spend::Charge {
                        micros: Some(12),
                        day: "2026-12-04".into(),
                        hold: None,
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
    /// A rewound turn's rows leave what the model reads; putting it back brings them back;
    /// a compaction stands in only while the rewound turns among its rows are the same.
    #[test]
    fn rewound_turns_leave_the_history_and_retire_the_summaries_of_them() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        let other = make_session(&store);
        let mut turns = Vec::new();
        for (n, sid) in [(1, &s), (2, &s), (3, &other), (4, &s)] {
            let (t, _) = store
                .write(n, |tx| {
                    let (m, _) =
                        tx.insert_message(sid, MessageSource::User, "m", Position::Tail, None)?;
                    let t = tx.start_turn(sid, m.id)?;
                    tx.append_history(
                        sid,
                        Some(t),
                        &HistoryItem::User {
                            text: format!("turn {n}"),
                            source: MessageSource::User,
                            images: Vec::new(),
                        },
                    )?;
                    Ok::<_, crate::StoreError>(t)
                })
                .unwrap();
            turns.push(t);
        }
        let texts = |store: &Store| -> Vec<String> {
            store
                .read(|c| history(c, &s))
                .unwrap()
                .into_iter()
                .map(|(_, i)| match i {
                    HistoryItem::User { text, .. } => text,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(texts(&store), ["turn 1", "turn 2", "turn 4"]);
        // A summary of the first two rows, made while nothing was rewound.
        let summary = crate::compactions::CompactionRow {
            upto: 2,
            summary: "first two".into(),
            files: vec![],
            pinned: vec![],
            before_tokens: 10,
            after_tokens: 2,
        };
        store
            .write(5, |tx| tx.insert_compaction(&s, None, &summary))
            .unwrap();
        let latest = |store: &Store| store.read(|c| crate::compactions::latest(c, &s)).unwrap();
        assert!(latest(&store).is_some());
        // Turn 2 rewound (and another session's turn named by mistake: ignored).
        store
            .write(6, |tx| tx.set_rewound(&s, &[turns[1], turns[2]]))
            .unwrap();
        assert_eq!(texts(&store), ["turn 1", "turn 4"]);
        assert_eq!(store.read(|c| rewound(c, &s)).unwrap(), [turns[1]]);
        assert!(store.read(|c| rewound(c, &other)).unwrap().is_empty());
        assert_eq!(store.read(|c| rewound_upto(c, &s, 2)).unwrap(), [turns[1]]);
        assert_eq!(latest(&store), None, "the summary covered turn 2");
        // Turn 4 rewound instead: the summary's rows are as they were, so it stands again.
        store
            .write(7, |tx| tx.set_rewound(&s, &[turns[3]]))
            .unwrap();
        assert_eq!(texts(&store), ["turn 1", "turn 2"]);
        assert_eq!(latest(&store).map(|c| c.summary), Some("first two".into()));
        assert_eq!(
            store.read(|c| ids(c, &s)).unwrap(),
            [turns[0], turns[1], turns[3]]
        );
    }
}

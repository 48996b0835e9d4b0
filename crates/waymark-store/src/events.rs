//! The append-only event log.

use super::{Result, StoreError as Error};
use rusqlite::{Connection, params};
use waymark_protocol::{Event, EventKind};

pub(super) fn append(
    conn: &Connection,
    session_id: &str,
    ts: i64,
    kind: EventKind,
    json: &str,
) -> Result<Event> {
    let seq = last_seq(conn, session_id)? + 1;
    conn.prepare_cached(
        "INSERT INTO events (session_id, seq, ts, type, json) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![session_id, seq as i64, ts, kind.type_name(), json])?;
    Ok(Event {
        session_id: session_id.to_string(),
        seq,
        ts,
        transient: false,
        kind,
    })
}

/// The `seq` of the session's newest event (0 when it has none).
pub fn last_seq(conn: &Connection, session_id: &str) -> Result<u64> {
    let seq: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?1")?
        .query_row([session_id], |r| r.get(0))?;
    Ok(seq as u64)
}

/// When the session's newest logged event happened (Unix ms), if it has any.
pub fn last_ts(conn: &Connection, session_id: &str) -> Result<Option<i64>> {
    use rusqlite::OptionalExtension as _;
    Ok(conn
        .prepare_cached("SELECT ts FROM events WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1")?
        .query_row([session_id], |r| r.get(0))
        .optional()?)
}

fn decode(session_id: &str, (seq, ts, json): (i64, i64, String)) -> Result<Event> {
    let corrupt = |e: serde_json::Error| Error::Corrupt(format!("event {session_id}#{seq}: {e}"));
    let kind: EventKind = match serde_json::from_str(&json) {
        Ok(k) => k,
        // Logged before questionnaires were typed: read it in today's shape (the log itself
        // is append-only and never rewritten).
        Err(e) => serde_json::from_value(legacy(serde_json::from_str(&json).map_err(corrupt)?))
            .map_err(|_| corrupt(e))?,
    };
    Ok(Event {
        session_id: session_id.to_string(),
        seq: seq as u64,
        ts,
        transient: false,
        kind,
    })
}

/// An event in an older shape, moved to today's: `questionnaire.opened` once carried
/// `kind` and `payload` side by side; they are now one `question`.
fn legacy(mut v: serde_json::Value) -> serde_json::Value {
    if v["type"] == "questionnaire.opened"
        && v.get("question").is_none()
        && let Some(o) = v.as_object_mut()
        && let (Some(kind), Some(payload)) = (o.remove("kind"), o.remove("payload"))
    {
        o.insert(
            "question".into(),
            serde_json::json!({"kind": kind, "payload": payload}),
        );
    }
    v
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, i64, String)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
}

/// Events of a session with `seq > after`, oldest first, at most `limit`.
pub fn list(conn: &Connection, session_id: &str, after: u64, limit: u64) -> Result<Vec<Event>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, ts, json FROM events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![session_id, after as i64, limit as i64], row)?;
    rows.map(|r| decode(session_id, r?)).collect()
}

/// The newest `limit` events of one type (for example `tool.call`), oldest first.
pub fn recent_of_type(
    conn: &Connection,
    session_id: &str,
    type_name: &str,
    limit: u64,
) -> Result<Vec<Event>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, ts, json FROM events WHERE session_id = ?1 AND type = ?2 ORDER BY seq DESC LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![session_id, type_name, limit as i64], row)?;
    let mut out = rows
        .map(|r| decode(session_id, r?))
        .collect::<Result<Vec<_>>>()?;
    out.reverse();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::super::sessions::tests::make_session;
    use super::*;

    #[test]
    fn seq_is_contiguous_per_session_and_log_is_append_only() {
        let store = Store::open_in_memory().unwrap();
        let a = make_session(&store);
        let b = make_session(&store);
        assert_eq!(store.read(|c| last_ts(c, &a)).unwrap(), None);
        for (at, sid) in [(1, &a), (5, &b), (7, &a)] {
            store
                .write(at, |tx| tx.emit(sid, EventKind::SessionIdle {}))
                .unwrap();
        }
        assert_eq!(store.read(|c| last_ts(c, &a)).unwrap(), Some(7));
        let ev = store.read(|c| list(c, &a, 0, 100)).unwrap();
        let seqs: Vec<u64> = ev.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1, 2]);
        assert_eq!(store.read(|c| last_seq(c, &b)).unwrap(), 1);
        let upd =
            store.read(|c| Ok::<_, crate::StoreError>(c.execute("UPDATE events SET ts = 0", [])?));
        assert!(upd.unwrap_err().to_string().contains("append-only"));
        let del = store.read(|c| Ok::<_, crate::StoreError>(c.execute("DELETE FROM events", [])?));
        assert!(del.unwrap_err().to_string().contains("append-only"));
        let gap = store.read(|c| {
            Ok::<_, crate::StoreError>(c.execute(
                "INSERT INTO events (session_id, seq, ts, type, json) VALUES (?1, 9, 0, 'x', '{}')",
                [&a],
            )?)
        });
        assert!(gap.unwrap_err().to_string().contains("contiguous"));
    }

    #[test]
    fn recent_of_type_filters_and_keeps_order() {
        let store = Store::open_in_memory().unwrap();
        let a = make_session(&store);
        for i in 0..4 {
            store
                .write(1, |tx| {
                    tx.emit(&a, EventKind::SessionIdle {})?;
                    tx.emit(
                        &a,
                        EventKind::CommandOutput {
                            command: "help".into(),
                            text: i.to_string(),
                        },
                    )
                })
                .unwrap();
        }
        let ev = store
            .read(|c| recent_of_type(c, &a, "command.output", 2))
            .unwrap();
        assert_eq!(ev.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![6, 8]);
    }

    #[test]
    fn list_pages_after_a_seq() {
        let store = Store::open_in_memory().unwrap();
        let a = make_session(&store);
        for _ in 0..5 {
            store
                .write(1, |tx| tx.emit(&a, EventKind::SessionIdle {}))
                .unwrap();
        }
        let ev = store.read(|c| list(c, &a, 2, 2)).unwrap();
        assert_eq!(ev.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3, 4]);
    }
}

#[cfg(test)]
mod legacy_tests {
    use super::*;
    use crate::Store;
    use crate::sessions::tests::make_session;

    /// A log written before questionnaires were typed still reads: the old
    /// `{kind, payload}` becomes today's `question`, and a payload that fits no kind is
    /// still named as corrupt.
    #[test]
    fn questionnaires_logged_in_the_old_shape_still_read() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        let old = serde_json::json!({
            "type": "questionnaire.opened", "id": "q1", "kind": "permission",
            "payload": {"tool": "bash", "shell": true, "arguments": {"command": "ls"},
                "summary": "run `ls`", "command": "ls", "prefix": "ls",
                "grants": {"session": "ls", "session_text": "this exact command line",
                    "prefix": "ls", "prefix_text": "ls and plain arguments"},
                "call_id": "tc_1_0_0", "call_sha256": "ab"}
        });
        let bad = serde_json::json!({
            "type": "questionnaire.opened", "id": "q2", "kind": "plan_approval",
            "payload": {"reason": "not a review"}
        });
        store
            .read(|c| {
                for (seq, v) in [(1, &old), (2, &bad)] {
                    c.execute(
                        "INSERT INTO events (session_id, seq, ts, type, json) VALUES (?1, ?2, 0, 'questionnaire.opened', ?3)",
                        params![s, seq, v.to_string()],
                    )?;
                }
                Ok::<_, crate::StoreError>(())
            })
            .unwrap();
        let first = store.read(|c| list(c, &s, 0, 1)).unwrap();
        let EventKind::QuestionnaireOpened { question, .. } = &first[0].kind else {
            panic!("{first:?}")
        };
        let waymark_protocol::Question::Permission(p) = question.as_ref() else {
            panic!("{question:?}")
        };
        assert_eq!(
            (p.call_id.as_str(), p.grants.prefix.as_deref()),
            ("tc_1_0_0", Some("ls"))
        );
        let e = store.read(|c| list(c, &s, 1, 1)).unwrap_err();
        assert!(e.to_string().contains(&format!("event {s}#2")), "{e}");
    }
}

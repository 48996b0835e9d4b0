//! The checkpoint rows of a session: which tree, when, why, where the conversation stood,
//! what changed since the one before and what was left out.

use rusqlite::{Connection, OptionalExtension, params};
use waymark_extension::error::{Error, Result};
use waymark_extension::rewind::ConversationPoint;
use waymark_protocol::checkpoint::{CheckpointTrigger, CheckpointView, PathChange, SkippedFile};
use waymark_store::Tx;

/// A checkpoint as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRow {
    pub id: String,
    pub session_id: String,
    /// Its place in the session, from 1.
    pub seq: i64,
    pub turn_id: Option<i64>,
    pub call_id: Option<String>,
    pub tool: Option<String>,
    pub trigger: CheckpointTrigger,
    /// The tree's id (hex).
    pub tree: String,
    /// The id (hex) of its record of permission bits; `None` for one taken before those were
    /// recorded.
    pub modes: Option<String>,
    /// The workspace folder it was taken of, `device:inode` (`None` for one taken before
    /// that was recorded).
    pub root: Option<String>,
    pub conversation: ConversationPoint,
    pub changed: Vec<PathChange>,
    pub skipped: Vec<SkippedFile>,
    pub created_at: i64,
}

impl CheckpointRow {
    /// The row as front ends show it.
    pub fn view(&self) -> CheckpointView {
        CheckpointView {
            id: self.id.clone(),
            turn: self.turn_id,
            time: self.created_at,
            trigger: self.trigger,
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            changed: self.changed.clone(),
            skipped: self.skipped.clone(),
        }
    }
}

const COLUMNS: &str = "id, session_id, seq, turn_id, call_id, tool, trigger, tree, before_turn, \
     hidden, changed, skipped, created_at, modes, root";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CheckpointRow> {
    let json = |idx: usize| -> rusqlite::Result<String> { r.get(idx) };
    fn parse<T: serde::de::DeserializeOwned>(idx: usize, text: &str) -> rusqlite::Result<T> {
        serde_json::from_str(text).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, e.into())
        })
    }
    Ok(CheckpointRow {
        id: r.get(0)?,
        session_id: r.get(1)?,
        seq: r.get(2)?,
        turn_id: r.get(3)?,
        call_id: r.get(4)?,
        tool: r.get(5)?,
        trigger: waymark_store::enum_col(r, 6)?,
        tree: r.get(7)?,
        conversation: ConversationPoint {
            before_turn: r.get(8)?,
            hidden: parse(9, &json(9)?)?,
        },
        changed: parse(10, &json(10)?)?,
        skipped: parse(11, &json(11)?)?,
        created_at: r.get(12)?,
        modes: r.get(13)?,
        root: r.get(14)?,
    })
}

fn corrupt(session_id: &str, e: rusqlite::Error) -> Error {
    match e {
        rusqlite::Error::FromSqlConversionFailure(_, _, why) => Error::Corrupt(format!(
            "a checkpoint of session {session_id} does not read: {why}"
        )),
        other => other.into(),
    }
}

/// The session's checkpoints, oldest first.
pub fn list(conn: &Connection, session_id: &str) -> Result<Vec<CheckpointRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM checkpoints WHERE session_id = ?1 ORDER BY seq"
    ))?;
    let rows = stmt.query_map([session_id], row)?;
    rows.collect::<rusqlite::Result<_>>()
        .map_err(|e| corrupt(session_id, e))
}

/// Checkpoint `id` of the session.
pub fn get(conn: &Connection, session_id: &str, id: &str) -> Result<Option<CheckpointRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM checkpoints WHERE session_id = ?1 AND id = ?2"
    ))?
    .query_row(params![session_id, id], row)
    .optional()
    .map_err(|e| corrupt(session_id, e))
}

/// The session's newest checkpoint.
pub fn last(conn: &Connection, session_id: &str) -> Result<Option<CheckpointRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM checkpoints WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1"
    ))?
    .query_row([session_id], row)
    .optional()
    .map_err(|e| corrupt(session_id, e))
}

/// The checkpoint taken as turn `turn_id` started ("rewind to here" on a turn).
pub fn at_turn_start(
    conn: &Connection,
    session_id: &str,
    turn_id: i64,
) -> Result<Option<CheckpointRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM checkpoints WHERE session_id = ?1 AND turn_id = ?2
         AND trigger = 'turn_start' ORDER BY seq LIMIT 1"
    ))?
    .query_row(params![session_id, turn_id], row)
    .optional()
    .map_err(|e| corrupt(session_id, e))
}

/// When the session's oldest checkpoint was taken.
pub fn oldest(conn: &Connection, session_id: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT MIN(created_at) FROM checkpoints WHERE session_id = ?1")?
        .query_row([session_id], |r| r.get::<_, Option<i64>>(0))?)
}

/// The workspace folder (`<device>:<inode>`) the session's first checkpoint that recorded
/// one was taken of.
pub fn first_root(conn: &Connection, session_id: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT root FROM checkpoints WHERE session_id = ?1 AND root IS NOT NULL
             ORDER BY seq LIMIT 1",
        )?
        .query_row([session_id], |r| r.get::<_, Option<String>>(0))
        .optional()?
        .flatten())
}

/// The trees of the session's checkpoints, and their mode records (what pruning keeps).
pub fn trees(conn: &Connection, session_id: &str) -> Result<Vec<(String, Option<String>)>> {
    let mut stmt =
        conn.prepare_cached("SELECT tree, modes FROM checkpoints WHERE session_id = ?1")?;
    let rows = stmt.query_map([session_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The checkpoint writes, in the caller's transaction.
pub trait CheckpointWrites {
    /// Records a checkpoint; its `seq` is the session's next (the row's is ignored).
    /// Returns the seq given.
    fn insert_checkpoint(&mut self, row: &CheckpointRow) -> Result<i64>;
    /// Drops the session's checkpoints taken before `before_ms`. Returns how many went.
    fn prune_checkpoints(&mut self, session_id: &str, before_ms: i64) -> Result<usize>;
}

impl CheckpointWrites for Tx<'_> {
    fn insert_checkpoint(&mut self, r: &CheckpointRow) -> Result<i64> {
        let c = self.conn();
        let seq: i64 = c
            .prepare_cached(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE session_id = ?1",
            )?
            .query_row([&r.session_id], |row| row.get(0))?;
        c.prepare_cached(&format!(
            "INSERT INTO checkpoints ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
        ))?
        .execute(params![
            r.id,
            r.session_id,
            seq,
            r.turn_id,
            r.call_id,
            r.tool,
            r.trigger.as_str(),
            r.tree,
            r.conversation.before_turn,
            json(&r.conversation.hidden),
            json(&r.changed),
            json(&r.skipped),
            r.created_at,
            r.modes,
            r.root,
        ])?;
        Ok(seq)
    }

    fn prune_checkpoints(&mut self, session_id: &str, before_ms: i64) -> Result<usize> {
        Ok(self
            .conn()
            .prepare_cached("DELETE FROM checkpoints WHERE session_id = ?1 AND created_at < ?2")?
            .execute(params![session_id, before_ms])?)
    }
}

/// A list as JSON text (plain strings and numbers: it cannot fail).
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use waymark_protocol::checkpoint::PathChangeKind;

    fn store() -> waymark_store::Store {
        let s = waymark_store::Store::open_in_memory().unwrap();
        s.migrate_extension("checkpoint", crate::MIGRATIONS)
            .unwrap();
        s.write(0, |tx| {
            tx.create_session("s", "/w", None, waymark_protocol::PermissionMode::Ask)
        })
        .unwrap();
        s
    }

    fn sample(id: &str, at: i64) -> CheckpointRow {
        CheckpointRow {
            id: id.into(),
            session_id: "s".into(),
            seq: 0,
            turn_id: None,
            call_id: Some("tc_1_0_0".into()),
            tool: Some("bash".into()),
            trigger: CheckpointTrigger::BeforeTool,
            tree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904".into(),
            modes: Some("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391".into()),
            root: Some("2049:131".into()),
            conversation: ConversationPoint {
                before_turn: 4,
                hidden: vec![2],
            },
            changed: vec![PathChange {
                path: "a.txt".into(),
                change: PathChangeKind::Modified,
            }],
            skipped: vec![SkippedFile {
                path: "big.bin".into(),
                bytes: 1 << 30,
                reason: "too big".into(),
            }],
            created_at: at,
        }
    }

    #[test]
    fn rows_round_trip_in_order_and_prune_by_age() {
        let s = store();
        s.write(10, |tx| {
            assert_eq!(tx.insert_checkpoint(&sample("cp_a", 10))?, 1);
            assert_eq!(tx.insert_checkpoint(&sample("cp_b", 20))?, 2);
            Ok::<_, Error>(())
        })
        .unwrap();
        let all = s.read(|c| list(c, "s")).unwrap();
        assert_eq!(all.len(), 2);
        let mut want = sample("cp_a", 10);
        want.seq = 1;
        assert_eq!(all[0], want);
        assert_eq!(s.read(|c| last(c, "s")).unwrap().unwrap().id, "cp_b");
        assert_eq!(s.read(|c| get(c, "s", "cp_x")).unwrap(), None);
        assert_eq!(s.read(|c| oldest(c, "s")).unwrap(), Some(10));
        let (gone, _) = s.write(30, |tx| tx.prune_checkpoints("s", 15)).unwrap();
        assert_eq!(gone, 1);
        assert_eq!(s.read(|c| trees(c, "s")).unwrap().len(), 1);
    }

    #[test]
    fn a_row_that_does_not_read_is_a_clear_error() {
        let s = store();
        s.write(10, |tx| tx.insert_checkpoint(&sample("cp_a", 10)))
            .unwrap();
        s.write(11, |tx| {
            tx.conn()
                .execute("UPDATE checkpoints SET changed = 'not json'", [])?;
            Ok::<_, Error>(())
        })
        .unwrap();
        let e = s.read(|c| list(c, "s")).unwrap_err();
        assert_eq!(e.code(), "corrupt_data", "{e}");
        assert!(e.to_string().contains("checkpoint of session s"), "{e}");
    }
}

//! Compactions of a session's history (the runtime decides when and what; this keeps the rows).

use super::Tx;
use super::{Result, StoreError as Error};
use rusqlite::{Connection, OptionalExtension, params};

/// One stored compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionRow {
    /// The newest history row it covers (inclusive).
    pub upto: i64,
    pub summary: String,
    /// Files touched up to `upto`: `(path, changed)`, sorted by path.
    pub files: Vec<(String, bool)>,
    /// Messages kept verbatim (approved plans, answers), oldest first.
    pub pinned: Vec<String>,
    pub before_tokens: u64,
    pub after_tokens: u64,
}

impl Tx<'_> {
    pub fn insert_compaction(
        &mut self,
        session_id: &str,
        turn_id: Option<i64>,
        row: &CompactionRow,
    ) -> Result<()> {
        let now = self.now();
        // Plain strings and booleans: serializing cannot fail.
        let files = serde_json::to_string(&row.files).unwrap_or_else(|_| "[]".into());
        let pinned = serde_json::to_string(&row.pinned).unwrap_or_else(|_| "[]".into());
        let summary = self.redact(&row.summary).into_owned();
        let pinned = self.redact(&pinned).into_owned();
        self.conn().execute(
            "INSERT INTO compactions (session_id, turn_id, upto, summary, files, pinned, before_tokens, after_tokens, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                session_id,
                turn_id,
                row.upto,
                summary,
                files,
                pinned,
                super::clamp_i64(row.before_tokens),
                super::clamp_i64(row.after_tokens),
                now
            ],
        )?;
        Ok(())
    }
}

/// The session's newest compaction, if any.
pub fn latest(conn: &Connection, session_id: &str) -> Result<Option<CompactionRow>> {
    let row = conn
        .prepare_cached(
            "SELECT upto, summary, files, pinned, before_tokens, after_tokens FROM compactions
             WHERE session_id = ?1 ORDER BY id DESC LIMIT 1",
        )?
        .query_row([session_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, i64>(5)?,
            ))
        })
        .optional()?;
    let Some((upto, summary, files, pinned, before, after)) = row else {
        return Ok(None);
    };
    let corrupt = |what: &str, e: serde_json::Error| {
        Error::Corrupt(format!("compaction of session {session_id}: {what}: {e}"))
    };
    Ok(Some(CompactionRow {
        upto,
        summary,
        files: serde_json::from_str(&files).map_err(|e| corrupt("files", e))?,
        pinned: serde_json::from_str(&pinned).map_err(|e| corrupt("pinned messages", e))?,
        before_tokens: before.max(0) as u64,
        after_tokens: after.max(0) as u64,
    }))
}

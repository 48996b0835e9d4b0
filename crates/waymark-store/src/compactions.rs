//! Compactions of a session's history (the runtime decides when and what; this keeps the rows).

use super::Tx;
use super::{Result, StoreError as Error};
use rusqlite::{Connection, params};

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
        // What the summary left out, so a rewind that changes it retires the summary.
        let rewound = super::turns::rewound_upto(self.conn(), session_id, row.upto)?;
        let rewound = serde_json::to_string(&rewound).unwrap_or_else(|_| "[]".into());
        self.conn().execute(
            "INSERT INTO compactions (session_id, turn_id, upto, summary, files, pinned, before_tokens, after_tokens, created_at, rewound)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                session_id,
                turn_id,
                row.upto,
                summary,
                files,
                pinned,
                super::clamp_i64(row.before_tokens),
                super::clamp_i64(row.after_tokens),
                now,
                rewound
            ],
        )?;
        Ok(())
    }
}

/// The session's newest compaction that still stands: one whose summary left out exactly
/// the turns that are rewound now among the rows it covers (a rewind since, or its undo,
/// retires it and an older one or the whole history is used).
pub fn latest(conn: &Connection, session_id: &str) -> Result<Option<CompactionRow>> {
    type Raw = (i64, String, String, String, i64, i64, String);
    let rows: Vec<Raw> = conn
        .prepare_cached(
            "SELECT upto, summary, files, pinned, before_tokens, after_tokens, rewound
             FROM compactions WHERE session_id = ?1 ORDER BY id DESC",
        )?
        .query_map([session_id], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let corrupt = |what: &str, e: serde_json::Error| {
        Error::Corrupt(format!("compaction of session {session_id}: {what}: {e}"))
    };
    let none_rewound = super::turns::rewound(conn, session_id)?.is_empty();
    for (upto, summary, files, pinned, before, after, rewound) in rows {
        let left_out: Vec<i64> =
            serde_json::from_str(&rewound).map_err(|e| corrupt("rewound turns", e))?;
        let stands = if none_rewound {
            left_out.is_empty()
        } else {
            left_out == super::turns::rewound_upto(conn, session_id, upto)?
        };
        if !stands {
            continue;
        }
        return Ok(Some(CompactionRow {
            upto,
            summary,
            files: serde_json::from_str(&files).map_err(|e| corrupt("files", e))?,
            pinned: serde_json::from_str(&pinned).map_err(|e| corrupt("pinned messages", e))?,
            before_tokens: before.max(0) as u64,
            after_tokens: after.max(0) as u64,
        }));
    }
    Ok(None)
}

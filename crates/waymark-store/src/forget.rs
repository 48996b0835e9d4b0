//! Renaming a session, and deleting one with everything that refers to it. Deletion finds
//! the rows through the schema's foreign keys, so the tables extensions add are reached
//! without naming them: every table that refers to `sessions(id)`, directly or through
//! another row (a goal's turns, a plan's revisions), loses the rows that belong to the
//! session. Content blobs no row refers to any more go too.

use crate::{Result, StoreError, Tx};
use rusqlite::params;

/// The longest title a session may have, in characters.
pub const MAX_TITLE: usize = 200;

/// Tables whose rows for a session say nothing of its content: its event log (a mode or
/// model switch is no content) and the project instructions it took when it started.
const SESSION_OWN: &[&str] = &["sessions", "events", "session_instructions"];

/// One foreign key: `table.column` refers to `parent.parent_column`.
#[derive(Debug, Clone)]
struct Reference {
    table: String,
    column: String,
    parent: String,
    parent_column: String,
}

/// `name` as an SQL identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Every foreign key of the schema (a key naming no parent column refers to its primary key),
/// and a `session_id` column without one (the event log's) taken as one to `sessions(id)`.
fn references(conn: &rusqlite::Connection) -> Result<Vec<Reference>> {
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<std::result::Result<_, _>>()?;
    let mut out = Vec::new();
    for t in &tables {
        let mut stmt = conn.prepare(&format!("PRAGMA foreign_key_list({})", ident(t)))?;
        let keys: Vec<(i64, String, String, Option<String>)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
            .collect::<std::result::Result<_, _>>()?;
        // A key over several columns would need all of them matched at once; none exists,
        // and deleting by one column alone could take another session's rows: refused.
        let mut ids: Vec<i64> = keys.iter().map(|k| k.0).collect();
        ids.sort();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err(StoreError::Corrupt(format!(
                "table {t} has a foreign key over several columns; sessions cannot be deleted safely"
            )));
        }
        let keys: Vec<(String, String, Option<String>)> =
            keys.into_iter().map(|(_, p, c, to)| (p, c, to)).collect();
        let declared = keys.iter().any(|(_, column, _)| column == "session_id");
        for (parent, column, to) in keys {
            let parent_column = match to {
                Some(c) => c,
                None => primary_key(conn, &parent)?,
            };
            out.push(Reference {
                table: t.clone(),
                column,
                parent,
                parent_column,
            });
        }
        if !declared && t != "sessions" && columns(conn, t)?.iter().any(|c| c == "session_id") {
            out.push(Reference {
                table: t.clone(),
                column: "session_id".into(),
                parent: "sessions".into(),
                parent_column: "id".into(),
            });
        }
    }
    Ok(out)
}

fn columns(conn: &rusqlite::Connection, table: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", ident(table)))?;
    let cols = stmt
        .query_map([], |r| r.get(1))?
        .collect::<std::result::Result<_, _>>()?;
    Ok(cols)
}

fn primary_key(conn: &rusqlite::Connection, table: &str) -> Result<String> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", ident(table)))?;
    let cols: Vec<(String, i64)> = stmt
        .query_map([], |r| Ok((r.get(1)?, r.get(5)?)))?
        .collect::<std::result::Result<_, _>>()?;
    cols.into_iter()
        .find(|(_, pk)| *pk == 1)
        .map(|(c, _)| c)
        .ok_or_else(|| StoreError::Corrupt(format!("table {table} has no primary key to refer to")))
}

/// The condition on `table`'s rows that belong to what is being deleted: one of its foreign
/// keys names a doomed value.
fn doomed_rows(table: &str, refs: &[Reference]) -> Option<String> {
    let parts: Vec<String> = refs
        .iter()
        .filter(|r| r.table == table)
        .map(|r| {
            format!(
                "{} IN (SELECT val FROM temp.waymark_doomed WHERE tbl = '{}' AND col = '{}')",
                ident(&r.column),
                r.parent.replace('\'', "''"),
                r.parent_column.replace('\'', "''")
            )
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(" OR "))
}

/// Whether session `id` is blank: no title, not in plan mode (a plan may be being written,
/// with no row yet), and no row of any table that refers to it (a
/// message, a turn, a goal, a plan, a question, a worktree, a grant: any table an extension
/// adds counts too) other than those every new session has (`SESSION_OWN`). False when there is no such
/// session. Read in the transaction that deletes it, so a message that arrives first keeps
/// the session.
pub fn is_blank(conn: &rusqlite::Connection, id: &str) -> Result<bool> {
    let titled: Option<bool> = conn
        .query_row(
            "SELECT (title IS NOT NULL AND title <> '') OR interaction_mode = 'plan' FROM sessions WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    if titled != Some(false) {
        return Ok(false);
    }
    for r in references(conn)?
        .iter()
        .filter(|r| r.parent == "sessions" && !SESSION_OWN.contains(&r.table.as_str()))
    {
        let held: bool = conn.query_row(
            &format!(
                "SELECT EXISTS (SELECT 1 FROM {} WHERE {} = (SELECT {} FROM sessions WHERE id = ?1))",
                ident(&r.table),
                ident(&r.column),
                ident(&r.parent_column)
            ),
            [id],
            |row| row.get(0),
        )?;
        if held {
            return Ok(false);
        }
    }
    Ok(true)
}

impl Tx<'_> {
    /// Gives the session a title of the user's choosing; false when there is no such session.
    /// A new name is not activity: the session keeps its place in the list (newest activity
    /// first).
    pub fn rename_session(&mut self, id: &str, title: &str) -> Result<bool> {
        let title = self.redact(title).into_owned();
        let n = self.conn().execute(
            "UPDATE sessions SET title = ?2 WHERE id = ?1",
            params![id, title],
        )?;
        Ok(n == 1)
    }

    /// Deletes the session and every row that refers to it, in any table; returns how many
    /// rows went (0: there was no such session). The caller checks nobody has it open.
    pub fn delete_session(&mut self, id: &str) -> Result<usize> {
        let conn = self.conn();
        let exists: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)",
            [id],
            |r| r.get(0),
        )?;
        if !exists {
            return Ok(0);
        }
        let refs = references(conn)?;
        // Rows refer to each other both ways (a session names its goal, the goal its
        // session): the keys are checked at commit, once all of them are gone.
        conn.execute_batch(
            "PRAGMA defer_foreign_keys = ON;
             CREATE TEMP TABLE IF NOT EXISTS waymark_doomed (tbl TEXT, col TEXT, val, PRIMARY KEY (tbl, col, val));
             DELETE FROM temp.waymark_doomed;",
        )?;
        // Seed: the session's own keys (every column of `sessions` other tables refer to).
        let mut targets: Vec<(String, String)> = refs
            .iter()
            .map(|r| (r.parent.clone(), r.parent_column.clone()))
            .collect();
        targets.sort();
        targets.dedup();
        for (_, c) in targets.iter().filter(|(t, _)| t == "sessions") {
            conn.execute(
                &format!(
                    "INSERT OR IGNORE INTO temp.waymark_doomed SELECT 'sessions', ?2, {} FROM sessions WHERE id = ?1",
                    ident(c)
                ),
                params![id, c],
            )?;
        }
        // Every referenced value of a row that refers to a doomed one is doomed too, until
        // nothing new is found.
        loop {
            let mut found = 0;
            for (t, c) in targets.iter().filter(|(t, _)| t != "sessions") {
                let Some(cond) = doomed_rows(t, &refs) else {
                    continue;
                };
                found += conn.execute(
                    &format!(
                        "INSERT OR IGNORE INTO temp.waymark_doomed SELECT ?1, ?2, {} FROM {} WHERE {cond}",
                        ident(c),
                        ident(t)
                    ),
                    params![t, c],
                )?;
            }
            if found == 0 {
                break;
            }
        }
        let mut tables: Vec<&str> = refs.iter().map(|r| r.table.as_str()).collect();
        tables.sort();
        tables.dedup();
        // The session's row first: its log is append-only while the session exists.
        let mut removed = conn.execute("DELETE FROM sessions WHERE id = ?1", [id])?;
        for t in tables.iter().filter(|t| **t != "sessions") {
            if let Some(cond) = doomed_rows(t, &refs) {
                removed += conn.execute(&format!("DELETE FROM {} WHERE {cond}", ident(t)), [])?;
            }
        }
        // Content no row refers to any more (a deleted plan's revisions).
        let users: Vec<String> = refs
            .iter()
            .filter(|r| r.parent == "blobs")
            .map(|r| format!("SELECT {} FROM {}", ident(&r.column), ident(&r.table)))
            .collect();
        if !users.is_empty() {
            removed += conn.execute(
                &format!(
                    "DELETE FROM blobs WHERE key NOT IN ({})",
                    users.join(" UNION ")
                ),
                [],
            )?;
        }
        conn.execute("DELETE FROM temp.waymark_doomed", [])?;
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Store, StoreError};

    /// A table whose key spans several columns (an extension's, say) is never deleted by
    /// one of its columns alone, which could take another session's rows: refused.
    #[test]
    fn a_key_over_several_columns_refuses_the_delete() {
        let store = Store::open_in_memory().unwrap();
        store
            .write(1, |tx| {
                tx.conn().execute_batch(
                    "INSERT INTO workspaces (id, path, created_at) VALUES (1, '/w', 0);
                     INSERT INTO sessions (id, workspace_id, created_at, updated_at) VALUES ('s1', 1, 0, 0);
                     CREATE TABLE pair (a TEXT, b INTEGER, PRIMARY KEY (a, b));
                     CREATE TABLE pair_notes (session_id TEXT REFERENCES sessions(id), a TEXT, b INTEGER,
                         FOREIGN KEY (a, b) REFERENCES pair (a, b));",
                )?;
                Ok::<_, StoreError>(())
            })
            .unwrap();
        let e = store.write(2, |tx| tx.delete_session("s1")).unwrap_err();
        assert!(e.to_string().contains("several columns"), "{e}");
        let left: i64 = store
            .read(|c| {
                Ok::<_, StoreError>(c.query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))?)
            })
            .unwrap();
        assert_eq!(left, 1, "nothing was deleted");
    }
}

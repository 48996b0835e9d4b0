//! The worktree of each session that has one (the extension's own table).

use rusqlite::{Connection, OptionalExtension, params};
use waymark_extension::error::{Error, Result};
use waymark_protocol::worktree::WorktreeState;
use waymark_store::Tx;

/// A session's worktree as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeRow {
    pub session_id: String,
    pub name: String,
    pub branch: String,
    pub path: String,
    pub repo: String,
    pub base_branch: String,
    pub base_commit: String,
    pub state: WorktreeState,
    pub included: Vec<String>,
    /// The user's git identity as it was when the worktree was made (rows from before it
    /// was recorded have none).
    pub author: Option<Identity>,
    pub created_at: i64,
}

/// A git identity: the name and address commits carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

const COLUMNS: &str = "session_id, name, branch, path, repo, base_branch, base_commit, state, included, created_at, author_name, author_email";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<WorktreeRow> {
    let included: String = r.get(8)?;
    Ok(WorktreeRow {
        session_id: r.get(0)?,
        name: r.get(1)?,
        branch: r.get(2)?,
        path: r.get(3)?,
        repo: r.get(4)?,
        base_branch: r.get(5)?,
        base_commit: r.get(6)?,
        state: waymark_store::enum_col(r, 7)?,
        included: serde_json::from_str(&included).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(8, rusqlite::types::Type::Text, e.into())
        })?,
        created_at: r.get(9)?,
        author: match (
            r.get::<_, Option<String>>(10)?,
            r.get::<_, Option<String>>(11)?,
        ) {
            (Some(name), Some(email)) => Some(Identity { name, email }),
            _ => None,
        },
    })
}

fn corrupt(e: rusqlite::Error) -> Error {
    match e {
        rusqlite::Error::FromSqlConversionFailure(_, _, why) => {
            Error::Corrupt(format!("a worktree row does not read: {why}"))
        }
        other => other.into(),
    }
}

/// Session `session_id`'s worktree, if it has one.
pub fn get(conn: &Connection, session_id: &str) -> Result<Option<WorktreeRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM worktrees WHERE session_id = ?1"
    ))?
    .query_row([session_id], row)
    .optional()
    .map_err(corrupt)
}

/// A session's worktree still on disk (active or merged, not discarded), as the session
/// list names it.
pub struct OnDisk {
    pub session_id: String,
    pub branch: String,
    /// The worktree's folder and the checkout it was made from.
    pub path: String,
    pub repo: String,
}

/// Every session's worktree still on disk.
pub fn on_disk(conn: &Connection) -> Result<Vec<OnDisk>> {
    let mut stmt = conn.prepare_cached(
        "SELECT session_id, branch, path, repo FROM worktrees WHERE state != 'discarded'",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(OnDisk {
            session_id: r.get(0)?,
            branch: r.get(1)?,
            path: r.get(2)?,
            repo: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The worktree writes, in the caller's transaction.
pub trait WorktreeWrites {
    fn insert_worktree(&mut self, row: &WorktreeRow) -> Result<()>;
    fn set_worktree_state(&mut self, session_id: &str, state: WorktreeState) -> Result<()>;
}

impl WorktreeWrites for Tx<'_> {
    fn insert_worktree(&mut self, r: &WorktreeRow) -> Result<()> {
        let included = serde_json::to_string(&r.included).unwrap_or_else(|_| "[]".into());
        self.conn().execute(
            &format!(
                "INSERT INTO worktrees ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
            ),
            params![
                r.session_id,
                r.name,
                r.branch,
                r.path,
                r.repo,
                r.base_branch,
                r.base_commit,
                r.state.as_str(),
                included,
                r.created_at,
                r.author.as_ref().map(|a| &a.name),
                r.author.as_ref().map(|a| &a.email),
            ],
        )?;
        Ok(())
    }

    fn set_worktree_state(&mut self, session_id: &str, state: WorktreeState) -> Result<()> {
        self.conn().execute(
            "UPDATE worktrees SET state = ?2 WHERE session_id = ?1",
            params![session_id, state.as_str()],
        )?;
        Ok(())
    }
}

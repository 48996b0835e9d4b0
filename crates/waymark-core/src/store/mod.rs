//! The store owns all SQL. SQLite in WAL mode; versioned migrations applied in a transaction;
//! every state change and the events describing it are written in one transaction
//! ([`Store::write`]), and events are handed back for broadcast only after commit.

pub mod events;
pub mod goals;
pub mod messages;
pub mod plans;
pub mod questionnaires;
pub mod sessions;
pub mod turns;

pub use messages::{MessageRow, MessageStatus};
pub use plans::{PlanRow, RevisionRow};
pub use questionnaires::QuestionnaireRow;
pub use sessions::{Lease, SessionRow};
pub use turns::{HistoryItem, ToolCallRecord, TurnRow, TurnStatus};

use crate::error::{Error, Result};
use crate::secrets::Redactor;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use waymark_protocol::{Event, EventKind};

/// Migrations in order; the version of each is its index + 1.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/0001_init.sql"),
    include_str!("../../migrations/0002_plans.sql"),
    include_str!("../../migrations/0003_goals.sql"),
    include_str!("../../migrations/0004_grants.sql"),
];

/// WAL size above which closing the store checkpoints it (see `Drop for Store`).
const WAL_CHECKPOINT_ON_CLOSE_BYTES: u64 = 1 << 20;

/// The newest schema version this build understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// A handle on the database. Cheap to share behind an `Arc`.
pub struct Store {
    conn: Mutex<Connection>,
    /// The WAL file, for the checkpoint on close.
    wal: Option<PathBuf>,
    /// Secrets replaced in everything written (events, history, questionnaires).
    redactor: std::sync::RwLock<Arc<Redactor>>,
}

impl Drop for Store {
    fn drop(&mut self) {
        let large = self
            .wal
            .as_ref()
            .and_then(|w| std::fs::metadata(w).ok())
            .is_some_and(|m| m.len() > WAL_CHECKPOINT_ON_CLOSE_BYTES);
        if large {
            // Best effort: another process reading the database makes it a partial one.
            let _ = self.lock().execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
        }
    }
}

/// A write transaction that collects the events it appends.
pub struct Tx<'c> {
    conn: &'c Connection,
    now: i64,
    events: Vec<Event>,
    redactor: Arc<Redactor>,
}

/// Rolls back a transaction that was neither committed nor rolled back (a panic inside it).
struct Open<'c> {
    conn: &'c Connection,
    done: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

impl Store {
    /// Opens (creating if needed) the database file and brings its schema up to date. A
    /// folder it creates is private to the user (0700), and the database file is made
    /// 0600: it holds the conversations.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent()
            && !dir.exists()
        {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| Error::io(dir, e))?;
        }
        let conn = Connection::open(path)?;
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| Error::io(path, e))?;
        }
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // The CLI opens the database once per command. SQLite's checkpoint on close would
        // make every run pay an fsync and re-create the WAL; instead the WAL is kept and
        // checkpointed on close only once it has grown (`Drop`), which also bounds the
        // WAL an open has to read.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        Self::init(conn, &path.display().to_string(), Some(PathBuf::from(wal)))
    }

    /// An in-memory database (tests).
    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?, ":memory:", None)
    }

    fn init(mut conn: Connection, label: &str, wal: Option<PathBuf>) -> Result<Store> {
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Every statement of a turn stays prepared (the default cache of 16 thrashes).
        conn.set_prepared_statement_cache_capacity(128);
        migrate(&mut conn, label)?;
        Ok(Store {
            conn: Mutex::new(conn),
            wal,
            redactor: Default::default(),
        })
    }

    /// Replaces the secrets redacted from what is written from now on.
    pub fn set_redactor(&self, r: Redactor) {
        match self.redactor.write() {
            Ok(mut g) => *g = Arc::new(r),
            Err(p) => *p.into_inner() = Arc::new(r),
        }
    }

    /// The secrets redacted from what is written and streamed.
    pub fn redactor(&self) -> Arc<Redactor> {
        match self.redactor.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no half-written transaction (the `Open` guard
        // rolls back), so a poisoned lock is safe to reuse.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` in one write transaction at time `now`; returns its value and the events it
    /// appended, after commit.
    pub fn write<T>(
        &self,
        now: i64,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T>,
    ) -> Result<(T, Vec<Event>)> {
        let conn = self.lock();
        // Cached BEGIN/COMMIT statements: parsing them anew is a measurable part of a turn.
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        let mut open = Open {
            conn: &conn,
            done: false,
        };
        let mut t = Tx {
            conn: &conn,
            now,
            events: Vec::new(),
            redactor: self.redactor(),
        };
        let value = f(&mut t);
        let events = t.events;
        match value {
            Ok(v) => {
                // A failed COMMIT leaves the transaction open; the guard rolls it back.
                conn.prepare_cached("COMMIT")?.execute([])?;
                open.done = true;
                Ok((v, events))
            }
            Err(e) => {
                open.done = true;
                conn.prepare_cached("ROLLBACK")?.execute([])?;
                Err(e)
            }
        }
    }

    /// Runs a read-only closure on the connection.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.lock();
        f(&conn)
    }
}

impl Tx<'_> {
    /// The transaction's timestamp.
    pub fn now(&self) -> i64 {
        self.now
    }

    pub(crate) fn conn(&self) -> &Connection {
        self.conn
    }

    /// Appends an event to the session's log with the next `seq` (secrets redacted).
    pub fn emit(&mut self, session_id: &str, kind: EventKind) -> Result<()> {
        let (json, kind) = redact_event(&self.redactor, kind)?;
        let event = events::append(self.conn, session_id, self.now, kind, &json)?;
        self.events.push(event);
        Ok(())
    }

    /// `text` with known secrets replaced.
    pub(crate) fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.redactor.redact(text)
    }
}

/// An event and its JSON with every known secret replaced (parsed back only when one was).
pub(crate) fn redact_event(r: &Redactor, kind: EventKind) -> Result<(String, EventKind)> {
    let json = serde_json::to_string(&kind).map_err(|e| Error::Corrupt(e.to_string()))?;
    match r.redact(&json) {
        std::borrow::Cow::Borrowed(_) => Ok((json, kind)),
        std::borrow::Cow::Owned(clean) => {
            let kind = serde_json::from_str(&clean).map_err(|e| Error::Corrupt(e.to_string()))?;
            Ok((clean, kind))
        }
    }
}

fn migrate(conn: &mut Connection, label: &str) -> Result<()> {
    conn.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")?;
    let current: i64 = conn
        .query_row("SELECT MAX(version) FROM schema_version", [], |r| {
            r.get::<_, Option<i64>>(0)
        })
        .optional()?
        .flatten()
        .unwrap_or(0);
    if current > SCHEMA_VERSION {
        return Err(Error::DatabaseTooNew {
            path: label.to_string(),
            found: current,
            supported: SCHEMA_VERSION,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = i as i64 + 1;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(sql).map_err(|e| Error::Migration {
            version,
            message: e.to_string(),
        })?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [version],
        )?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_once_and_record_the_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        drop(Store::open(&path).unwrap());
        let store = Store::open(&path).unwrap();
        let v: i64 = store
            .read(|c| Ok(c.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        let rows: i64 = store
            .read(|c| Ok(c.query_row("SELECT COUNT(*) FROM schema_version", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(rows, SCHEMA_VERSION);
    }

    #[test]
    fn newer_database_is_refused_with_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        drop(Store::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.execute("INSERT INTO schema_version (version) VALUES (99)", [])
            .unwrap();
        drop(conn);
        let err = Store::open(&path).err().unwrap();
        assert_eq!(err.code(), "database_too_new");
        assert!(err.to_string().contains("schema version 99"), "{err}");
    }

    #[test]
    fn failed_write_rolls_back_state_and_events() {
        let store = Store::open_in_memory().unwrap();
        let sid = sessions::tests::make_session(&store);
        let before = store.read(|c| events::last_seq(c, &sid)).unwrap();
        let r: Result<((), Vec<Event>)> = store.write(5, |tx| {
            tx.emit(&sid, EventKind::SessionIdle {})?;
            Err(Error::Refused("no".into()))
        });
        assert!(r.is_err());
        assert_eq!(store.read(|c| events::last_seq(c, &sid)).unwrap(), before);
    }
}

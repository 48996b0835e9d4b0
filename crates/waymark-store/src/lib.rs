//! The store owns all of the core's SQL. SQLite in WAL mode; versioned migrations applied in
//! a transaction; every state change and the events describing it are written in one
//! transaction ([`Store::write`]), and events are handed back for broadcast only after
//! commit. Extensions keep their own tables through [`Store::migrate_extension`].

pub mod blobs;
pub mod compactions;
mod error;
pub mod events;
pub mod forget;
mod grants;
pub mod messages;
pub mod questionnaires;
pub mod sessions;
pub mod spend;
pub mod turns;

pub use grants::{Grant, GrantKind, Instructions};
pub use messages::MessageRow;
pub use questionnaires::QuestionnaireRow;
pub use sessions::Lease;
pub use sessions::SessionRow;
pub use turns::{HistoryItem, ToolCallRecord, TurnRow, TurnStatus};
pub use waymark_protocol::MessageStatus;

use error::StoreError as Error;
pub use error::{Result, StoreError};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use waymark_config::secrets::Redactor;
use waymark_protocol::{Event, EventKind};

/// Migrations in order; the version of each is its index + 1.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_init.sql"),
    // Versions 2 and 3 created two extensions' tables; those are the extensions' own
    // migrations now (in their crates, see 0005).
    "SELECT 1;",
    "SELECT 1;",
    include_str!("../migrations/0004_grants.sql"),
    include_str!("../migrations/0005_extension_schema.sql"),
    include_str!("../migrations/0006_instructions.sql"),
    include_str!("../migrations/0007_compactions.sql"),
    include_str!("../migrations/0008_turn_error_reset.sql"),
    include_str!("../migrations/0009_grant_scope.sql"),
    include_str!("../migrations/0010_feature_free_checks.sql"),
    include_str!("../migrations/0011_deleting_sessions.sql"),
    include_str!("../migrations/0012_rewind.sql"),
    include_str!("../migrations/0013_cost.sql"),
    include_str!("../migrations/0014_estimated_usage.sql"),
    include_str!("../migrations/0015_spend_holds.sql"),
    include_str!("../migrations/0016_turn_parking.sql"),
    include_str!("../migrations/0017_message_images.sql"),
];

/// Column `idx` of a row holding the wire name of a closed set (a status, kind or author);
/// a name this build does not know is a conversion error naming it, never a default.
pub fn enum_col<T: serde::de::DeserializeOwned>(
    r: &rusqlite::Row<'_>,
    idx: usize,
) -> rusqlite::Result<T> {
    let s: String = r.get(idx)?;
    waymark_protocol::wire::parse(&s).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            rusqlite::types::Type::Text,
            format!(
                "unknown {} `{s}`",
                std::any::type_name::<T>()
                    .rsplit("::")
                    .next()
                    .unwrap_or("value")
            )
            .into(),
        )
    })
}

/// A count as SQLite stores it (i64), saturating.
pub fn clamp_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// WAL size above which closing the store checkpoints it (see `Drop for Store`).
const WAL_CHECKPOINT_ON_CLOSE_BYTES: u64 = 1 << 20;

/// The newest schema version this build understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// How many read-only connections serve views (opened on first use).
const READERS: usize = 2;

/// Runs blocking database work from async code without stalling the executor: on a
/// multi-threaded runtime (the desktop) the worker hands its other tasks to another thread
/// for the duration; elsewhere (the CLI's single-threaded runtime, plain threads) it just
/// runs.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// A handle on the database. Cheap to share behind an `Arc`. One connection writes (and
/// serves the session actors' reads); views read through a small pool of read-only
/// connections, so a long write never holds up what a front end shows, and a slow view
/// never holds up a session.
pub struct Store {
    conn: Mutex<Connection>,
    /// The database file (`None` in memory: views then use the one connection).
    path: Option<PathBuf>,
    readers: [Mutex<Option<Connection>>; READERS],
    /// Views use the read pool (see `RuntimeOptions::read_pool`); otherwise they use the
    /// one connection and open no other.
    pool: std::sync::atomic::AtomicBool,
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
    /// What puts back the files the transaction changed, run (newest first) when it does not
    /// commit: the closure failed, or the COMMIT itself did.
    undo: Vec<Box<dyn FnOnce() + Send>>,
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
        // SQLite makes its `-wal` and `-shm` files with the database's bits, but one left
        // by an older version may be wider: they hold the same data.
        for side in ["-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(side);
            let p = std::path::PathBuf::from(p);
            use std::os::unix::fs::PermissionsExt as _;
            if std::fs::symlink_metadata(&p)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o077 != 0)
            {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
                    .map_err(|e| Error::io(&p, e))?;
            }
        }
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
        let mut store = Self::init(conn, &path.display().to_string(), Some(PathBuf::from(wal)))?;
        store.path = Some(path.to_path_buf());
        Ok(store)
    }

    /// An in-memory database with the core tables only.
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
            path: None,
            readers: Default::default(),
            pool: Default::default(),
            wal,
            redactor: Default::default(),
        })
    }

    /// Applies the migrations of extension `name` it has not applied yet, each in its own
    /// transaction; refused when the database has more of them than this build knows.
    pub fn migrate_extension(&self, name: &str, migrations: &[&str]) -> Result<()> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let current: i64 = conn
            .query_row(
                "SELECT version FROM extension_schema WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0);
        let known = migrations.len() as i64;
        if current > known {
            return Err(Error::Migration {
                version: current,
                message: format!(
                    "the database has migration {current} of the `{name}` extension; this build knows {known}: use a newer Waymark"
                ),
            });
        }
        for (i, sql) in migrations.iter().enumerate().skip(current as usize) {
            let version = i as i64 + 1;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Another process may have applied it since the version was read.
            let now: i64 = tx
                .query_row(
                    "SELECT version FROM extension_schema WHERE name = ?1",
                    [name],
                    |r| r.get(0),
                )
                .optional()?
                .unwrap_or(0);
            if now >= version {
                continue;
            }
            tx.execute_batch(sql).map_err(|e| Error::Migration {
                version,
                message: format!("extension `{name}`: {e}"),
            })?;
            tx.execute(
                "INSERT INTO extension_schema (name, version) VALUES (?1, ?2) \
                 ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                rusqlite::params![name, version],
            )?;
            tx.commit()?;
        }
        Ok(())
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
    /// The closure's own errors (a caller's error type `E`) roll it back like the store's.
    pub fn write<T, E: From<StoreError>>(
        &self,
        now: i64,
        f: impl FnOnce(&mut Tx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<(T, Vec<Event>), E> {
        blocking(|| self.write_now(now, f))
    }

    fn write_now<T, E: From<StoreError>>(
        &self,
        now: i64,
        f: impl FnOnce(&mut Tx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<(T, Vec<Event>), E> {
        let sql = |e: rusqlite::Error| E::from(StoreError::Db(e));
        let conn = self.lock();
        // Cached BEGIN/COMMIT statements: parsing them anew is a measurable part of a turn.
        conn.prepare_cached("BEGIN IMMEDIATE")
            .and_then(|mut b| b.execute([]))
            .map_err(sql)?;
        let mut open = Open {
            conn: &conn,
            done: false,
        };
        let mut t = Tx {
            conn: &conn,
            now,
            events: Vec::new(),
            redactor: self.redactor(),
            undo: Vec::new(),
        };
        let value = f(&mut t);
        let events = t.events;
        let undo = |actions: Vec<Box<dyn FnOnce() + Send>>| {
            for a in actions.into_iter().rev() {
                a();
            }
        };
        match value {
            Ok(v) => {
                // A failed COMMIT leaves the transaction open; the guard rolls it back.
                if let Err(e) = conn
                    .prepare_cached("COMMIT")
                    .and_then(|mut c| c.execute([]))
                {
                    undo(t.undo);
                    return Err(sql(e));
                }
                open.done = true;
                Ok((v, events))
            }
            Err(e) => {
                open.done = true;
                let rolled = conn
                    .prepare_cached("ROLLBACK")
                    .and_then(|mut r| r.execute([]));
                undo(t.undo);
                rolled.map_err(sql)?;
                Err(e)
            }
        }
    }

    /// Runs a read-only closure on the writing connection (a session's own reads, which
    /// must see its writes at once).
    pub fn read<T, E>(
        &self,
        f: impl FnOnce(&Connection) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        blocking(|| {
            let conn = self.lock();
            f(&conn)
        })
    }

    /// From now on views read through the pool (a session is open in this process).
    pub fn use_read_pool(&self) {
        self.pool.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Runs a read-only closure for a view, on a read-only connection of the pool: it sees
    /// everything committed, and neither waits for a write in progress nor holds one up.
    pub fn view<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&Connection) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let Some(path) = self
            .path
            .as_ref()
            .filter(|_| self.pool.load(std::sync::atomic::Ordering::Relaxed))
        else {
            return self.read(f);
        };
        blocking(|| {
            let mut slot = self
                .readers
                .iter()
                .find_map(|r| r.try_lock().ok())
                .unwrap_or_else(|| self.readers[0].lock().unwrap_or_else(|p| p.into_inner()));
            if slot.is_none() {
                *slot = Some(open_reader(path).map_err(E::from)?);
            }
            match slot.as_ref() {
                Some(conn) => f(conn),
                None => Err(E::from(Error::Corrupt("no read connection".into()))),
            }
        })
    }
}

impl Tx<'_> {
    /// Registers what undoes a change to files made within this transaction: it runs if the
    /// transaction does not commit (newest first), so files and rows stay in step.
    pub fn on_rollback(&mut self, undo: impl FnOnce() + Send + 'static) {
        self.undo.push(Box::new(undo));
    }

    /// The transaction's timestamp.
    pub fn now(&self) -> i64 {
        self.now
    }

    pub fn conn(&self) -> &Connection {
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
    pub fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.redactor.redact(text)
    }
}

/// An event and its JSON with every known secret replaced (parsed back only when one was).
pub fn redact_event(r: &Redactor, kind: EventKind) -> Result<(String, EventKind)> {
    let json = serde_json::to_string(&kind).map_err(|e| Error::Corrupt(e.to_string()))?;
    match r.redact(&json) {
        std::borrow::Cow::Borrowed(_) => Ok((json, kind)),
        std::borrow::Cow::Owned(clean) => {
            let kind = serde_json::from_str(&clean).map_err(|e| Error::Corrupt(e.to_string()))?;
            Ok((clean, kind))
        }
    }
}

/// A read-only connection to the database file, for views.
fn open_reader(path: &Path) -> Result<Connection> {
    use rusqlite::OpenFlags;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
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
        // A migration that rebuilds a table another one references runs with foreign keys
        // off (they cannot change inside a transaction), and every reference is checked
        // before it commits.
        let rebuild = sql.starts_with(REBUILDS);
        if rebuild {
            conn.pragma_update(None, "foreign_keys", "OFF")?;
        }
        let applied = apply(conn, version, sql, rebuild);
        if rebuild {
            conn.pragma_update(None, "foreign_keys", "ON")?;
        }
        applied?;
    }
    Ok(())
}

/// The indexes and triggers of the schema (not those SQLite makes itself), by name.
fn indexes_and_triggers(tx: &rusqlite::Transaction<'_>) -> Result<Vec<(String, String)>> {
    let mut st = tx.prepare(
        "SELECT name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL",
    )?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// How a migration that rebuilds tables begins.
const REBUILDS: &str = "-- waymark: rebuilds tables";

fn apply(conn: &mut Connection, version: i64, sql: &str, rebuild: bool) -> Result<()> {
    let failed = |message: String| Error::Migration { version, message };
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have applied it since the version was read.
    let now: Option<i64> =
        tx.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?;
    if now.unwrap_or(0) >= version {
        return Ok(());
    }
    // A rebuilt table loses the indexes and triggers on it, those of extensions too: each
    // one that is gone afterwards is made again as it was.
    let before = if rebuild {
        indexes_and_triggers(&tx)?
    } else {
        Vec::new()
    };
    tx.execute_batch(sql).map_err(|e| failed(e.to_string()))?;
    let after = indexes_and_triggers(&tx)?;
    for (name, sql) in before.iter().filter(|b| !after.iter().any(|a| a.0 == b.0)) {
        tx.execute_batch(sql)
            .map_err(|e| failed(format!("making `{name}` again after the rebuild: {e}")))?;
    }
    if rebuild {
        let broken: Option<String> = tx
            .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
            .optional()?;
        if let Some(table) = broken {
            return Err(failed(format!(
                "a row of `{table}` refers to one that is gone after the rebuild"
            )));
        }
    }
    tx.execute(
        "INSERT INTO schema_version (version) VALUES (?1)",
        [version],
    )?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The core schema names no feature: no CHECK lists a plan or goal value, and a source or
    /// kind an extension brings is stored (what the store does not know is refused when read).
    #[test]
    fn the_core_schema_names_no_feature() {
        let store = Store::open_in_memory().unwrap();
        let sql: Vec<String> = store
            .read(|c| {
                let mut st = c.prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")?;
                let rows = st.query_map([], |r| r.get(0))?;
                Ok::<_, StoreError>(rows.collect::<std::result::Result<_, _>>()?)
            })
            .unwrap();
        // The grants' old plan-mode flag is history: the plan extension's own migration moves
        // it to scopes and drops the column.
        for s in sql.iter().filter(|s| !s.starts_with("CREATE TABLE grants")) {
            let l = s.to_lowercase();
            // The interaction mode is the core's own ('default', 'plan').
            let l = l.replace("interaction_mode in ('default', 'plan')", "");
            assert!(!l.contains("plan") && !l.contains("goal"), "{s}");
        }
    }

    /// A rebuild that leaves a reference dangling is refused and changes nothing, and the
    /// foreign keys are on again after it.
    #[test]
    fn a_rebuild_that_breaks_a_reference_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        drop(Store::open(&path).unwrap());
        let mut conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "INSERT INTO workspaces (id, path, created_at) VALUES (1, '/w', 0);
             INSERT INTO sessions (id, workspace_id, created_at, updated_at) VALUES ('s', 1, 0, 0);
             INSERT INTO messages (id, session_id, source, text, status, queue_pos, admitted_at)
                 VALUES (1, 's', 'user', 'hi', 'done', 1, 0);
             INSERT INTO turns (id, session_id, message_id, status, started_at)
                 VALUES (1, 's', 1, 'parked', 0);",
        )
        .unwrap();
        let bad = format!("{REBUILDS}\nDELETE FROM messages;");
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        let e = apply(&mut conn, 99, &bad, true).unwrap_err().to_string();
        assert!(e.contains("turns") && e.contains("99"), "{e}");
        let left: i64 = conn
            .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 1, "the refused rebuild changed the database");
    }

    /// A rebuild keeps the indexes and triggers others made on the table (an extension's).
    #[test]
    fn a_rebuild_keeps_the_indexes_others_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        drop(Store::open(&path).unwrap());
        let mut conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE INDEX by_text ON messages (text);")
            .unwrap();
        // The rebuild of 0010 once more, as a later version.
        apply(&mut conn, SCHEMA_VERSION + 1, MIGRATIONS[9], true).unwrap();
        let kept: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('by_text', 'messages_queue')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kept, 2);
    }

    /// A migration another process applied since the version was read is not run again
    /// (two processes opening an old database at once).
    #[test]
    fn a_migration_applied_meanwhile_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let store = Store::open(&path).unwrap();
        let mut conn = Connection::open(&path).unwrap();
        // 0009 adds a column: run twice, it would fail.
        apply(&mut conn, 9, MIGRATIONS[8], false).unwrap();
        drop(store);
    }

    #[test]
    fn migrations_apply_once_and_record_the_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        drop(Store::open(&path).unwrap());
        let store = Store::open(&path).unwrap();
        let v: i64 = store
            .read(|c| {
                Ok::<_, crate::StoreError>(c.query_row(
                    "SELECT MAX(version) FROM schema_version",
                    [],
                    |r| r.get(0),
                )?)
            })
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        let rows: i64 = store
            .read(|c| {
                Ok::<_, crate::StoreError>(c.query_row(
                    "SELECT COUNT(*) FROM schema_version",
                    [],
                    |r| r.get(0),
                )?)
            })
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
            Err(Error::Corrupt("no".into()))
        });
        assert!(r.is_err());
        assert_eq!(store.read(|c| events::last_seq(c, &sid)).unwrap(), before);
    }
}

#[cfg(test)]
mod pool_tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A view runs while another thread is in the middle of a write transaction: it does
    /// not wait for it, and it sees what was committed before.
    #[test]
    fn a_view_does_not_wait_for_a_write_in_progress() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&dir.path().join("w.db")).unwrap());
        store.use_read_pool();
        store
            .write(1, |tx| {
                tx.conn()
                    .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")?;
                Ok::<_, crate::StoreError>(())
            })
            .unwrap();
        let (in_write, writing) = mpsc::channel();
        let (viewed, view_done) = mpsc::channel::<i64>();
        let writer = {
            let store = store.clone();
            std::thread::spawn(move || {
                store.write(2, |tx| {
                    tx.conn().execute("INSERT INTO t VALUES (2)", [])?;
                    in_write.send(()).unwrap();
                    // The write stays open until the view has answered (or gives up).
                    let seen = view_done.recv_timeout(Duration::from_secs(10));
                    assert!(seen.is_ok(), "the view waited for the write");
                    Ok::<_, crate::StoreError>(())
                })
            })
        };
        writing.recv().unwrap();
        let n: i64 = store
            .view(|c| {
                Ok::<_, crate::StoreError>(c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))?)
            })
            .unwrap();
        viewed.send(n).unwrap();
        writer.join().unwrap().unwrap();
        assert_eq!(n, 1, "the view sees committed rows only");
        let n: i64 = store
            .view(|c| {
                Ok::<_, crate::StoreError>(c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))?)
            })
            .unwrap();
        assert_eq!(n, 2);
        // A view cannot write.
        let e = store.view(|c| Ok::<_, crate::StoreError>(c.execute("DELETE FROM t", [])?));
        assert!(e.is_err());
    }

    /// On the desktop's multi-threaded runtime a long database call does not stall the
    /// other tasks of the worker it started on.
    #[test]
    fn blocking_work_leaves_the_executor_free() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let slow = tokio::spawn(async move {
                blocking(|| {
                    // Holds the thread until the other task has run.
                    let _ = rx.blocking_recv();
                })
            });
            let other = tokio::spawn(async move {
                let _ = tx.send(());
            });
            tokio::time::timeout(Duration::from_secs(10), async {
                other.await.unwrap();
                slow.await.unwrap();
            })
            .await
            .expect("the other task never ran: the worker was blocked");
        });
    }
}

#[cfg(test)]
mod extension_schema_tests {
    use super::*;

    #[test]
    fn fresh_databases_get_extension_tables_once_and_newer_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let store = Store::open(&path).unwrap();
        let m: &[&str] = &["CREATE TABLE t1 (x);", "CREATE TABLE t2 (x);"];
        store.migrate_extension("x", &m[..1]).unwrap();
        store.migrate_extension("x", m).unwrap();
        // Applied again: nothing runs twice (CREATE TABLE would fail).
        store.migrate_extension("x", m).unwrap();
        let e = store
            .migrate_extension("x", &m[..1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`x` extension") && e.contains("newer"), "{e}");
        // A broken migration names its extension and leaves the version alone.
        let e = store
            .migrate_extension("y", &["CREATE TABLE y (x);", "NOT SQL"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("extension `y`"), "{e}");
        let v: i64 = store
            .read(|c| {
                Ok::<_, crate::StoreError>(c.query_row(
                    "SELECT version FROM extension_schema WHERE name = 'y'",
                    [],
                    |r| r.get(0),
                )?)
            })
            .unwrap();
        assert_eq!(v, 1);
    }
}

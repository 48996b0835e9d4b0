//! Errors of the store: the database, its schema and the rows it keeps. Each has a stable
//! code once it reaches the runtime's error (which wraps every variant one for one).

/// The store's result.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Db(#[from] rusqlite::Error),
    #[error(
        "the database at {path} was written by a newer Waymark (schema version {found}, this build knows up to {supported}); upgrade Waymark or use another --data-dir"
    )]
    DatabaseTooNew {
        path: String,
        found: i64,
        supported: i64,
    },
    #[error("migration {version} failed: {message}")]
    Migration { version: i64, message: String },
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "session {id} is driven by another process (pid {pid}); wait for it to finish or stop it"
    )]
    SessionBusy { id: String, pid: i64 },
    #[error("no session with id `{0}`")]
    SessionNotFound(String),
    #[error("no pending questionnaire `{0}` in this session")]
    QuestionnaireNotFound(String),
    #[error("questionnaire `{id}` was already answered ({status})")]
    QuestionnaireClosed { id: String, status: String },
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    #[error(
        "session {id} was taken over by another process (pid {pid}); this one stopped writing to it"
    )]
    LeaseLost { id: String, pid: i64 },
}

impl StoreError {
    /// Stable machine-readable code (the runtime's error reports the same).
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Db(_) => "database",
            StoreError::DatabaseTooNew { .. } => "database_too_new",
            StoreError::Migration { .. } => "migration_failed",
            StoreError::Io { .. } => "io",
            StoreError::SessionBusy { .. } => "session_busy",
            StoreError::SessionNotFound(_) => "session_not_found",
            StoreError::QuestionnaireNotFound(_) => "questionnaire_not_found",
            StoreError::QuestionnaireClosed { .. } => "questionnaire_closed",
            StoreError::Corrupt(_) => "corrupt_data",
            StoreError::LeaseLost { .. } => "lease_lost",
        }
    }

    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

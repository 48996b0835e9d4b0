//! Errors of the runtime, by layer. Every variant maps to a stable `code` for the CLI and IPC.

use waymark_config::ConfigError;
use waymark_protocol::ErrorInfo;
use waymark_provider::ProviderError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error of the runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What only the store reports: the database, its schema, a session another process
    /// drives, a questionnaire already answered (the store's own code and message).
    #[error(transparent)]
    Store(waymark_store::StoreError),
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("settings file {path}: {source}")]
    InvalidSettings {
        path: String,
        #[source]
        source: ConfigError,
    },
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no session with id `{0}`")]
    SessionNotFound(String),
    #[error("no pending questionnaire `{0}` in this session")]
    QuestionnaireNotFound(String),
    #[error("`{answer}` is not an answer to a {kind} questionnaire; use one of: {allowed}")]
    InvalidAnswer {
        answer: String,
        kind: String,
        allowed: String,
    },
    #[error("{0}")]
    UnknownCommand(String),
    /// Refused, for the reason `message` gives; `code` is stable, for front ends to branch
    /// on (`refused` when no more specific one applies).
    #[error("{message}")]
    Refused { code: &'static str, message: String },
    /// Done only on the user's explicit yes (the session's permission mode asks): said why,
    /// and the same request with the confirmation goes through.
    #[error("{0}")]
    NeedsConfirmation(String),
    /// A feature whose setting is off.
    #[error("{message}")]
    FeatureOff {
        /// The settings key that turns it on (`beta.thread_goal`).
        setting: &'static str,
        message: String,
    },
    #[error("invalid model spec `{spec}`: {message}")]
    ModelSpec { spec: String, message: String },
    #[error("{0}")]
    Provider(#[from] ProviderError),
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// A cost budget on a model that has no price: its cost could not be counted.
    #[error(
        "the model `{0}` has no price, so a cost budget cannot be counted: add it to the `pricing` setting (for example \"pricing\": {{\"{0}\": {{\"input_per_mtok\": 3, \"output_per_mtok\": 15}}}}, USD per million tokens)"
    )]
    Unpriced(String),
    /// A worktree operation that could not be done, with its own code (`merge_conflict`,
    /// `target_dirty`, `not_a_repository`, …).
    #[error("{message}")]
    Worktree { code: &'static str, message: String },
    /// A turn is running or waits on a question: what was asked needs the session idle.
    #[error("{0}")]
    Busy(String),
    #[error(
        "no checkpoint `{0}` in this session: list them with `waymark checkpoints --session <id>` or /rewind"
    )]
    CheckpointNotFound(String),
    /// The checkpoint store could not do what was asked (damaged, missing, a path in the way).
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    #[error("the session has shut down")]
    SessionClosed,
    #[error(
        "session {id} was taken over by another process (pid {pid}); this one stopped writing to it"
    )]
    LeaseLost { id: String, pid: i64 },
}

impl Error {
    /// Stable machine-readable code.
    /// Refused, with the general code `refused`.
    pub fn refused(message: String) -> Error {
        Error::refused_as("refused", message)
    }

    /// Refused, with a code of its own that front ends can branch on.
    pub fn refused_as(code: &'static str, message: String) -> Error {
        Error::Refused { code, message }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Error::Store(e) => e.code(),
            Error::Config(_) | Error::InvalidSettings { .. } => "invalid_settings",
            Error::Io { .. } => "io",
            Error::SessionNotFound(_) => "session_not_found",
            Error::QuestionnaireNotFound(_) => "questionnaire_not_found",
            Error::InvalidAnswer { .. } => "invalid_answer",
            Error::UnknownCommand(_) => "unknown_command",
            Error::Refused { code, .. } => code,
            Error::NeedsConfirmation(_) => "needs_confirmation",
            Error::FeatureOff { .. } => "feature_off",
            Error::ModelSpec { .. } => "invalid_model_spec",
            Error::Provider(e) => e.kind.code(),
            Error::Corrupt(_) => "corrupt_data",
            Error::Busy(_) => "turn_running",
            Error::Unpriced(_) => "unpriced_model",
            Error::Worktree { code, .. } => code,
            Error::CheckpointNotFound(_) => "checkpoint_not_found",
            Error::Checkpoint(_) => "checkpoint_failed",
            Error::SessionClosed => "session_closed",
            Error::LeaseLost { .. } => "lease_lost",
        }
    }

    /// The settings key the error is about, when there is one (a feature turned off, an
    /// invalid setting), so front ends can point at it without reading the message.
    pub fn setting(&self) -> Option<&str> {
        match self {
            Error::FeatureOff { setting, .. } => Some(setting),
            Error::Unpriced(_) => Some("pricing"),
            Error::Config(e) | Error::InvalidSettings { source: e, .. } => Some(&e.key),
            _ => None,
        }
    }

    /// The `{code, message, setting}` form used at the CLI and IPC boundaries.
    pub fn info(&self) -> ErrorInfo {
        let mut info = ErrorInfo::new(self.code(), self.to_string());
        info.setting = self.setting().map(str::to_string);
        info
    }

    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

impl From<waymark_protocol::WrongAnswer> for Error {
    fn from(e: waymark_protocol::WrongAnswer) -> Self {
        Error::InvalidAnswer {
            answer: e.answer,
            kind: e.kind,
            allowed: e.allowed,
        }
    }
}

impl From<waymark_provider::SpecError> for Error {
    fn from(e: waymark_provider::SpecError) -> Self {
        match e {
            waymark_provider::SpecError::Invalid { spec, message } => {
                Error::ModelSpec { spec, message }
            }
            waymark_provider::SpecError::Provider(p) => Error::Provider(p),
        }
    }
}

impl From<waymark_store::StoreError> for Error {
    fn from(e: waymark_store::StoreError) -> Self {
        use waymark_store::StoreError as S;
        // The ones the runtime reports of its own too keep one variant for both.
        match e {
            S::Io { path, source } => Error::Io { path, source },
            S::SessionNotFound(id) => Error::SessionNotFound(id),
            S::QuestionnaireNotFound(id) => Error::QuestionnaireNotFound(id),
            S::Corrupt(m) => Error::Corrupt(m),
            S::LeaseLost { id, pid } => Error::LeaseLost { id, pid },
            other => Error::Store(other),
        }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Store(waymark_store::StoreError::Db(e))
    }
}

impl From<Error> for ErrorInfo {
    fn from(e: Error) -> Self {
        e.info()
    }
}

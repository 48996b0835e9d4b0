//! One open session: a tokio actor that owns it while this process holds its lease. Ops come
//! in through [`SessionHandle::submit`]; events go out on a broadcast channel after the
//! transaction that wrote them commits. Admission, answers, Stop and the run loop live here;
//! the turn itself is in `turn/`, answering questionnaires in `session/answer.rs`.

mod admit;
mod answer;
mod close;
mod history;
mod host;
pub(crate) mod parts;
mod rewind;
mod tools;
pub(crate) use tools::{FixedTools, FoundTool, ToolList};

mod actor;
mod expand;
mod handle;
mod prompt;
mod session_core;

pub(crate) use actor::spawn;
pub use handle::SessionHandle;
pub(crate) use session_core::{SessionCore, changed};

use std::path::PathBuf;
use waymark_protocol::PermissionMode;

/// How to create or reopen a session.
#[derive(Debug, Clone, Default)]
pub struct SessionSpec {
    /// Workspace of a new session (defaults to the current directory).
    pub workspace: Option<PathBuf>,
    /// Model spec; on reopen it replaces the stored one.
    pub model: Option<String>,
    /// Permission mode; on reopen it replaces the stored one.
    pub permission_mode: Option<PermissionMode>,
    /// Start no work until an `Op::Resume` arrives (to record an answer without running).
    pub hold: bool,
}

/// What an op did.
#[derive(Debug, Clone, PartialEq)]
pub enum OpOutcome {
    /// A message entered the queue (or the same idempotency key found it there).
    Admitted {
        message_id: i64,
        created: bool,
    },
    /// A slash command ran; its output.
    Command {
        output: String,
    },
    Answered,
    Done,
}

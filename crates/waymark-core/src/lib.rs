//! The Waymark runtime: sessions driven as a queue pair (ops in, events out), admission and
//! queue, the turn engine with its `before_tool_call` guard chain, tools, model providers and
//! the SQLite store. Front ends (the CLI, the desktop app) hold no business logic.

pub mod commands;
pub mod compaction;
pub mod context;
pub mod instructions;
pub mod logging;
pub mod permission;
mod preview;
pub mod runtime;
pub mod session;
pub mod settings;
mod turn;
mod views;

pub mod builtin;

pub use waymark_extension as extension;
pub use waymark_extension::{clock, error, guard, paths};
pub use waymark_goal as goal;
pub use waymark_plan as plan;
pub use waymark_protocol::{display, secrets};
pub use waymark_provider as provider;
pub use waymark_sandbox as sandbox;
pub use waymark_store as store;
pub use waymark_tools as tools;

pub use clock::{Clock, IdSource, ManualClock, RandomIds, SystemClock};
pub use error::{Error, Result};
pub use runtime::{Runtime, RuntimeOptions};
pub use session::{SessionHandle, SessionSpec};
pub use store::{HistoryItem, MessageRow, QuestionnaireRow, SessionRow, ToolCallRecord, TurnRow};

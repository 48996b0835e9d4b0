//! The Waymark runtime: the engine assembled with the built-in extensions (plan mode, thread
//! goals), the settings, model resolution and the store, and the views both front ends show.
//! Front ends (the CLI, the desktop app) hold no business logic: they call this crate.

pub mod builtin;
pub mod client;
mod forms;
mod handoff;
pub mod logging;
pub mod mcp_settings;
pub mod runtime;
mod sections;
pub mod settings;
pub mod setup;
pub(crate) mod views;

pub use waymark_agents as agents;
pub use waymark_checkpoint as checkpoint;
pub use waymark_engine::{
    Clock, IdSource, ManualClock, RandomIds, SystemClock, clock, commands, compaction, context,
    display, error, extension, guard, instructions, paths, permission, provider, sandbox, secrets,
    session, store, tools,
};
pub use waymark_engine::{Error, Result, SessionHandle, SessionSpec};
pub use waymark_engine::{
    HistoryItem, MessageRow, QuestionnaireRow, SessionRow, ToolCallRecord, TurnRow,
};
pub use waymark_goal as goal;
pub use waymark_hooks as hooks;
pub use waymark_mcp::listing::describe as describe_mcp_servers;
pub use waymark_plan as plan;
pub use waymark_web as web;
pub use waymark_worktree as worktree;

pub use runtime::{Runtime, RuntimeOptions};

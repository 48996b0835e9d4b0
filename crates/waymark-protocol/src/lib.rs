//! Wire types of the Waymark runtime: what a front end asks ([`Op`]), what the runtime
//! reports ([`Event`]), the DTOs both carry and the settings ([`config::Config`]).
//! No I/O lives here; the desktop app and the CLI depend on these types alone. Beside them,
//! the two pure text services every layer shares: escaping for display ([`display`]) and
//! knowing and redacting secrets ([`secrets`]).

pub mod checkpoint;
pub mod config;
pub mod cost;
pub mod display;
mod event;
pub mod form;
mod goal;
pub mod goal_syntax;
mod history;
pub mod links;
pub mod mcp;
pub mod mcp_view;
mod op;
mod question;
pub mod secrets;
pub mod setup;
mod types;
mod views;
pub mod wire;
pub mod worktree;

pub use event::{Event, EventKind, ToolCallSummary};
pub use goal::{
    BudgetChange, BudgetLine, BudgetReport, CheckResult, GoalActor, GoalCheckState, GoalDraft,
    GoalOp, GoalReason, GoalSnapshot, GoalStatus, GoalStep, GoalUpdateKind, GoalWait, Limit,
    QueuedGoal, UsageLimit, WaitCheck,
};
pub use history::{
    HistoryItem, IMAGE_TYPES, MAX_IMAGE_BASE64, MAX_IMAGES, ToolCallRecord, ToolImage,
};
pub use op::{Answer, AnswerParseError, Intent, LineComment, Op, Position};
pub use question::*;
pub use types::*;
pub use views::*;

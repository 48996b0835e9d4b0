//! Wire types of the Waymark runtime: what a front end asks ([`Op`]), what the runtime
//! reports ([`Event`]) and the DTOs both carry. No I/O lives here. Beside them, the pure text
//! service every layer shares: escaping for display ([`display`]). The settings live in
//! `waymark-config`.

mod answer;
pub mod checkpoint;
pub mod cost;
pub mod display;
mod event;
pub mod form;
mod goal;
mod history;
pub mod links;
pub mod mcp_view;
mod op;
mod question;
mod types;
mod views;
pub mod wire;
pub mod worktree;

pub use answer::{Answer, AnswerParseError, LineComment};
pub use event::{Event, EventKind, SubagentCall, ToolCallSummary};
pub use goal::{
    BudgetChange, BudgetLine, BudgetReport, CheckResult, GoalActor, GoalCheckState, GoalDraft,
    GoalOp, GoalReason, GoalSnapshot, GoalStatus, GoalStep, GoalUpdateKind, GoalWait, Limit,
    QueuedGoal, UsageLimit, WaitCheck,
};
pub use history::{
    HistoryItem, IMAGE_TYPES, MAX_ATTACHED_IMAGE_BYTES, MAX_IMAGE_BASE64, MAX_IMAGES,
    ToolCallRecord, ToolImage,
};
pub use op::{ImageInput, Intent, Op, Position};
pub use question::*;
pub use types::*;
pub use views::*;
